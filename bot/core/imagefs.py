"""What a consuming image holds, as far as checking a wheel against it needs (docs/design.md
§1, step 5): its installed Python distributions, its shared libraries and the loader's
search folders, and its ROCm version. Pure: `adapters/layerstream.py` reads one layer into
a `LayerSummary`, cached by the layer's digest (layers never change); `merge` applies the
summaries in layer order, with whiteouts, into one `ImageFiles`.

Whiteouts as the OCI image spec defines them ("Representing Changes", layer.md): a file
`.wh.NAME` deletes NAME (and all under it) from the layers below; `.wh..wh..opq` in a
folder hides everything the layers below put in that folder. Paths are kept relative to
the root, without a leading `./` or `/`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
# a dist-info's METADATA in a site folder: …/pythonX.Y/site-packages, …/python3/dist-packages
SITE = re.compile(r"^(?P<site>(?:.*/)?(?:python(?P<version>[23](?:\.\d+)?))/(?:site|dist)-packages)/"
                  r"(?P<dist>[^/]+)\.dist-info/METADATA$")
LIBRARY = re.compile(r"^(?:.*/)?lib[^/]*\.so(?:\.[0-9][^/]*)?$")
LDCONF = re.compile(r"^etc/ld\.so\.conf(?:\.d/[^/]+\.conf)?$")
ROCM_VERSION = re.compile(r"^opt/rocm[^/]*/\.info/version$")
PYTHON = re.compile(r"^(?:.*/)?bin/python(?P<version>3\.\d+)$")
DEFAULT_LIBRARY_FOLDERS = ("lib", "usr/lib", "lib64", "usr/lib64", "lib/x86_64-linux-gnu",
                           "usr/lib/x86_64-linux-gnu")


def normalize(name: str) -> str:
    """A tar member's name as a path from the root: `./usr/lib/` is `usr/lib`."""
    return posixpath.normpath("/" + name).lstrip("/") if name.strip("./") else ""


@dataclass
class LayerSummary:
    """What one layer adds and deletes, of what the checks need. JSON for the cache."""

    dists: dict[str, dict[str, Any]] = field(default_factory=dict)  # METADATA path → name, version, requires
    libraries: dict[str, str] = field(default_factory=dict)  # library path → symlink target ("" for a file)
    texts: dict[str, str] = field(default_factory=dict)  # ld.so.conf files, ROCm's .info/version
    pythons: list[str] = field(default_factory=list)  # bin/python3.X paths
    whiteouts: list[str] = field(default_factory=list)  # paths deleted from the layers below
    opaque: list[str] = field(default_factory=list)  # folders whose lower content is hidden
    members: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"dists": self.dists, "libraries": self.libraries, "texts": self.texts, "pythons": self.pythons,
                "whiteouts": self.whiteouts, "opaque": self.opaque, "members": self.members}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LayerSummary:
        return cls(dict(data["dists"]), dict(data["libraries"]), dict(data["texts"]), list(data["pythons"]),
                   list(data["whiteouts"]), list(data["opaque"]), int(data["members"]))

    def note_whiteout(self, path: str) -> bool:
        """Record `path` if it is a whiteout; True when it was one (it is no file then)."""
        folder, name = posixpath.split(path)
        if name == OPAQUE:
            self.opaque.append(folder)
            return True
        if name.startswith(WHITEOUT):
            self.whiteouts.append(posixpath.join(folder, name[len(WHITEOUT):]))
            return True
        return False


def _under(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    requires: tuple[str, ...]
    site: str  # the site folder it is installed in


@dataclass(frozen=True)
class ImageFiles:
    """The merged view of an image's layers."""

    dists: tuple[Installed, ...]
    libraries: dict[str, str]  # path → symlink target ("" for a file)
    texts: dict[str, str]
    pythons: tuple[str, ...]
    env: dict[str, str]  # the image config's Env
    members: int = 0

    @property
    def python_version(self) -> str | None:
        """The Python the image runs: that of the site folder holding the most
        distributions (`python3.12`), else the newest `bin/python3.X`."""
        counts: dict[str, int] = {}
        for dist in self.dists:
            match = re.search(r"python(3\.\d+)/", dist.site + "/")
            if match:
                counts[match.group(1)] = counts.get(match.group(1), 0) + 1
        if counts:
            return max(counts, key=lambda version: (counts[version], _key(version)))
        versions = [m.group("version") for p in self.pythons if (m := PYTHON.match(p))]
        return max(versions, key=_key) if versions else None

    @property
    def main_site(self) -> str | None:
        counts: dict[str, int] = {}
        for dist in self.dists:
            counts[dist.site] = counts.get(dist.site, 0) + 1
        return max(sorted(counts), key=lambda site: counts[site]) if counts else None

    def installed(self) -> dict[str, Installed]:
        """One distribution per name: where a name is installed twice, the main site's."""
        main = self.main_site
        chosen: dict[str, Installed] = {}
        for dist in sorted(self.dists, key=lambda d: (d.site == main, d.site)):
            chosen[canonicalize_name(dist.name)] = dist
        return chosen

    def library_folders(self) -> list[str]:
        """Where the loader looks: `LD_LIBRARY_PATH` of the image config, the folders of
        ld.so.conf (and the files it includes), then the default folders."""
        folders = [normalize(p) for p in self.env.get("LD_LIBRARY_PATH", "").split(":") if p.strip()]
        for path in sorted(p for p in self.texts if LDCONF.match(p)):
            for line in self.texts[path].splitlines():
                line = line.split("#", 1)[0].strip()
                if line and not line.startswith("include"):
                    folders.append(normalize(line))
        folders += DEFAULT_LIBRARY_FOLDERS
        return list(dict.fromkeys(f for f in folders if f))

    def rocm_version(self) -> str | None:
        for path in sorted(self.texts):
            if ROCM_VERSION.match(path) and self.texts[path].strip():
                return self.texts[path].strip().splitlines()[0][:64]
        for dist in self.dists:
            if canonicalize_name(dist.name) in ("rocm-core", "rocm-sdk-core", "rocm"):
                return dist.version
        return None


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def merge(layers: Sequence[LayerSummary], env: Mapping[str, str]) -> ImageFiles:
    """The layers applied in order: each one's whiteouts and opaque folders first remove
    what the layers below put there, then its own entries are added (a later layer's
    file replaces an earlier one's)."""
    dists: dict[str, dict[str, Any]] = {}
    libraries: dict[str, str] = {}
    texts: dict[str, str] = {}
    pythons: dict[str, None] = {}
    members = 0
    for layer in layers:
        gone = [*layer.opaque, *layer.whiteouts]
        if gone:
            for table in (dists, libraries, texts, pythons):
                for path in [p for p in table if any(_under(p, folder) for folder in gone)]:
                    del table[path]
        dists.update(layer.dists)
        libraries.update(layer.libraries)
        texts.update(layer.texts)
        pythons.update(dict.fromkeys(layer.pythons))
        members += layer.members
    installed = tuple(Installed(str(d["name"]), str(d["version"]), tuple(d["requires"]), _site(path))
                      for path, d in sorted(dists.items()))
    return ImageFiles(installed, libraries, texts, tuple(pythons), dict(env), members)


def _site(metadata: str) -> str:
    match = SITE.match(metadata)
    return match.group("site") if match else posixpath.dirname(posixpath.dirname(metadata))


def env_of(config: Mapping[str, Any]) -> dict[str, str]:
    """The `Env` of an image config (`KEY=value` lines), as a mapping."""
    lines = (config.get("config") or {}).get("Env") or []
    return dict(line.split("=", 1) for line in lines if isinstance(line, str) and "=" in line)


def resolve_folder(folder: str, origin: str) -> str:
    """A RUNPATH folder as installed: `$ORIGIN` (or `${ORIGIN}`) is the ELF file's folder."""
    text = folder.replace("${ORIGIN}", "$ORIGIN")
    if "$ORIGIN" in text:
        text = text.replace("$ORIGIN", "/" + origin)
    return normalize(text)


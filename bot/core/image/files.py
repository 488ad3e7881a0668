"""What a consuming image holds, as far as checking a wheel against it needs (docs/design.md
§1, step 5): its installed Python distributions (and the shared objects their RECORD
lists), its shared objects and the symlinks that may be folders, the loader's
configuration, and its ROCm version. Pure: `adapters/layerstream.py` reads one layer into
a `LayerSummary`, cached by the layer's digest (layers never change); `merge` applies the
summaries in layer order, with whiteouts, into one `ImageFiles`; `core/image/ldso.py` searches
it as the loader would.

Whiteouts as the OCI image spec defines them ("Representing Changes", layer.md): a file
`.wh.NAME` deletes NAME (and all under it) from the layers below; `.wh..wh..opq` in a
folder hides everything the layers below put in that folder. Paths are kept relative to
the root, without a leading `./` or `/`.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from .ldso import DEFAULT_FOLDERS, conf_folders, normalize

FORMAT = 2  # of a LayerSummary's JSON: a summary cached in another format is read again from its layer
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
# a dist-info's METADATA in a site folder: …/pythonX.Y/site-packages, …/python3/dist-packages
_DIST_INFO = (
    r"^(?P<site>(?:.*/)?(?:python(?P<version>[23](?:\.\d+)?))/(?:site|dist)-packages)/(?P<dist>[^/]+)\.dist-info/"
)
SITE = re.compile(_DIST_INFO + "METADATA$")
RECORD = re.compile(_DIST_INFO + "RECORD$")  # …/RECORD: the files the distribution installed
# any shared object, whatever its prefix: ld-linux-x86-64.so.2 is one, and so is libc10.so
LIBRARY = re.compile(r"^(?:.*/)?[^/]+\.so(?:\.[0-9][^/]*)?$")
LDCONF = re.compile(r"^etc/ld\.so\.conf(?:\.d/.+)?$")  # what an include there may name
ROCM_VERSION = re.compile(r"^opt/rocm[^/]*/\.info/version$")
PYTHON = re.compile(r"^(?:.*/)?bin/python(?P<version>3\.\d+)$")
# a symlink to one of these is to a file, not a folder the loader's search could go through
_FILE_SUFFIX = re.compile(
    r"\.(?:[ch](?:c|h|pp|xx)?|cu|cuh|hip|inc|inl|py[cdi]?|pxd|txt|md|rst|html?|css|js|json|xml|"
    r"ya?ml|toml|cfg|conf|ini|cmake|pc|[gx]z|bz2|zst|tgz|zip|png|svg|jpe?g|gif|ico|ttf|otf|"
    r"woff2?|pem|crt|key|pub|sh|bash|pl|pm|rb|a|o|mo|po|service|socket|timer|target|"
    r"desktop|list|bin|dat|db|hsaco|co|bc|ll|kdb)$",
    re.IGNORECASE,
)


def may_be_folder(path: str, target: str) -> bool:
    """Whether a symlink that names no shared object could be a folder: a loader's search
    may go through it (`opt/rocm` → `rocm-7.2.4`, `lib64` → `usr/lib64`). One whose name
    or target ends like a file's (`.h`, `.py`, `.gz`…) cannot, and is not kept."""
    return not (
        _FILE_SUFFIX.search(posixpath.basename(path))
        or _FILE_SUFFIX.search(posixpath.basename(target))
        or target in ("/dev/null", "../dev/null")
    )


@dataclass
class LayerSummary:
    """What one layer adds and deletes, of what the checks need. JSON for the cache."""

    dists: dict[str, dict[str, Any]] = field(default_factory=dict)  # METADATA path → name, version, requires
    libraries: dict[str, str] = field(default_factory=dict)  # shared object path → symlink target ("" for a file)
    texts: dict[str, str] = field(default_factory=dict)  # ld.so.conf files, ROCm's .info/version
    pythons: list[str] = field(default_factory=list)  # bin/python3.X paths
    whiteouts: list[str] = field(default_factory=list)  # paths deleted from the layers below
    opaque: list[str] = field(default_factory=list)  # folders whose lower content is hidden
    members: int = 0
    links: dict[str, str] = field(default_factory=dict)  # other symlinks that may be folders: path → target
    records: dict[str, list[str]] = field(default_factory=dict)  # RECORD path → the shared objects it lists

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "dists": self.dists,
            "libraries": self.libraries,
            "texts": self.texts,
            "pythons": self.pythons,
            "whiteouts": self.whiteouts,
            "opaque": self.opaque,
            "members": self.members,
            "links": self.links,
            "records": self.records,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LayerSummary:
        """ValueError for a summary of another format (an older wheelpin's lacks the links
        and RECORDs, and kept only `lib*` names): it is read again, never trusted."""
        if data.get("format") != FORMAT:
            raise ValueError(f"a layer summary of format {data.get('format')!r}, not {FORMAT}")
        return cls(
            dict(data["dists"]),
            dict(data["libraries"]),
            dict(data["texts"]),
            list(data["pythons"]),
            list(data["whiteouts"]),
            list(data["opaque"]),
            int(data["members"]),
            dict(data["links"]),
            {path: list(found) for path, found in data["records"].items()},
        )

    def weight(self) -> tuple[int, int]:
        """What the summary keeps: its entries (paths, requirements, RECORD lines) and their
        bytes, as `adapters/layerstream.py` counts them while it reads a layer."""
        entries, size = 0, 0
        for path, dist in self.dists.items():
            entries += 1 + len(dist["requires"])
            size += len(path) + len(dist["name"]) + len(dist["version"]) + sum(map(len, dist["requires"]))
        for table in (self.libraries, self.texts, self.links):
            entries += len(table)
            size += sum(len(path) + len(value) for path, value in table.items())
        for found in self.records.values():
            entries += 1 + len(found)
            size += sum(map(len, found))
        size += sum(map(len, self.records))
        for paths in (self.pythons, self.whiteouts, self.opaque):
            entries += len(paths)
            size += sum(map(len, paths))
        return entries, size

    def note_whiteout(self, path: str) -> str | None:
        """Record `path` if it is a whiteout: the path it deletes (or the folder it makes
        opaque), None when it is no whiteout."""
        folder, name = posixpath.split(path)
        if name == OPAQUE:
            self.opaque.append(folder)
            return folder
        if name.startswith(WHITEOUT):
            self.whiteouts.append(posixpath.join(folder, name[len(WHITEOUT) :]))
            return self.whiteouts[-1]
        return None


class Hidden:
    """Paths deleted by one layer's whiteouts and opaque folders, each with all under it,
    asked about in time near-linear in the paths (asked ancestor by ancestor, a layer of
    tens of thousands of whiteouts over as many deep paths would take quadratic time).

    The paths are kept sorted with `/` as the lowest character (NUL): then everything
    under a folder sorts right after it, and once the paths under another are dropped, the
    only one that can hold a path is the greatest that is not after it (found by bisection)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.everything = "" in paths  # an opaque root
        kept: list[str] = []
        for key in sorted({_sort_key(path) for path in paths if path}):
            if not (kept and _holds(kept[-1], key)):
                kept.append(key)
        self._keys = kept

    def __contains__(self, path: str) -> bool:
        if self.everything:
            return True
        key = _sort_key(path)
        at = bisect.bisect_right(self._keys, key)
        return at > 0 and _holds(self._keys[at - 1], key)

    def __bool__(self) -> bool:
        return self.everything or bool(self._keys)


def _sort_key(path: str) -> str:
    return path.replace("/", "\0")


def _holds(folder: str, key: str) -> bool:
    return key == folder or key.startswith(folder + "\0")


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    requires: tuple[str, ...]
    site: str  # the site folder it is installed in
    libraries: tuple[str, ...] = ()  # the shared objects its RECORD lists, paths from the root


@dataclass(frozen=True)
class ImageFiles:
    """The merged view of an image's layers."""

    dists: tuple[Installed, ...]
    libraries: dict[str, str]  # path → symlink target ("" for a file)
    texts: dict[str, str]
    pythons: tuple[str, ...]
    env: dict[str, str]  # the image config's Env
    members: int = 0
    links: dict[str, str] = field(default_factory=dict)  # symlinks that may be folders: path → target

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
        """Where the loader looks for any object (DT_RPATH and DT_RUNPATH aside):
        `LD_LIBRARY_PATH` of the image config, the folders of ld.so.conf (and the files it
        includes), then the default folders."""
        folders = [normalize(p) for p in self.env.get("LD_LIBRARY_PATH", "").split(":") if p.strip() and "$" not in p]
        return list(dict.fromkeys(f for f in [*folders, *conf_folders(self.texts), *DEFAULT_FOLDERS] if f))

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
    links: dict[str, str] = {}
    records: dict[str, list[str]] = {}
    members = 0
    for layer in layers:
        gone = Hidden([*layer.opaque, *layer.whiteouts])
        if gone:
            tables: tuple[dict[str, Any], ...] = (dists, libraries, texts, pythons, links, records)
            for table in tables:
                for path in [p for p in table if p in gone]:
                    del table[path]
        dists.update(layer.dists)
        libraries.update(layer.libraries)
        texts.update(layer.texts)
        pythons.update(dict.fromkeys(layer.pythons))
        links.update(layer.links)
        records.update(layer.records)
        members += layer.members
    installed = tuple(
        Installed(
            str(d["name"]),
            str(d["version"]),
            tuple(d["requires"]),
            _site(path),
            tuple(records.get(posixpath.join(posixpath.dirname(path), "RECORD"), ())),
        )
        for path, d in sorted(dists.items())
    )
    return ImageFiles(installed, libraries, texts, tuple(pythons), dict(env), members, links)


def _site(metadata: str) -> str:
    match = SITE.match(metadata)
    return match.group("site") if match else posixpath.dirname(posixpath.dirname(metadata))


def env_of(config: Mapping[str, Any]) -> dict[str, str]:
    """The `Env` of an image config (`KEY=value` lines), as a mapping."""
    lines = (config.get("config") or {}).get("Env") or []
    return dict(line.split("=", 1) for line in lines if isinstance(line, str) and "=" in line)

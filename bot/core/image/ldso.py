"""The dynamic loader's rules, applied to an image's files rather than a running system
(docs/design.md §1, step 5): where glibc's ld.so looks for a DT_NEEDED name, and how a
path through the image's symlinks ends. Pure: `core/image/consumer.py` gives it the merged view
of the layers (`core/image/files.py`) and the wheel's ELF facts (`core/wheel/elf.py`).

The facts are those of ld.so(8) and ldconfig(8):

- a name with a slash is a path, opened as it is;
- else, in order: DT_RPATH (only when the object has no DT_RUNPATH), `LD_LIBRARY_PATH`,
  DT_RUNPATH, the cache ldconfig built from /etc/ld.so.conf (its `include` lines are glob
  patterns, a relative one taken from the including file's folder), then the default
  folders: /lib, /usr/lib, and on x86_64 /lib64, /usr/lib64 and the multiarch folders;
- `$ORIGIN` in a search folder is the folder of the object that asks;
- a symlink is followed wherever it is in a path, at most `MAXSYMLINKS` times (Linux's
  bound, past which open() fails with ELOOP); an absolute target starts again at the
  image's root, and `..` never climbs above it (as at the real root).
Not modelled: the hwcaps subfolders (glibc-hwcaps/x86-64-v3…, searched before each folder
for CPUs that have them), `$LIB` and `$PLATFORM` (their values depend on the build of
glibc: a folder naming them is not searched), and a cache ldconfig was not run to update
(the ld.so.conf folders are taken as the cache).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterator, Mapping
from fnmatch import fnmatchcase

MAXSYMLINKS = 40
DEFAULT_FOLDERS = ("lib", "usr/lib", "lib64", "usr/lib64", "lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")
LD_SO_CONF = "etc/ld.so.conf"
MAX_INCLUDE_DEPTH = 16  # ldconfig follows includes of includes; a loop among them stops here
_SEPARATORS = re.compile(r"[\s:,]+")  # ldconfig(8): folders separated by colons, spaces, tabs, newlines or commas


def normalize(name: str) -> str:
    """A path from the root, without a leading `/` or `./`: `./usr/lib/` is `usr/lib`;
    `..` stops at the root."""
    return posixpath.normpath("/" + name).lstrip("/") if name.strip("./") else ""


class Tree:
    """The files of an image that the loader may open (its regular files), and its
    symlinks (path → target, as written), paths from the root."""

    def __init__(self, files: Collection[str], links: Mapping[str, str]) -> None:
        self.files = files
        self.links = links

    def resolve(self, path: str) -> str | None:
        """The file `path` (from the root) names once every symlink on the way is followed,
        or None: nothing there, a folder, or more than MAXSYMLINKS links."""
        pending = path.split("/")[::-1]  # a stack: the next part last
        reached: list[str] = []
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if reached:  # at the root, `..` is the root
                    reached.pop()
                continue
            here = "/".join([*reached, part])
            target = self.links.get(here)
            if target is None:
                reached.append(part)
                continue
            hops += 1
            if hops > MAXSYMLINKS:
                return None
            if target.startswith("/"):
                reached = []  # inside the image, `/` is its root
            pending.extend(reversed(target.split("/")))
        found = "/".join(reached)
        return found if found in self.files else None


def conf_folders(texts: Mapping[str, str]) -> list[str]:
    """The folders ldconfig reads from /etc/ld.so.conf and what it includes, in order.

    Without /etc/ld.so.conf, ldconfig itself would read none of etc/ld.so.conf.d; but an
    image without it still has the cache ldconfig wrote when its packages put their files
    there (a package adds its folder to ld.so.conf.d and runs ldconfig), and wheelpin read
    them all before it read `include` lines: so Debian's `include
    /etc/ld.so.conf.d/*.conf` stands in for the file that is not there."""
    folders: list[str] = []
    if LD_SO_CONF in texts:
        _read_conf(LD_SO_CONF, texts, folders, set(), 0)
    else:
        for path in sorted(p for p in texts if _glob(LD_SO_CONF + ".d/*.conf", p)):
            _read_conf(path, texts, folders, set(), 0)
    return list(dict.fromkeys(f for f in folders if f))


def _read_conf(path: str, texts: Mapping[str, str], folders: list[str], seen: set[str], depth: int) -> None:
    if path in seen or depth > MAX_INCLUDE_DEPTH:
        return
    seen.add(path)
    for line in texts.get(path, "").splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["include"]:
            for pattern in words[1:]:
                whole = pattern if pattern.startswith("/") else posixpath.join("/" + posixpath.dirname(path), pattern)
                for included in sorted(p for p in texts if _glob(normalize(whole), p)):  # glob(3) sorts its names
                    _read_conf(included, texts, folders, seen, depth + 1)
        elif words[:1] == ["hwcap"] or not words:
            continue  # glibc's ldconfig ignores hwcap lines now
        else:
            folders += [normalize(folder.split("=", 1)[0]) for folder in _SEPARATORS.split(" ".join(words)) if folder]


def _glob(pattern: str, path: str) -> bool:
    """glob(3) for one path: part by part, `*` never crossing a slash, and a leading dot
    matched only by a pattern part that starts with one."""
    wanted, parts = pattern.split("/"), path.split("/")
    return len(wanted) == len(parts) and all(
        fnmatchcase(part, want) and (not part.startswith(".") or want.startswith("."))
        for want, part in zip(wanted, parts, strict=True)
    )


def expand(folder: str, origin: str) -> str | None:
    """A search folder as the loader reads it: `$ORIGIN` (or `${ORIGIN}`) is `origin`, the
    folder of the object that asks; a folder naming another token is None (not searched)."""
    text = folder.replace("${ORIGIN}", "$ORIGIN").replace("$ORIGIN", "/" + origin)
    return None if "$" in text else normalize(text)


def search_folders(
    *, rpath: tuple[str, ...], runpath: tuple[str, ...], origin: str, env: Mapping[str, str], conf: list[str]
) -> Iterator[str]:
    """Where the loader looks for a name without a slash that an object in `origin` needs,
    in its order."""
    own = rpath if not runpath else ()  # DT_RPATH is ignored when DT_RUNPATH is there
    # `$ORIGIN` there is the program's folder, which the image does not say: not searched
    library_path = [None if "$" in p else normalize(p) for p in env.get("LD_LIBRARY_PATH", "").split(":") if p.strip()]
    for folder in (
        *(expand(f, origin) for f in own),
        *library_path,
        *(expand(f, origin) for f in runpath),
        *conf,
        *DEFAULT_FOLDERS,
    ):
        if folder is not None:
            yield folder


def locate(name: str, folders: Iterator[str] | list[str], tree: Tree) -> str | None:
    """The file the loader opens for the DT_NEEDED `name`, or None."""
    if "/" in name:
        return tree.resolve(normalize(name))  # a relative one: from the working folder, taken as the root
    for folder in folders:
        found = tree.resolve(posixpath.join(folder, name))
        if found is not None:
            return found
    return None

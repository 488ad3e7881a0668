"""Size bounds on the parts of the cache folder that grow with what is watched (docs/sizing.md,
"The cache folder"): the layer summaries (`layers/`, adapters/consumerread.py), the build
folders (`builds/<component>/<commit>`, adapters/buildcache.py), the upstreams' git
mirrors (`upstream/<…>.git`, adapters/upstream.py) and the registry documents kept by
digest (`content/<kind>/<hex>`, adapters/imagestore.py `DigestCache`). Each of the first
three is a `BoundedFolder` of entries; when its entries pass the bound, the least recently
used go first, never one that a running pass uses.

`content/` is `BoundedFiles`: many small files, each read or written whole, so it keeps
no stamps nor pins (a file trimmed under a reader is a miss: it is fetched again). Last
used is the file's own mtime, set at each read; a walk measures and trims the part, at the
end of a pass that wrote to it and at most once every `FILE_TRIM_EVERY` seconds, so a pass
never pays for a walk of a large part it only read from.

- Last used is a stamp of wheelpin's own (`CACHE/.lru/<part>/<entry>`, its mtime set at each
  use, its content the entry's size in bytes as last measured; beside the part, not in it,
  so a pass that only plans, a dry run, makes no part that was not there): a file's atime is not kept on
  most mounts (noatime, relatime), and a folder's says nothing of its files.
- In use is a shared `flock` on the entry's stamp, held by the pass (its `scope()`) from its
  first use of the entry to its end; an eviction takes the stamp's lock exclusively without
  waiting, and passes by an entry it cannot lock. flock is per open file, so it holds
  between processes and threads alike: replicas sharing one cache folder never evict what
  another runs with, and a process that dies lets go of its locks with its files.
- An entry evicted is renamed out of the part first (one rename: a reader sees it whole or
  not at all), then removed.

The bounds are the process's settings (WHEELPIN_CACHE_*_MAX, app/settings.py), given by
the command's start (bot/cli.py, `configure`); a cache folder nobody configured is left as
it always was: no stamps, no bound (tests' caches, a library caller's).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

STAMPS = ".lru"  # in the cache folder, a folder per part: its stamps, its trim's lock, entries being removed
TRIM_LOCK = ".trim"
TRASH = ".trash-"
# part → how deep its entries are (builds/<component>/<commit> is two folders down)
PARTS = {"layers": 1, "builds": 2, "upstream": 1}
FILE_PARTS = {"content": 2}  # parts of small files (content/<kind>/<hex>): BoundedFiles
FILE_TRIM_EVERY = 600.0  # seconds between two walks of a part of small files
WALKED = ".walked"  # in a part of small files' stamps folder: its last walk's "bytes files"


@dataclass
class Evictions:
    count: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Usage:
    part: str
    used: int  # bytes of its entries, as last measured
    bound: int
    entries: int
    evictions: int  # by this process
    evicted_bytes: int


_configured: dict[Path, dict[str, int]] = {}  # cache folder (resolved) → part → bound in bytes
_evictions: dict[Path, Evictions] = {}  # a part's folder → this process's evictions there
_measured: dict[Path, tuple[float, int, int]] = {}  # a part of small files no trim walked → (when, bytes, files)
_guard = threading.Lock()


def _log() -> Any:
    from . import logs

    return logs.get_logger("wheelpin.cache")


def configure(cache: Path, bounds: dict[str, int]) -> None:
    """Bound the parts of `cache` (part → bytes), for this process."""
    unknown = set(bounds) - set(PARTS) - set(FILE_PARTS)
    if unknown:
        raise ValueError(f"no such part of the cache: {sorted(unknown)}")
    with _guard:
        _configured[cache.resolve()] = dict(bounds)


def unconfigure(cache: Path) -> None:
    with _guard:
        _configured.pop(cache.resolve(), None)


def _bound_of(folder: Path, parts: dict[str, int]) -> int | None:
    """The bound this process set on the part `folder` is, if it is one of `parts`."""
    if folder.name not in parts:
        return None
    with _guard:
        if not _configured:
            return None
    where = folder.resolve()
    with _guard:
        return _configured.get(where.parent, {}).get(where.name)


def bounded(folder: Path) -> BoundedFolder | None:
    """The part of a cache folder that `folder` is (`CACHE/builds`…), bounded; None when
    this process bounds no such part (nothing to stamp nor trim)."""
    bound = _bound_of(folder, PARTS)
    # named as the caller names it (a relative or linked cache folder): its entries are too
    return None if bound is None else BoundedFolder(folder, bound=bound, depth=PARTS[folder.name])


def bounded_files(folder: Path) -> BoundedFiles | None:
    """The part of small files `folder` is (`CACHE/content`), bounded; None when this
    process bounds no such part."""
    bound = _bound_of(folder, FILE_PARTS)
    return None if bound is None else BoundedFiles(folder, bound=bound, depth=FILE_PARTS[folder.name])


def usage() -> list[Usage]:
    """Every configured part: its bytes, bound and this process's evictions (`/metrics`)."""
    with _guard:
        parts = [(root, name, bound) for root, bounds in _configured.items() for name, bound in bounds.items()]
    found = []
    for root, name, bound in parts:
        part: BoundedFolder | BoundedFiles
        if name in FILE_PARTS:
            part = BoundedFiles(root / name, bound=bound, depth=FILE_PARTS[name])
        else:
            part = BoundedFolder(root / name, bound=bound, depth=PARTS[name])
        used, entries = part.measure()
        gone = _evictions.get(root / name, Evictions())
        found.append(Usage(name, used, bound, entries, gone.count, gone.bytes))
    return found


# -- the pass's pins ---------------------------------------------------------------------------


@dataclass
class _Scope:
    pins: dict[Path, int] = field(default_factory=dict)  # stamp → its open, shared-locked descriptor
    used: dict[Path, tuple[BoundedFolder, Path]] = field(default_factory=dict)  # stamp → (folder, entry)
    written: dict[Path, BoundedFiles] = field(default_factory=dict)  # parts of small files written to


_local = threading.local()
_unscoped = _Scope()  # uses outside any scope: pinned until the process ends
_unscoped_guard = threading.Lock()


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """A pass (a command, a service's job): what it uses stays pinned until it ends; then
    each entry's size is noted and each part it touched is trimmed to its bound. Nested
    scopes are the outer one."""
    if getattr(_local, "scope", None) is not None:
        yield
        return
    current = _local.scope = _Scope()
    try:
        yield
    finally:
        _local.scope = None
        _close(current)


def _close(current: _Scope) -> None:
    folders: dict[Path, BoundedFolder] = {}
    for stamp, (folder, entry) in current.used.items():
        with contextlib.suppress(OSError):
            folder._note_size(entry, stamp)
        folders[folder.root] = folder
    for descriptor in current.pins.values():
        os.close(descriptor)  # lets go of the shared lock
    for stamp, (folder, entry) in current.used.items():
        if not os.path.lexists(entry):  # planned and never made (a dry run), or removed by its pass
            folder._drop(stamp)
    trims: list[BoundedFolder | BoundedFiles] = [*folders.values(), *current.written.values()]
    for part in trims:
        try:
            if isinstance(part, BoundedFiles) and not part.due():
                continue
            part.trim()
        except OSError as exc:  # a trim that failed leaves the part as it was: the next one tries again
            _log().warning("cache.trim_failed", part=part.root.name, error=f"{type(exc).__name__}: {exc}")


def _trimmed(root: Path, gone: Evictions, *, used: int, bound: int) -> None:
    """A trim's evictions, counted for `/metrics` and said once."""
    if not gone.count:
        return
    with _guard:
        mine = _evictions.setdefault(root.resolve(), Evictions())
        mine.count += gone.count
        mine.bytes += gone.bytes
    _log().info("cache.trimmed", part=root.name, evicted=gone.count, evicted_bytes=gone.bytes, used=used, bound=bound)


@contextlib.contextmanager
def _alone(stamps: Path) -> Iterator[bool]:
    """One trim of a part at a time, across processes: True inside while this one holds the
    part's trim lock, False when another trim has it (that one does the work)."""
    stamps.mkdir(parents=True, exist_ok=True)
    with open(stamps / TRIM_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def _scope() -> _Scope:
    current: _Scope | None = getattr(_local, "scope", None)
    return current if current is not None else _unscoped


# -- one part ----------------------------------------------------------------------------------


def _size(path: Path) -> int:
    """Bytes of a file, or of the files under a folder (apparent sizes; links not followed)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return info.st_size
    total = 0
    for top, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(top, name)).st_size
    return total


class BoundedFolder:
    def __init__(self, root: Path, *, bound: int, depth: int = 1) -> None:
        self.root = root
        self.bound = bound
        self.depth = depth
        self.stamps = root.parent / STAMPS / root.name

    def _stamp(self, entry: Path) -> Path:
        return self.stamps / quote(entry.relative_to(self.root).as_posix(), safe="")

    def _entry(self, stamp: Path) -> Path:
        return self.root / unquote(stamp.name)

    def use(self, entry: Path) -> None:
        """`entry` is used by the running pass: its stamp says so (now), and it is pinned
        (never evicted) until the pass's scope ends, its size then noted."""
        stamp = self._stamp(entry)
        current = _scope()
        guard = _unscoped_guard if current is _unscoped else contextlib.nullcontext()
        try:
            with guard:
                if stamp not in current.pins:
                    current.pins[stamp] = self._pin(stamp)
                current.used[stamp] = (self, entry)
            os.utime(stamp)
        except OSError as exc:  # housekeeping: never the pass's failure (a trim that cannot lock evicts nothing)
            _log().warning("cache.unstamped", part=self.root.name, error=f"{type(exc).__name__}: {exc}")

    def touch(self, entry: Path) -> None:
        """`entry` was used just now, and is not used further (a file read whole, or written
        whole): its stamp says so and notes its size; no pin."""
        stamp = self._stamp(entry)
        try:
            self.stamps.mkdir(parents=True, exist_ok=True)
            size = _size(entry)
            temporary = self.stamps / f"{TRASH}{uuid.uuid4().hex}"
            temporary.write_text(str(size))
            os.replace(temporary, stamp)  # a new stamp file: an eviction holding the old one fails its check
        except OSError as exc:
            _log().warning("cache.unstamped", part=self.root.name, error=f"{type(exc).__name__}: {exc}")
            return
        current = _scope()
        guard = _unscoped_guard if current is _unscoped else contextlib.nullcontext()
        with guard:
            current.used.setdefault(stamp, (self, entry))

    def _pin(self, stamp: Path) -> int:
        """The stamp's file, open and share-locked: the lock taken on the file that is the
        stamp now (an eviction may have removed the one opened, while this waited)."""
        self.stamps.mkdir(parents=True, exist_ok=True)
        while True:
            descriptor = os.open(stamp, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_SH)  # waits only while an eviction renames the entry
                if os.stat(stamp).st_ino == os.fstat(descriptor).st_ino:
                    return descriptor
            except FileNotFoundError:
                pass
            except OSError:
                os.close(descriptor)
                raise
            os.close(descriptor)

    def _note_size(self, entry: Path, stamp: Path) -> None:
        if not os.path.lexists(entry):
            return  # removed by its pass (a build discarded): the trim drops its stamp
        size = str(_size(entry)).encode()
        descriptor = os.open(stamp, os.O_WRONLY)
        try:
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, size, 0)
        finally:
            os.close(descriptor)
        os.utime(stamp)

    def entries(self) -> list[Path]:
        """The part's entries (names starting with a dot are wheelpin's own, or being written)."""
        level = [self.root]
        for _ in range(self.depth):
            below: list[Path] = []
            for folder in level:
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    below.extend(child for child in folder.iterdir() if not child.name.startswith("."))
            level = below
        return level

    def _known(self, entry: Path) -> tuple[float, int]:
        """(last used, bytes) from the entry's stamp; an entry with none (left by a wheelpin
        before bounds, or by a pass that died before its end) is measured and stamped as
        last used when it was last changed."""
        stamp = self._stamp(entry)
        try:
            info = stamp.stat()
            text = stamp.read_text().strip()
            if text.isdigit():
                return info.st_mtime, int(text)
        except FileNotFoundError:
            info = None
        size = _size(entry)
        if info is not None:  # stamped by a pass that has not noted its size yet: it runs still
            return info.st_mtime, size
        changed = entry.lstat().st_mtime
        temporary = self.stamps / f"{TRASH}{uuid.uuid4().hex}"
        temporary.write_text(str(size))
        os.utime(temporary, (changed, changed))
        with contextlib.suppress(FileExistsError):  # a pass stamped it meanwhile: theirs stands
            os.link(temporary, stamp)
        temporary.unlink()
        return changed, size

    def measure(self) -> tuple[int, int]:
        """(bytes, entries) as the stamps say: what `/metrics` shows, with no walk of the entries."""
        total = count = 0
        with contextlib.suppress(FileNotFoundError):
            for stamp in self.stamps.iterdir():
                if stamp.name.startswith("."):
                    continue
                with contextlib.suppress(OSError, ValueError):
                    total += int(stamp.read_text().strip() or 0)
                    count += 1
        return total, count

    def trim(self) -> Evictions:
        """Evict the least recently used entries until the part is within its bound, passing
        by those in use; one trim at a time across processes (another running: this one
        leaves it the work)."""
        gone = Evictions()
        if not self.root.is_dir():
            return gone
        with _alone(self.stamps) as mine:
            if not mine:
                return gone
            self._sweep()
            known = []
            for entry in self.entries():
                with contextlib.suppress(FileNotFoundError):
                    known.append((*self._known(entry), entry))
            total = sum(size for _used, size, _entry in known)
            for _used, size, entry in sorted(known, key=lambda item: item[0]):
                if total <= self.bound:
                    break
                if self._evict(entry):
                    total -= size
                    gone.count += 1
                    gone.bytes += size
        _trimmed(self.root, gone, used=total, bound=self.bound)
        return gone

    def _evict(self, entry: Path) -> bool:
        """Remove `entry` unless a pass holds it (its stamp locked)."""
        stamp = self._stamp(entry)
        try:
            descriptor = os.open(stamp, os.O_RDWR)
        except FileNotFoundError:
            return False  # its stamp went meanwhile: someone else's business
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # in use
            if os.stat(stamp).st_ino != os.fstat(descriptor).st_ino:
                return False  # stamped again meanwhile
            trash = self.stamps / f"{TRASH}{uuid.uuid4().hex}"
            try:
                os.rename(entry, trash)
            except FileNotFoundError:
                pass
            os.unlink(stamp)
        finally:
            os.close(descriptor)
        self._remove(trash)
        with contextlib.suppress(OSError):  # builds/<component>/ left empty
            if entry.parent != self.root:
                entry.parent.rmdir()
        return True

    def _sweep(self) -> None:
        """Remove what an eviction that died left halfway, and the stamps of entries gone
        (removed by their own passes), when no pass holds them."""
        for path in list(self.stamps.iterdir()):
            if path.name.startswith(TRASH):
                if time.time() - path.lstat().st_mtime > 60 or path.is_dir():
                    self._remove(path)
            elif not path.name.startswith(".") and not os.path.lexists(self._entry(path)):
                self._drop(path)

    def _drop(self, stamp: Path) -> None:
        """Remove the stamp of an entry that is not there, unless a pass holds it (about to
        make the entry)."""
        try:
            descriptor = os.open(stamp, os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.stat(stamp).st_ino == os.fstat(descriptor).st_ino and not os.path.lexists(self._entry(stamp)):
                stamp.unlink()
        except (BlockingIOError, FileNotFoundError):
            pass
        finally:
            os.close(descriptor)

    @staticmethod
    def _remove(path: Path) -> None:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


class BoundedFiles:
    """A part of small files read and written whole (`content/<kind>/<hex>`), bounded by a
    walk that removes the least recently used (oldest mtime) first."""

    def __init__(self, root: Path, *, bound: int, depth: int) -> None:
        self.root = root
        self.bound = bound
        self.depth = depth
        self.stamps = root.parent / STAMPS / root.name

    def read(self, path: Path) -> None:
        """`path` was just read: its mtime says so (best effort: a read-only cache is read still)."""
        with contextlib.suppress(OSError):
            os.utime(path)

    def wrote(self, path: Path) -> None:
        """`path` was just written: the part is walked at the pass's end if one is due."""
        del path  # its mtime is now: nothing to note
        current = _scope()
        guard = _unscoped_guard if current is _unscoped else contextlib.nullcontext()
        with guard:
            current.written.setdefault(self.root, self)

    def due(self) -> bool:
        try:
            return time.time() - (self.stamps / WALKED).stat().st_mtime >= FILE_TRIM_EVERY
        except FileNotFoundError:
            return True

    def _files(self) -> list[tuple[float, int, str]]:
        """(mtime, bytes, path) of each file, names starting with a dot (being written) aside."""
        found: list[tuple[float, int, str]] = []
        level = [str(self.root)]
        for depth in range(self.depth):
            below: list[str] = []
            for folder in level:
                with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(folder) as children:
                    for child in children:
                        if child.name.startswith("."):
                            continue
                        if depth < self.depth - 1:
                            if child.is_dir(follow_symlinks=False):
                                below.append(child.path)
                            continue
                        with contextlib.suppress(OSError):
                            info = child.stat(follow_symlinks=False)
                            found.append((info.st_mtime, info.st_size, child.path))
            level = below
        return found

    def measure(self) -> tuple[int, int]:
        """(bytes, files) as the last trim's walk found them; a part no trim has walked yet is
        measured by a walk that removes nothing (a scrape of `/metrics` never evicts), kept
        in this process for FILE_TRIM_EVERY seconds so that scrapes do not walk it each time."""
        try:
            used, files = (self.stamps / WALKED).read_text().split()
            return int(used), int(files)
        except (FileNotFoundError, ValueError):
            pass
        key = self.root.resolve()
        with _guard:
            known = _measured.get(key)
        if known is not None and time.monotonic() - known[0] < FILE_TRIM_EVERY:
            return known[1], known[2]
        found = self._files()
        measured = sum(size for _mtime, size, _path in found), len(found)
        with _guard:
            _measured[key] = (time.monotonic(), *measured)
        return measured

    def trim(self) -> Evictions:
        """Walk the part and remove its least recently used files until it is within its
        bound; one walk at a time across processes (another walking: this one leaves it)."""
        gone = Evictions()
        if not self.root.is_dir():
            return gone
        with _alone(self.stamps) as mine:
            if not mine:
                return gone
            files = self._files()
            total = sum(size for _mtime, size, _path in files)
            count = len(files)
            for _mtime, size, path in sorted(files):
                if total <= self.bound:
                    break
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                    gone.count += 1
                    gone.bytes += size
                total -= size
                count -= 1
            walked = self.stamps / f"{TRASH}{uuid.uuid4().hex}"
            walked.write_text(f"{total} {count}")
            os.replace(walked, self.stamps / WALKED)
        _trimmed(self.root, gone, used=total, bound=self.bound)
        return gone

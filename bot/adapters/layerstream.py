"""One layer of a consuming image, streamed into a `LayerSummary` (core/image/files.py): the
dist-infos' METADATA and the shared objects their RECORD lists, the shared objects (files
and symlinks), the other symlinks that may be folders, ld.so.conf and ROCm's version
file, and the whiteouts. Nothing is written to disk and memory stays bounded whatever the
layer:

- the compression is sniffed from the first bytes (gzip, zstd, or a plain tar), whatever
  the media type says; the bytes are counted against the size the manifest gives, and
  the blob's digest is checked when it ends (the registry client does), the uncompressed
  tar's digest against the config's `diff_ids`;
- the tar's headers are read by `adapters/boundedtar.py`: an extended (pax, GNU long name)
  header past its bound is refused before its body is read, and no member's header is kept
  once the next is read;
- a declared size of at most `MAX_LAYER`; at most `MAX_MEMBERS` tar entries,
  `MAX_METADATA` bytes of one METADATA and `MAX_METADATA_TOTAL` of all of a layer's,
  `MAX_REQUIRES` requirements of one distribution, `MAX_TEXT` of one text file (of
  `MAX_TEXTS` at most); once uncompressed, `MAX_RATIO` times the compressed bytes received
  so far (at least `MIN_INFLATED`): a claim of a larger size buys no more inflation;
- a path (and a link target) of at most `PATH_MAX` bytes, the kernel's bound on a path;
- what the summary keeps, in all: `MAX_KEPT` entries (paths, requirements, RECORD lines)
  and `MAX_KEPT_BYTES` bytes of them, so its cached JSON is bounded too;
- a RECORD of at most `MAX_RECORD` bytes, read as a stream: only the shared objects it
  lists are kept, `MAX_RECORD_LIBRARIES` of them at most;
- at most `MAX_LINKS` symlinks that may be folders;
- a member whose name leaves the root (`../`), or a hard link to one, is refused.
Each refusal is one sentence (a `LayerError`), never a crash.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import posixpath
import tarfile
from collections.abc import Iterator
from typing import IO, Any, cast

import zstandard

from ..core.errors import InputError
from ..core.image.files import LDCONF, LIBRARY, PYTHON, RECORD, ROCM_VERSION, SITE, LayerSummary, may_be_folder
from ..core.image.ldso import normalize
from ..core.wheel.metadata import parse_metadata
from .boundedtar import TarRefused, entries

MAX_LAYER = 64 << 30  # a layer's declared (compressed) size; the largest ROCm layers are some 10 GiB
MAX_MEMBERS = 2_000_000
MAX_METADATA = 1 << 20
MAX_METADATA_TOTAL = 64 << 20  # of one layer: 500 distributions of 100 KiB (their READMEs) is 50 MiB
MAX_REQUIRES = 1024  # of one distribution: the largest meta-packages list a few hundred
# what one layer's summary keeps: a ROCm and PyTorch image's largest layer keeps some 30,000
# entries and 3 MiB; these bound its memory and its cached JSON (a few tens of MiB at most)
MAX_KEPT = 200_000
MAX_KEPT_BYTES = 16 << 20
MAX_TEXT = 64 << 10
MAX_TEXTS = 256  # text files of one layer: a Debian and ROCm image has a dozen
MAX_RATIO = 200
MIN_INFLATED = 1 << 30
MAX_RECORD = 32 << 20  # torch's RECORD is some 3 MiB
MAX_RECORD_LIBRARIES = 20_000
PATH_MAX = 4096
MAX_LINKS = 100_000  # a Debian and ROCm image keeps a few thousand
_CHUNK = 1 << 20
# tarfile's stream mode copies what is left of its buffer on every header it reads: with a
# buffer of 1 MiB, a layer of a million empty files spent most of its time copying
_TAR_BUFFER = 64 << 10


class LayerError(InputError):
    """A layer that cannot be read as a layer: said in one sentence."""


class ChunkReader(io.RawIOBase):
    """A readable stream over an iterator of chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


class _Counted(ChunkReader):
    """The layer's bytes as a stream, counted against the size the manifest gives."""

    def __init__(self, chunks: Iterator[bytes], *, limit: int, what: str) -> None:
        super().__init__(chunks)
        self.count = 0
        self.limit = limit
        self.what = what

    def readinto(self, buffer: Any) -> int:
        size = super().readinto(buffer)
        self.count += size
        if self.count > self.limit:
            raise LayerError(f"{self.what} is larger than {self.limit} bytes")
        return size

    def drain(self) -> None:
        for _chunk in self._chunks:  # the registry client checks the blob's digest at the end
            pass


class _Inflated(io.RawIOBase):
    """The uncompressed tar stream: counted (a bomb stops at its limit) and hashed. The
    limit grows with the compressed bytes `received` so far, never with what the manifest
    claims: a small blob claiming to be huge inflates no further than a small one."""

    def __init__(self, source: IO[bytes], *, received: _Counted, what: str) -> None:
        self._source = source
        self._received = received
        self.count = 0
        self.what = what
        self.hash = hashlib.sha256()

    @property
    def limit(self) -> int:
        return max(MAX_RATIO * self._received.count, MIN_INFLATED)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._source.read(len(buffer))
        size = len(data)
        buffer[:size] = data
        self.count += size
        self.hash.update(data)
        if self.count > self.limit:
            raise LayerError(f"{self.what} inflates past {self.limit} bytes")
        return size


def decompressed(raw: io.RawIOBase) -> IO[bytes]:
    """A layer's tar, whatever compression its first bytes name (gzip, zstd, none): the
    media type is not trusted for it (a zstd layer may be labelled `tar+gzip` by old tools,
    and `skopeo copy --dest-compress-format zstd` writes `tar+zstd`)."""
    buffered = io.BufferedReader(raw, _CHUNK)
    magic = buffered.peek(4)[:4]
    if magic[:2] == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=buffered))
    if magic == b"\x28\xb5\x2f\xfd":
        return cast(IO[bytes], zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True))
    return buffered


def layer_stream(chunks: Iterator[bytes], *, size: int, what: str) -> tuple[_Counted, _Inflated]:
    """A layer blob of `size` compressed bytes (the manifest's word) as its uncompressed tar:
    the blob counted against `size` (and `MAX_LAYER`), its inflation against the bytes
    received so far. Both readers of layers, the consuming image's and a wheel image's,
    read through it."""
    if not 0 <= size <= MAX_LAYER:
        raise LayerError(f"{what} is said to be {size} bytes; wheelpin reads layers of at most {MAX_LAYER}")
    raw = _Counted(chunks, limit=size, what=what)
    return raw, _Inflated(decompressed(raw), received=raw, what=what)


def read_layer(
    chunks: Iterator[bytes], *, size: int, diff_id: str | None, what: str, members: int = MAX_MEMBERS
) -> LayerSummary:
    """The summary of one layer of `size` compressed bytes (the manifest's word);
    `diff_id`: the digest of its uncompressed tar, from the image config; `members`: the
    entries it may have (fewer than `MAX_MEMBERS` when the layers below took some of the
    image's)."""
    raw, inflated = layer_stream(chunks, size=size, what=what)
    summary = LayerSummary()
    kept = _Kept(what)
    try:
        for archive, member in entries(cast(IO[bytes], inflated), bufsize=_TAR_BUFFER):
            _take(archive, member, summary, kept, members, what)
        while inflated.read(_CHUNK):  # the tar's end padding: the diff_id covers it
            pass
    except LayerError:
        raise
    except TarRefused as exc:
        raise LayerError(f"{what} {exc}") from None
    except (tarfile.TarError, EOFError, OSError, zstandard.ZstdError, ValueError) as exc:
        raise LayerError(f"{what} is not a readable tar ({type(exc).__name__}: {str(exc)[:120]})") from None
    raw.drain()
    if raw.count != size:
        raise LayerError(f"{what} is {raw.count} bytes, not the {size} its manifest says")
    if diff_id is not None and "sha256:" + inflated.hash.hexdigest() != diff_id:
        raise LayerError(f"{what}'s content does not match its diff_id in the image config")
    return summary


class _Kept:
    """What one layer's summary keeps, counted against `MAX_KEPT` and `MAX_KEPT_BYTES`."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.entries = 0
        self.bytes = 0
        self.metadata = 0  # bytes of METADATA read

    def add(self, *texts: str) -> None:
        self.entries += 1
        self.bytes += sum(len(text) for text in texts)
        if self.entries > MAX_KEPT or self.bytes > MAX_KEPT_BYTES:
            raise LayerError(
                f"{self.what} names more than {MAX_KEPT} libraries, links, distributions and "
                f"requirements, or more than {MAX_KEPT_BYTES} bytes of them, more than wheelpin keeps "
                "of one layer"
            )


def _take(
    archive: tarfile.TarFile, member: tarfile.TarInfo, summary: LayerSummary, kept: _Kept, members: int, what: str
) -> None:
    summary.members += 1
    if summary.members > min(members, MAX_MEMBERS):
        raise LayerError(
            f"{what} has more than {min(members, MAX_MEMBERS)} entries"
            + ("" if members >= MAX_MEMBERS else ", more than the layers below leave of an image's")
        )
    for kind, name in (("path", member.name), ("link target", member.linkname)):
        if len(name.encode("utf-8", "surrogateescape")) > PATH_MAX:
            raise LayerError(
                f"{what}: the entry {normalize(member.name)[:200]!r} has a {kind} longer than "
                f"{PATH_MAX} bytes (PATH_MAX)"
            )
    if _escapes(member.name) or (member.islnk() and _escapes(member.linkname)):
        raise LayerError(f"{what}: the entry {member.name[:200]!r} leads out of the image's root")
    path = normalize(member.name)
    if not path:
        return
    deleted = summary.note_whiteout(path)
    if deleted is not None:
        kept.add(deleted)
        return
    if member.issym() and not member.linkname:
        return  # names nothing: no path goes through it
    if member.issym() or member.islnk():
        if LIBRARY.match(path):  # a symlink keeps its target; a hard link is a file
            kept.add(path, member.linkname)
            summary.libraries[path] = member.linkname if member.issym() else ""
        elif PYTHON.match(path):
            kept.add(path)
            summary.pythons.append(path)
        elif member.issym() and may_be_folder(path, member.linkname):
            if len(summary.links) >= MAX_LINKS:
                raise LayerError(
                    f"{what} has more than {MAX_LINKS} symlinks that may be folders, more than "
                    "wheelpin keeps of one layer"
                )
            kept.add(path, member.linkname)
            summary.links[path] = member.linkname
        return
    if not member.isreg():
        return
    if SITE.match(path):
        summary.dists[path] = _dist(archive, member, path, kept, what)
    elif match := RECORD.match(path):
        kept.add(path)
        summary.records[path] = _record_libraries(archive, member, match.group("site"), kept, what)
    elif LDCONF.match(path) or ROCM_VERSION.match(path):
        if len(summary.texts) >= MAX_TEXTS:
            raise LayerError(f"{what} has more than {MAX_TEXTS} ld.so.conf files")
        summary.texts[path] = _read(archive, member, MAX_TEXT, what).decode("utf-8", "replace")
        kept.add(path, summary.texts[path])
    elif LIBRARY.match(path):
        kept.add(path)
        summary.libraries[path] = ""
    elif PYTHON.match(path):
        kept.add(path)
        summary.pythons.append(path)


def _dist(archive: tarfile.TarFile, member: tarfile.TarInfo, path: str, kept: _Kept, what: str) -> dict[str, Any]:
    """A METADATA's name, version and requirements, counted against the layer's bounds
    before it is read (900 METADATA files of 1 MiB of Requires-Dist are refused, not parsed)."""
    kept.metadata += member.size
    if kept.metadata > MAX_METADATA_TOTAL:
        raise LayerError(
            f"{what} holds more than {MAX_METADATA_TOTAL} bytes of METADATA, more than wheelpin reads of one layer"
        )
    data = _read(archive, member, MAX_METADATA, what)
    try:
        metadata = parse_metadata(data)
    except ValueError as exc:
        raise LayerError(f"{what}: {path}: {exc}") from None
    if len(metadata.requires_dist) > MAX_REQUIRES:
        raise LayerError(
            f"{what}: {path} lists {len(metadata.requires_dist)} requirements, more than the "
            f"{MAX_REQUIRES} wheelpin keeps of one distribution"
        )
    kept.add(path, metadata.name, metadata.version)
    for requirement in metadata.requires_dist:
        kept.add(requirement)
    return {"name": metadata.name, "version": metadata.version, "requires": list(metadata.requires_dist)}


def _record_libraries(
    archive: tarfile.TarFile, member: tarfile.TarInfo, site: str, kept: _Kept, what: str
) -> list[str]:
    """The shared objects a RECORD lists, as paths from the root (its paths are from the
    site folder): which distribution installed a library (torch's libc10.so)."""
    source = _open(archive, member, MAX_RECORD, what)
    found: list[str] = []
    try:
        # line by line (a stream-mode tar member cannot seek, which io.TextIOWrapper asks)
        for row in csv.reader(line.decode("utf-8", "replace") for line in source):
            if row and LIBRARY.match(row[0]):
                if len(found) >= MAX_RECORD_LIBRARIES:
                    raise LayerError(
                        f"{what}: {normalize(member.name)} lists more than {MAX_RECORD_LIBRARIES} shared objects"
                    )
                found.append(normalize(posixpath.join(site, row[0])))
                kept.add(found[-1])
    except csv.Error as exc:
        raise LayerError(f"{what}: {normalize(member.name)} is not a readable RECORD ({exc})") from None
    return found


def _escapes(name: str) -> bool:
    depth = 0
    for part in name.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _open(archive: tarfile.TarFile, member: tarfile.TarInfo, limit: int, what: str) -> IO[bytes]:
    if member.size > limit:
        raise LayerError(
            f"{what}: {normalize(member.name)} is {member.size} bytes, more than the {limit} "
            "wheelpin reads of such a file"
        )
    source = archive.extractfile(member)
    assert source is not None
    return source


def _read(archive: tarfile.TarFile, member: tarfile.TarInfo, limit: int, what: str) -> bytes:
    return _open(archive, member, limit, what).read(limit + 1)

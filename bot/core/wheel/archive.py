"""Safe, streaming access to a wheel's zip archive (the first thing the verify step does).

A wheel may be several GB and may be hostile. Before any member is read, the central
directory is checked: member names that escape (`../`, absolute, drive letters,
backslashes), duplicates, encrypted members, entries whose data overlap (the
overlapping-entry zip bomb), declared sizes past the file or past a cap, and
compression ratios no real wheel has. Members are then read one at a time, in chunks,
and the bytes actually produced are counted against what was declared.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path, PurePosixPath

from ..errors import InputError

CHUNK = 1 << 20
_LOCAL_HEADER = 30
# Archive-wide: real ROCm wheels inflate to at most ~5x their file (cupy's largest
# member reaches 61x); 100x over the whole file is far past any real wheel.
MAX_ARCHIVE_RATIO = 100.0
# Small wheels may compress as well as they like: 256 MiB inflates in about a second.
ARCHIVE_RATIO_APPLIES_ABOVE = 256 << 20
# The largest real wheels hold tens of thousands of members (torch ~ 20,000).
MAX_MEMBERS = 100_000


@dataclass(frozen=True, kw_only=True)
class ArchiveLimits:
    """Caps against zip bombs. Real ROCm wheels stay far below them (cupy: ratio ≤ 61)."""

    max_total_uncompressed: int = 64 << 30
    max_member_ratio: float = 250.0
    ratio_applies_above: int = 4 << 20  # members smaller than this may compress better


def open_archive(path: Path, limits: ArchiveLimits = ArchiveLimits()) -> zipfile.ZipFile:
    """Open and check a zip archive; InputError naming the file and the fault."""
    try:
        if declared_members(path) > MAX_MEMBERS:  # before zipfile spends ~1 KB on each
            raise InputError(f"{path}: holds more than {MAX_MEMBERS} members")
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a wheel file") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"{path}: not a readable zip archive ({exc})") from None
    try:
        check_directory(path, archive, limits)
    except InputError:
        archive.close()
        raise
    return archive


_END, _ZIP64_LOCATOR, _ZIP64_END = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06"


def declared_members(path: Path) -> int:
    """The member count the end of central directory record declares (APPNOTE 4.3.16, and
    the zip64 record 4.3.14 its locator 4.3.15 points to); 0 when there is none (zipfile
    then says why the file is not a zip)."""
    with path.open("rb") as stream:
        size = stream.seek(0, 2)
        tail_length = min(size, 22 + 0xFFFF)  # the record, then a comment of at most 64 KiB
        stream.seek(size - tail_length)
        tail = stream.read(tail_length)
        at = tail.rfind(_END)
        if at < 0 or at + 22 > len(tail):
            return 0
        (count,) = struct.unpack_from("<H", tail, at + 10)
        locator = at - 20
        if count == 0xFFFF and locator >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR:
            (zip64_at,) = struct.unpack_from("<Q", tail, locator + 8)
            if zip64_at + 56 <= size:
                stream.seek(zip64_at)
                record = stream.read(56)
                if record[:4] == _ZIP64_END:
                    (count,) = struct.unpack_from("<Q", record, 32)
        return int(count)


def check_directory(path: Path, archive: zipfile.ZipFile, limits: ArchiveLimits) -> None:
    """Check the central directory of an open archive before reading any member."""
    file_size = path.stat().st_size
    if len(archive.infolist()) > MAX_MEMBERS:
        raise InputError(f"{path}: holds more than {MAX_MEMBERS} members")
    seen: set[str] = set()
    total = 0
    for info in archive.infolist():
        name = info.filename
        if "\0" in info.orig_filename:  # zipfile cuts `filename` at NUL
            raise InputError(f"{path}: member name {info.orig_filename!r} holds a NUL byte")
        _check_name(path, name)
        if name in seen:
            raise InputError(f"{path}: member {name!r} appears twice in the archive")
        seen.add(name)
        if info.flag_bits & 0x1:
            raise InputError(f"{path}: member {name!r} is encrypted")
        if info.header_offset + _LOCAL_HEADER + info.compress_size > file_size:
            raise InputError(f"{path}: member {name!r} runs past the end of the file (truncated?)")
        total += info.file_size
        if total > limits.max_total_uncompressed:
            raise InputError(
                f"{path}: declares more than {limits.max_total_uncompressed} uncompressed bytes (zip bomb?)"
            )
        if info.file_size > limits.ratio_applies_above and info.file_size > limits.max_member_ratio * max(
            info.compress_size, 1
        ):
            raise InputError(
                f"{path}: member {name!r} claims a compression ratio over {limits.max_member_ratio:g} (zip bomb?)"
            )
    if total > ARCHIVE_RATIO_APPLIES_ABOVE and total > MAX_ARCHIVE_RATIO * max(file_size, 1):
        raise InputError(
            f"{path}: declares {total} uncompressed bytes in {file_size} bytes of file, "
            f"a ratio over {MAX_ARCHIVE_RATIO:g} (zip bomb?)"
        )
    by_offset = sorted(archive.infolist(), key=lambda i: i.header_offset)
    for current, following in pairwise(by_offset):
        if following.header_offset < current.header_offset + _LOCAL_HEADER + current.compress_size:
            raise InputError(f"{path}: members {current.filename!r} and {following.filename!r} overlap (zip bomb?)")


def _check_name(path: Path, name: str) -> None:
    pure = PurePosixPath(name)
    if (
        not name
        or "\0" in name
        or "\\" in name
        or name.startswith("/")
        or (len(name) > 1 and name[1] == ":")
        or ".." in pure.parts
    ):
        raise InputError(f"{path}: member name {name!r} escapes the archive's root")


def members_in_order(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """Files (not folders) in the order their data lies in the archive."""
    return sorted((info for info in archive.infolist() if not info.is_dir()), key=lambda i: i.header_offset)


def read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The bytes of one member, in chunks; InputError if it is corrupt or lies about its size."""
    produced = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(CHUNK):
                produced += len(chunk)
                yield chunk
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError) as exc:  # unsupported methods too
        raise InputError(f"{path}: member {info.filename!r} is corrupt ({exc})") from None
    if produced != info.file_size:
        raise InputError(f"{path}: member {info.filename!r} declares {info.file_size} bytes but holds {produced}")


def read_small_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, *, limit: int = 16 << 20) -> bytes:
    """A whole small member (METADATA, RECORD, WHEEL), refused past `limit` bytes."""
    if info.file_size > limit:
        raise InputError(f"{path}: {info.filename} is {info.file_size} bytes, over {limit}")
    return b"".join(read_member(path, archive, info))

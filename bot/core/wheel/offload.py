"""Reading GPU device code out of an ELF section: HIP offload bundles and CUDA fatbins.

Part of the verify step (docs/design.md §1.3). A `.hip_fatbin` section holds one clang
offload bundle per source file, each aligned (4096 bytes in linked libraries), back to
back, with zero padding between; plain (`__CLANG_OFFLOAD_BUNDLE__`) and compressed
(`CCOB`, zlib or zstd, format versions 1–3) bundles may be mixed. All of them are read.

Formats (little-endian throughout):
- plain: magic (24 bytes), u64 entry count, then per entry u64 offset (from the bundle's
  start), u64 size, u64 id length, id bytes (`hipv4-amdgcn-amd-amdhsa--gfx942`).
- compressed: `CCOB`, u16 version, u16 method (0 zlib, 1 zstd), then
  v1: u32 uncompressed size, u64 hash; v2: u32 total size, u32 uncompressed size,
  u64 hash; v3: u64 total size, u64 uncompressed size, u64 hash. The total size counts
  the header; v1 has none, so its end is the end of the compressed stream. The hash is
  the first 8 bytes of the MD5 of the uncompressed bundle.
- CUDA fatbin (`.nv_fatbin`): containers of u32 magic 0xBA55ED50, u16 version,
  u16 header size, u64 payload size; entries of u16 kind (1 PTX, 2 cubin), ..., u32
  header size at 4, u64 payload size at 8, u32 SM number at 28.

Memory and time stay bounded: payloads are never loaded, compressed bundles are inflated
in chunks and only their first bytes (the inner header) are kept, and a `ReadBudget` shared
by all the sections of one wheel bounds the bytes inflated (a bundle declaring more than is
left is refused before inflating) and the entries kept.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, cast

import zstandard

from .amdgpu import TargetId
from .binwindow import OutOfBounds, Window

PLAIN_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
CUDA_FATBIN_MAGIC = 0xBA55ED50
ZLIB, ZSTD = 0, 1
METHOD_NAMES = {ZLIB: "zlib", ZSTD: "zstd"}
_CHUNK = 1 << 20
_MAX_HEADER = 1 << 20  # an inner bundle header larger than this is refused
_ZSTD_MAGIC = 0xFD2FB528


# Real ROCm wheels keep tens of entries (cupy-rocm-7-0: 30) and torch some tens of
# thousands; 200,000 entries cost about 60 MB.
MAX_ENTRIES = 200_000
# Compressed bundles inflate about 5-10x; a wheel may inflate 16 times its own size
# in all, and at least 256 MiB (a second or two).
INFLATE_PER_WHEEL_BYTE = 16
INFLATE_FLOOR = 256 << 20


class BundleError(ValueError):
    """The section does not hold well-formed bundles; the message says where and why."""


@dataclass
class ReadBudget:
    """What reading the device code of one wheel may still cost."""

    inflate: int = INFLATE_FLOOR  # bytes still allowed out of compressed bundles
    entries: int = MAX_ENTRIES  # bundle entries still allowed to be kept

    @classmethod
    def for_wheel(cls, wheel_size: int) -> ReadBudget:
        return cls(inflate=max(INFLATE_FLOOR, INFLATE_PER_WHEEL_BYTE * wheel_size))

    def spend_inflate(self, declared: int, where: str) -> None:
        if declared > self.inflate:
            raise BundleError(
                f"{where}: it declares {declared} uncompressed bytes, past the {self.inflate} "
                f"this wheel may still inflate (a decompression bomb?)"
            )
        self.inflate -= declared

    def keep_entries(self, count: int, where: str) -> None:
        if count > self.entries:
            raise BundleError(f"{where}: its {count} entries pass the {MAX_ENTRIES} a wheel may hold")
        self.entries -= count


@dataclass(frozen=True)
class BundleEntry:
    """One code object of a bundle: its id as written, the target parsed from it."""

    id: str
    size: int
    kind: str
    triple: str
    target: TargetId | None  # None for the host entry and non-AMDGPU triples


@dataclass(frozen=True)
class Bundle:
    """One bundle found in a section, at `offset` from the section's start."""

    offset: int
    length: int
    entries: tuple[BundleEntry, ...]
    compression: str | None = None  # "zlib" | "zstd" for CCOB bundles
    format_version: int | None = None  # CCOB format version


def parse_entry_id(entry_id: str) -> BundleEntry:
    """Split `<kind>-<triple>-<target id>` (triple of 3 or 4 parts, target optional)."""
    kind, _, rest = entry_id.partition("-")
    if not kind or not rest:
        raise BundleError(f"bundle entry id {entry_id!r} is not <kind>-<triple>-<target>")
    marker = rest.find("-gfx")
    if rest.startswith("amdgcn-") and marker > 0:
        triple, target_text = rest[:marker], rest[marker + 1 :]
        try:
            target: TargetId | None = TargetId.parse(target_text)
        except ValueError as exc:
            raise BundleError(f"bundle entry id {entry_id!r}: {exc}") from None
        return BundleEntry(entry_id, 0, kind, triple.rstrip("-"), target)
    return BundleEntry(entry_id, 0, kind, rest.rstrip("-"), None)


def read_bundles(section: Window, budget: ReadBudget | None = None) -> list[Bundle]:
    """Every bundle in a `.hip_fatbin` section, in order; BundleError on malformed data
    or past `budget` (by default, one wheel's floor)."""
    budget = ReadBudget() if budget is None else budget
    bundles: list[Bundle] = []
    position = section.first_nonzero(0)
    while position < section.size:
        try:
            magic = section.read(position, min(len(PLAIN_MAGIC), section.size - position))
            if magic == PLAIN_MAGIC:
                bundle = _read_plain(section.sub(position, section.size - position), position, budget)
            elif magic[:4] == COMPRESSED_MAGIC:
                bundle = _read_compressed(section.sub(position, section.size - position), position, budget)
            else:
                raise BundleError(f"unknown data at offset {position:#x}: not a bundle magic ({magic[:8]!r}…)")
        except OutOfBounds as exc:
            raise BundleError(f"bundle at offset {position:#x} is truncated: {exc}") from None
        bundles.append(bundle)
        position = section.first_nonzero(position + bundle.length)
    return bundles


def _parse_plain_header(
    read: Callable[[int, int], bytes], available: int, where: str, budget: ReadBudget
) -> tuple[list[BundleEntry], int]:
    """Entries of a plain bundle and the end of its furthest payload, checked against
    `available` bytes. `read(offset, length)` reads the bundle's bytes."""
    (count,) = struct.unpack("<Q", read(len(PLAIN_MAGIC), 8))
    if count == 0 or count > (available - 32) // 24:
        raise BundleError(f"{where}: entry count {count} does not fit in {available} bytes")
    budget.keep_entries(count, where)
    entries: list[BundleEntry] = []
    position = len(PLAIN_MAGIC) + 8
    end = position
    for _ in range(count):
        offset, size, id_length = struct.unpack("<QQQ", read(position, 24))
        position += 24
        if id_length == 0 or id_length > available - position:
            raise BundleError(f"{where}: an entry id of {id_length} bytes runs past the bundle")
        raw_id = read(position, id_length)
        position += id_length
        try:
            entry_id = raw_id.decode("ascii")
        except UnicodeDecodeError:
            raise BundleError(f"{where}: entry id {raw_id[:40]!r} is not ASCII") from None
        if offset > available or size > available - offset:
            raise BundleError(
                f"{where}: entry {entry_id} ({size} bytes at {offset}) runs past the bundle's {available} bytes"
            )
        parsed = parse_entry_id(entry_id)
        entries.append(BundleEntry(parsed.id, size, parsed.kind, parsed.triple, parsed.target))
        end = max(end, offset + size)
    return entries, max(end, position)


def _read_plain(window: Window, at: int, budget: ReadBudget) -> Bundle:
    entries, end = _parse_plain_header(window.read, window.size, f"bundle at offset {at:#x}", budget)
    return Bundle(at, end, tuple(entries))


def _read_compressed(window: Window, at: int, budget: ReadBudget) -> Bundle:
    where = f"compressed bundle at offset {at:#x}"
    version, method = struct.unpack("<HH", window.read(4, 4))
    if version == 1:
        (uncompressed, digest), header = struct.unpack("<IQ", window.read(8, 12)), 20
        total = None
    elif version == 2:
        total, uncompressed, digest = struct.unpack("<IIQ", window.read(8, 16))
        header = 24
    elif version == 3:
        total, uncompressed, digest = struct.unpack("<QQQ", window.read(8, 24))
        header = 32
    else:
        raise BundleError(f"{where}: unsupported format version {version}")
    if method not in METHOD_NAMES:
        raise BundleError(f"{where}: unknown compression method {method}")
    if total is not None and not header < total <= window.size:
        raise BundleError(f"{where}: its total size {total} does not fit in the {window.size} bytes left")
    data = window.sub(header, (total if total is not None else window.size) - header)
    budget.spend_inflate(uncompressed, where)
    inflate = _inflate_zlib if method == ZLIB else _inflate_zstd
    head, produced, md5, consumed = inflate(data, uncompressed, where)
    if produced != uncompressed:
        raise BundleError(f"{where}: it declares {uncompressed} uncompressed bytes but holds {produced}")
    if struct.unpack("<Q", md5[:8])[0] != digest:
        raise BundleError(f"{where}: the hash of its contents does not match its header")
    if head[: len(PLAIN_MAGIC)] != PLAIN_MAGIC:
        raise BundleError(f"{where}: its contents are not an offload bundle")

    def read_head(offset: int, length: int) -> bytes:
        if offset + length > len(head):
            raise BundleError(f"{where}: its inner header is larger than {_MAX_HEADER} bytes")
        return head[offset : offset + length]

    entries, _ = _parse_plain_header(read_head, uncompressed, where, budget)
    length = total if total is not None else header + consumed
    return Bundle(at, length, tuple(entries), METHOD_NAMES[method], version)


_Inflated = tuple[bytes, int, bytes, int]  # first bytes, bytes produced, md5, bytes consumed


def _inflate_zlib(data: Window, limit: int, where: str) -> _Inflated:
    decompressor = zlib.decompressobj()
    md5 = hashlib.md5(usedforsecurity=False)
    head = bytearray()
    produced = fed = 0
    try:
        for chunk in data.chunks(chunk_size=_CHUNK):
            fed += len(chunk)
            pending = chunk
            while not decompressor.eof:
                out = decompressor.decompress(pending, _CHUNK)
                pending = decompressor.unconsumed_tail
                produced = _take(out, produced, limit, head, md5, where)
                if not out and not pending:
                    break  # this chunk is used up: read the next one
            if decompressor.eof:
                break
    except zlib.error as exc:
        raise BundleError(f"{where}: zlib data is corrupt ({exc})") from None
    if not decompressor.eof:
        raise BundleError(f"{where}: its zlib stream is truncated")
    return bytes(head), produced, md5.digest(), fed - len(decompressor.unused_data)


def _inflate_zstd(data: Window, limit: int, where: str) -> _Inflated:
    consumed = _zstd_frame_length(data, where)
    md5 = hashlib.md5(usedforsecurity=False)
    head = bytearray()
    produced = 0
    reader = zstandard.ZstdDecompressor().stream_reader(
        cast("IO[bytes]", _WindowReader(data.sub(0, consumed))), read_across_frames=False
    )
    try:
        while True:
            out = reader.read(_CHUNK)
            if not out:
                break
            produced = _take(out, produced, limit, head, md5, where)
    except zstandard.ZstdError as exc:
        raise BundleError(f"{where}: zstd data is corrupt ({exc})") from None
    return bytes(head), produced, md5.digest(), consumed


def _take(out: bytes, produced: int, limit: int, head: bytearray, md5: hashlib._Hash, where: str) -> int:
    produced += len(out)
    if produced > limit:
        raise BundleError(f"{where}: it inflates past the {limit} bytes it declares")
    md5.update(out)
    if len(head) < _MAX_HEADER:
        head += out[: _MAX_HEADER - len(head)]
    return produced


def _zstd_frame_length(data: Window, where: str) -> int:
    """Length of the zstd frame at the start of `data`, walked block by block (RFC 8878)."""
    try:
        magic, descriptor = struct.unpack("<IB", data.read(0, 5))
        if magic != _ZSTD_MAGIC:
            raise BundleError(f"{where}: its data is not a zstd frame")
        single_segment = descriptor >> 5 & 1
        size_flag = descriptor >> 6
        dict_flag = descriptor & 3
        position = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
        position += (1 if single_segment else 0, 2, 4, 8)[size_flag]
        while True:
            raw = data.read(position, 3)
            block = raw[0] | raw[1] << 8 | raw[2] << 16
            last, block_type, size = block & 1, block >> 1 & 3, block >> 3
            if block_type == 3:
                raise BundleError(f"{where}: zstd frame has a reserved block type")
            position += 3 + (1 if block_type == 1 else size)
            if position > data.size:
                raise OutOfBounds("zstd block runs past the data")
            if last:
                break
        if descriptor >> 2 & 1:  # content checksum
            position += 4
        if position > data.size:
            raise OutOfBounds("zstd checksum runs past the data")
        return position
    except OutOfBounds as exc:
        raise BundleError(f"{where}: its zstd frame is truncated ({exc})") from None


class _WindowReader:
    """A minimal readable file object over a Window, for zstandard's stream_reader."""

    def __init__(self, window: Window) -> None:
        self._window = window
        self._position = 0

    def read(self, size: int = -1) -> bytes:
        remaining = self._window.size - self._position
        length = remaining if size < 0 else min(size, remaining)
        if length <= 0:
            return b""
        data = self._window.read(self._position, length)
        self._position += length
        return data


@dataclass(frozen=True)
class CudaEntry:
    kind: str  # "cubin" | "ptx" | "other"
    sm: int

    @property
    def arch(self) -> str:
        return f"{'compute' if self.kind == 'ptx' else 'sm'}_{self.sm}"


def read_cuda_fatbin(section: Window) -> list[CudaEntry]:
    """The entries of the CUDA fatbin containers in a `.nv_fatbin` section."""
    return list(_cuda_entries(section))


def _cuda_entries(section: Window) -> Iterator[CudaEntry]:
    position = section.first_nonzero(0)
    try:
        while position < section.size:
            magic, _version, header_size, payload = struct.unpack("<IHHQ", section.read(position, 16))
            if magic != CUDA_FATBIN_MAGIC:
                raise BundleError(f"unknown data at offset {position:#x} of .nv_fatbin")
            if header_size < 16:
                raise BundleError(f"fatbin at offset {position:#x} has a header of {header_size}")
            entry = position + header_size
            end = entry + payload
            if end > section.size:
                raise OutOfBounds(f"fatbin at offset {position:#x} runs past the section")
            while entry + 32 <= end:
                kind, _v, entry_header, entry_size = struct.unpack("<HHIQ", section.read(entry, 16))
                (sm,) = struct.unpack("<I", section.read(entry + 28, 4))
                if entry_header < 32:
                    raise BundleError(f"fatbin entry at offset {entry:#x} is malformed")
                yield CudaEntry({1: "ptx", 2: "cubin"}.get(kind, "other"), sm)
                entry += entry_header + entry_size
            position = section.first_nonzero(end)
    except OutOfBounds as exc:
        raise BundleError(f".nv_fatbin is truncated: {exc}") from None

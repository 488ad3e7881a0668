"""The bundle reader on bundles written byte by byte: every format, and every lie."""

import io
import struct

import pytest

from bot.core.wheel.binwindow import Window
from bot.core.wheel.offload import BundleError, parse_entry_id, read_bundles
from tests.fixtures.bundles import aligned, compressed_bundle, hip_entries, plain_bundle


def read(data: bytes) -> list:
    return read_bundles(Window(io.BytesIO(data), 0, len(data)))


def targets(data: bytes) -> list[list[str]]:
    return [[str(e.target) for e in b.entries if e.target] for b in read(data)]


def test_plain_bundle() -> None:
    bundles = read(plain_bundle(hip_entries("gfx942", "gfx90a:xnack-")))
    assert len(bundles) == 1 and bundles[0].compression is None
    assert [str(e.target) for e in bundles[0].entries if e.target] == ["gfx942", "gfx90a:xnack-"]
    assert bundles[0].entries[0].target is None and bundles[0].entries[0].kind == "host"


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("method", ["zlib", "zstd"])
def test_compressed_bundle_every_version_and_method(version: int, method: str) -> None:
    inner = plain_bundle(hip_entries("gfx950", "gfx1201"))
    (bundle,) = read(compressed_bundle(inner, version=version, method=method))
    assert (bundle.compression, bundle.format_version) == (method, version)
    assert [str(e.target) for e in bundle.entries if e.target] == ["gfx950", "gfx1201"]


def test_several_bundles_back_to_back_mixed() -> None:
    section = (
        aligned(
            plain_bundle(hip_entries("gfx942")),
            compressed_bundle(plain_bundle(hip_entries("gfx950")), version=1, method="zstd"),
            compressed_bundle(plain_bundle(hip_entries("gfx90a")), version=1, method="zlib"),
            compressed_bundle(plain_bundle(hip_entries("gfx1100")), version=3, method="zstd"),
            plain_bundle(hip_entries("gfx1030")),
        )
        + b"\0" * 100
    )
    assert targets(section) == [["gfx942"], ["gfx950"], ["gfx90a"], ["gfx1100"], ["gfx1030"]]
    offsets = [b.offset for b in read(section)]
    assert offsets == [0, 4096, 8192, 12288, 16384]


def test_empty_section_has_no_bundles() -> None:
    assert read(b"") == [] and read(b"\0" * 8192) == []


@pytest.mark.parametrize(
    ("entry_id", "kind", "target"),
    [
        ("hipv4-amdgcn-amd-amdhsa--gfx942", "hipv4", "gfx942"),
        ("hip-amdgcn-amd-amdhsa-gfx906", "hip", "gfx906"),
        ("hipv4-amdgcn-amd-amdhsa--gfx9-4-generic:xnack-", "hipv4", "gfx9-4-generic:xnack-"),
        ("openmp-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+", "openmp", "gfx90a:sramecc+:xnack+"),
        ("host-x86_64-unknown-linux-gnu-", "host", None),
        ("host-x86_64-unknown-linux--", "host", None),
    ],
)
def test_entry_ids(entry_id: str, kind: str, target: str | None) -> None:
    entry = parse_entry_id(entry_id)
    assert entry.kind == kind
    assert (str(entry.target) if entry.target else None) == target


def corrupt_count(data: bytes, count: int) -> bytes:
    return data[:24] + struct.pack("<Q", count) + data[32:]


def corrupt_first_entry(
    data: bytes, *, offset: int | None = None, size: int | None = None, id_length: int | None = None
) -> bytes:
    old_offset, old_size, old_length = struct.unpack_from("<QQQ", data, 32)
    fields = struct.pack(
        "<QQQ",
        old_offset if offset is None else offset,
        old_size if size is None else size,
        old_length if id_length is None else id_length,
    )
    return data[:32] + fields + data[56:]


GOOD = plain_bundle(hip_entries("gfx942"))
INNER = plain_bundle(hip_entries("gfx942"))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (corrupt_count(GOOD, 0), "entry count 0"),
        (corrupt_count(GOOD, 1 << 40), "does not fit"),
        (corrupt_first_entry(GOOD, size=1 << 20), "runs past"),
        (corrupt_first_entry(GOOD, offset=1 << 40), "runs past"),
        (corrupt_first_entry(GOOD, id_length=1 << 30), "runs past"),
        (GOOD[:40], "does not fit|truncated"),
        (b"NOTABUNDLE" + b"\0" * 40, "unknown data"),
        (aligned(GOOD, b"garbage"), "unknown data at offset 0x1000"),
        (compressed_bundle(INNER, declared_size=len(INNER) - 1), "inflates past"),
        (compressed_bundle(INNER, declared_size=len(INNER) + 1), "holds"),
        (compressed_bundle(INNER, version=1, method="zlib", declared_size=len(INNER) + 7), "holds"),
        (compressed_bundle(INNER, digest=12345), "hash"),
        (compressed_bundle(INNER, version=9), "unsupported format version 9"),
        (compressed_bundle(INNER)[:-10], "does not fit"),
        (compressed_bundle(INNER)[:8] + struct.pack("<I", 1 << 30) + compressed_bundle(INNER)[12:], "total size"),
        (compressed_bundle(INNER)[:6] + b"\x07\x00" + compressed_bundle(INNER)[8:], "unknown compression method 7"),
        (compressed_bundle(b"not a bundle at all, just bytes"), "not an offload bundle"),
        (compressed_bundle(INNER, version=1, method="zlib")[:-5], "truncated"),
    ],
)
def test_malformed_bundles_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(BundleError, match=message):
        read(data)


def test_compressed_zlib_corrupt_stream() -> None:
    data = bytearray(compressed_bundle(INNER, method="zlib"))
    data[30:40] = b"\xff" * 10
    with pytest.raises(BundleError, match="corrupt|hash|holds"):
        read(bytes(data))

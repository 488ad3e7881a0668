"""Bad input: every way a file can fail to be a wheel gets one clear InputError."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.core.errors import InputError
from bot.core.wheel.archive import ArchiveLimits
from bot.core.wheel.report import inspect_wheel, read_wheel_metadata
from tests.fixtures.wheels import build_wheel

METADATA = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"


def raw_zip(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


def good_members(extra: Sequence[tuple[str, bytes]] = ()) -> list[tuple[str, bytes]]:
    return [
        ("demo/__init__.py", b"x = 1\n"),
        ("demo-1.0.dist-info/METADATA", METADATA),
        ("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nTag: py3-none-any\n"),
        *extra,
    ]


def fails(path: Path, message: str, **kwargs: object) -> None:
    with pytest.raises(InputError, match=message) as caught:
        inspect_wheel(path, **kwargs)  # type: ignore[arg-type]
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    path.write_text("hello")
    fails(path, "not a readable zip archive")


def test_truncated_zip(tmp_path: Path) -> None:
    good = build_wheel(tmp_path / "g", name="demo", version="1.0", files={"demo/a.py": b"a" * 5000})
    path = tmp_path / good.name
    path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    fails(path, "not a readable zip archive")


def test_corrupt_member_data(tmp_path: Path) -> None:
    import os

    good = build_wheel(tmp_path / "g", name="demo", version="1.0", files={"demo/a.py": os.urandom(20000)})
    data = bytearray(good.read_bytes())
    data[200:400] = bytes(200)
    path = tmp_path / good.name
    path.write_bytes(bytes(data))
    fails(path, "corrupt|does not match")


def test_member_lies_about_its_size(tmp_path: Path) -> None:
    """The central directory declares fewer bytes than the member inflates to."""
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members([("demo/big.py", b"y" * 100_000)]))
    data = bytearray(path.read_bytes())
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(b"demo/big.py"))
    # uncompressed size lives 24 bytes into a central directory entry
    struct.pack_into("<I", data, central + 24, 1000)
    path.write_bytes(bytes(data))
    fails(path, "corrupt|declares")


def test_zip_bomb_by_ratio(tmp_path: Path) -> None:
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members([("demo/zeros.bin", bytes(32 << 20))]))
    fails(path, "compression ratio")


def test_zip_bomb_by_total_size(tmp_path: Path) -> None:
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members([("demo/data.bin", b"z" * 5000)]))
    fails(path, "uncompressed bytes", limits=ArchiveLimits(max_total_uncompressed=4000))


def test_overlapping_entries(tmp_path: Path) -> None:
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members())
    data = bytearray(path.read_bytes())
    # point the second central entry at the first member's local header
    entries = [i for i in range(len(data)) if data[i : i + 4] == b"PK\x01\x02"]
    struct.pack_into("<I", data, entries[1] + 42, 0)
    path.write_bytes(bytes(data))
    fails(path, "overlap")


@pytest.mark.parametrize(
    "name", ["../evil.py", "/etc/evil.py", "demo/../../evil.py", "C:/evil.py", "demo\\..\\evil.py"]
)
def test_member_names_that_escape(tmp_path: Path, name: str) -> None:
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members([(name, b"x")]))
    fails(path, "escapes the archive's root")


def test_duplicate_member(tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members([("demo/__init__.py", b"again")]))
    fails(path, "appears twice")


def test_missing_metadata(tmp_path: Path) -> None:
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", [("demo/__init__.py", b"")])
    fails(path, "no \\*.dist-info/METADATA")


def test_two_metadata_files(tmp_path: Path) -> None:
    path = raw_zip(tmp_path / "demo-1.0-py3-none-any.whl", good_members([("other-2.0.dist-info/METADATA", METADATA)]))
    fails(path, "several \\*.dist-info/METADATA")


def test_metadata_without_version(tmp_path: Path) -> None:
    path = raw_zip(
        tmp_path / "demo-1.0-py3-none-any.whl",
        [("demo-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: demo\n")],
    )
    fails(path, "METADATA is malformed")


@pytest.mark.parametrize("name", ["demo.zip", "demo-1.0.whl", "demo-notaversion-py3-none-any.whl"])
def test_file_name_that_is_not_a_wheel_name(tmp_path: Path, name: str) -> None:
    path = raw_zip(tmp_path / name, good_members())
    fails(path, "not a wheel file name")
    with pytest.raises(InputError):
        read_wheel_metadata(path)


def test_missing_file(tmp_path: Path) -> None:
    fails(tmp_path / "demo-1.0-py3-none-any.whl", "no such file")


def test_broken_elf(tmp_path: Path) -> None:
    path = build_wheel(
        tmp_path,
        name="demo",
        version="1.0",
        tag="cp312-cp312-linux_x86_64",
        files={"demo/_c.so": b"\x7fELF" + b"\x02\x01\x01" + b"\xff" * 200},
    )
    fails(path, "demo/_c.so is not a readable ELF file")


def _patched_library(source: Path, patch: bytes, find: bytes, offset: int) -> bytes:
    data = bytearray(source.read_bytes())
    at = data.find(find)
    assert at >= 0
    data[at + offset : at + offset + len(patch)] = patch
    return bytes(data)


def test_bundle_count_past_section(tmp_path: Path, hip_artifacts) -> None:  # type: ignore[no-untyped-def]
    library = _patched_library(hip_artifacts.plain_library, struct.pack("<Q", 1 << 30), b"__CLANG_OFFLOAD_BUNDLE__", 24)
    path = build_wheel(
        tmp_path, name="demo", version="1.0", tag="cp312-cp312-linux_x86_64", files={"demo/_c.so": library}
    )
    fails(path, r"demo/_c.so: \.hip_fatbin: .*entry count")


def test_bundle_offset_past_section(tmp_path: Path, hip_artifacts) -> None:  # type: ignore[no-untyped-def]
    library = _patched_library(hip_artifacts.plain_library, struct.pack("<Q", 1 << 40), b"__CLANG_OFFLOAD_BUNDLE__", 32)
    path = build_wheel(
        tmp_path, name="demo", version="1.0", tag="cp312-cp312-linux_x86_64", files={"demo/_c.so": library}
    )
    fails(path, "runs past")


def test_compressed_bundle_lying_about_its_size(tmp_path: Path, hip_artifacts) -> None:  # type: ignore[no-untyped-def]
    data = hip_artifacts.compressed_library.read_bytes()
    at = data.find(b"CCOB")
    (declared,) = struct.unpack_from("<I", data, at + 12)
    library = _patched_library(hip_artifacts.compressed_library, struct.pack("<I", declared // 2), b"CCOB", 12)
    path = build_wheel(
        tmp_path, name="demo", version="1.0", tag="cp312-cp312-linux_x86_64", files={"demo/_c.so": library}
    )
    fails(path, "inflates past")


def test_member_that_does_not_match_record_is_a_problem(tmp_path: Path) -> None:
    """A readable wheel whose member was swapped after RECORD was written: exit 1, not 2."""
    good = build_wheel(tmp_path / "g", name="demo", version="1.0", files={"demo/a.py": b"a = 1\n"})
    with zipfile.ZipFile(good) as archive:
        members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    swapped = [(name, b"a = 2\n" if name == "demo/a.py" else data) for name, data in members]
    swapped.append(("demo/extra.py", b""))
    report = inspect_wheel(raw_zip(tmp_path / good.name, swapped))
    assert report.integrity == (
        "demo/a.py does not match its RECORD hash or size",
        "demo/extra.py is not listed in RECORD",
    )


def test_wheel_with_mismatched_metadata_name(tmp_path: Path) -> None:
    path = raw_zip(tmp_path / "other-1.0-py3-none-any.whl", good_members())
    report = inspect_wheel(path)
    assert "METADATA names 'demo' but the file name says 'other'" in report.integrity

"""Wheel file names, versions and dist-info text files, through `packaging`."""

from __future__ import annotations

import pytest
from packaging.version import Version

from bot.core.wheel.metadata import WheelName, dist_info_matches, parse_metadata, parse_record

LMCACHE = (
    "lmcache-0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1-cp312-cp312-manylinux_2_39_x86_64.whl"
)


@pytest.mark.parametrize(
    ("filename", "name", "version", "build", "tags"),
    [
        (
            LMCACHE,
            "lmcache",
            "0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1",
            (),
            ["cp312-cp312-manylinux_2_39_x86_64"],
        ),
        (
            "mooncake_transfer_engine_rocm-0.3.13.post1-cp310-cp310-manylinux_2_35_x86_64.whl",
            "mooncake-transfer-engine-rocm",
            "0.3.13.post1",
            (),
            ["cp310-cp310-manylinux_2_35_x86_64"],
        ),
        (
            "cupy_rocm_7_0-14.2.0-cp311-cp311-manylinux2014_x86_64.whl",
            "cupy-rocm-7-0",
            "14.2.0",
            (),
            ["cp311-cp311-manylinux2014_x86_64"],
        ),
        (
            "lmcache-0.5.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "lmcache",
            "0.5.6",
            (),
            ["cp311-cp311-manylinux_2_27_x86_64", "cp311-cp311-manylinux_2_28_x86_64"],
        ),
        ("demo-1.0-1build-py2.py3-none-any.whl", "demo", "1.0", (1, "build"), ["py2-none-any", "py3-none-any"]),
        (
            "torch-2.10.0a0+git3d3aa83-cp312-cp312-linux_x86_64.whl",
            "torch",
            "2.10.0a0+git3d3aa83",
            (),
            ["cp312-cp312-linux_x86_64"],
        ),
    ],
)
def test_wheel_names(filename: str, name: str, version: str, build: tuple, tags: list[str]) -> None:  # type: ignore[type-arg]
    parsed = WheelName.parse(filename)
    assert parsed.name == name and parsed.version == Version(version)
    assert parsed.build == build and parsed.tag_strings == tags


def test_local_version_parts() -> None:
    version = WheelName.parse(LMCACHE).version
    assert version.public == "0.5.6.dev98"
    assert version.local == "g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"
    assert version.is_devrelease and version.is_prerelease


@pytest.mark.parametrize(
    "filename",
    [
        "demo.whl",
        "demo-1.0.whl",
        "demo-1.0-py3-none.whl",
        "demo-x.y-py3-none-any.whl",
        "demo-1.0-py3-none-any.zip",
        "de mo-1.0-py3-none-any.whl",
    ],
)
def test_bad_wheel_names(filename: str) -> None:
    with pytest.raises(ValueError, match="is not a wheel file name"):
        WheelName.parse(filename)


@pytest.mark.parametrize(
    ("folder", "matches"),
    [
        ("lmcache-0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1.dist-info", True),
        ("LMCache-0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1.dist-info", True),
        ("lmcache-0.5.6.dist-info", False),
        ("other-0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1.dist-info", False),
    ],
)
def test_dist_info_folder(folder: str, matches: bool) -> None:
    assert dist_info_matches(folder, WheelName.parse(LMCACHE)) is matches


def test_metadata_keeps_requirements_as_written() -> None:
    metadata = parse_metadata(
        b"Metadata-Version: 2.1\nName: LMCache\nVersion: 0.5.6\nRequires-Python: >=3.10\n"
        b"Requires-Dist: numpy <=2.2.6\nRequires-Dist: redis ; extra == 'redis'\n\nlong text\n"
    )
    assert metadata.name == "LMCache" and metadata.version == "0.5.6"
    assert metadata.requires_dist == ("numpy <=2.2.6", "redis ; extra == 'redis'")
    assert metadata.requires_python == ">=3.10"


def test_record_rows() -> None:
    record = parse_record(b"a.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\nx.dist-info/RECORD,,\n")
    assert record["a.py"].algorithm == "sha256" and record["a.py"].size == 0
    assert record["x.dist-info/RECORD"].digest is None
    with pytest.raises(ValueError):
        parse_record(b"only,two\n")

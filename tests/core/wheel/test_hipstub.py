"""The demo's stub HIP library read by LLVM's own tools and by clang-19's output side by
side: llvm-readelf takes the library and each code object, clang-offload-bundler lists
its bundle, and wheelpin's reader finds what the tools find."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pytest

from bot.core.wheel.elf import read_elf
from bot.core.wheel.hipstub import code_object, hip_library
from tests.conftest import HipArtifacts
from tests.fixtures import hip

ARCHS = ["gfx942", "gfx950"]


def readelf(path: Path, *options: str) -> str:
    done = subprocess.run([hip.tool("llvm-readelf"), *options, str(path)], capture_output=True, text=True, check=True)
    assert "warning" not in done.stderr.lower(), done.stderr
    return done.stdout


def header_fields(path: Path) -> dict[str, str]:
    """llvm-readelf -h's fields a code object is judged by."""
    wanted = ("OS/ABI", "ABI Version", "Type", "Machine", "Version", "Flags")
    fields = dict(line.strip().split(":", 1) for line in readelf(path, "-h").splitlines() if ":" in line)
    return {key: fields[key].strip() for key in wanted}


def code_objects(fatbin: bytes) -> dict[str, bytes]:
    """The entries of a plain bundle, read by its documented layout (ClangOffloadBundler)."""
    (count,) = struct.unpack_from("<Q", fatbin, 24)
    found, position = {}, 32
    for _ in range(count):
        offset, size, length = struct.unpack_from("<QQQ", fatbin, position)
        entry_id = fatbin[position + 24 : position + 24 + length].decode()
        position += 24 + length
        found[entry_id] = fatbin[offset : offset + size]
    return found


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stub") / "_demo_hip.so"
    path.write_bytes(hip_library(soname="_demo_hip.so", needed=["libamdhip64.so.7"], targets=ARCHS))
    return path


def test_llvm_readelf_reads_the_library_its_dynamic_section_and_sections(library: Path) -> None:
    out = readelf(library, "-h", "-l", "-d", "-S")
    assert "Type:                              DYN (Shared object file)" in out
    assert "Machine:                           Advanced Micro Devices X86-64" in out
    assert re.search(r"\(NEEDED\)\s+Shared library: \[libamdhip64\.so\.7\]", out), out
    assert "Library soname: [_demo_hip.so]" in out
    assert " .hip_fatbin " in out and " DYNAMIC " in out and " LOAD " in out


def test_clang_offload_bundler_lists_and_unbundles_its_code_objects(library: Path, tmp_path: Path) -> None:
    fatbin = hip.dump_fatbin(library, tmp_path)
    assert sorted(hip.bundler_list(fatbin)) == [
        "hipv4-amdgcn-amd-amdhsa--gfx942",
        "hipv4-amdgcn-amd-amdhsa--gfx950",
        "host-x86_64-unknown-linux--",
    ]
    unbundled = tmp_path / "gfx942.co"
    subprocess.run(
        [
            hip.tool("clang-offload-bundler"),
            "--unbundle",
            "--type=o",
            f"--input={fatbin}",
            "--targets=hipv4-amdgcn-amd-amdhsa--gfx942",
            f"--output={unbundled}",
        ],
        check=True,
    )
    assert unbundled.read_bytes() == code_object("gfx942")
    # clang-19's bundler predates gfx950 and will not unbundle it by name: read by offset
    objects = code_objects(fatbin.read_bytes())
    assert objects["host-x86_64-unknown-linux--"] == b""
    for arch, flags in (("gfx942", "0x54C, gfx942, xnack, sramecc"), ("gfx950", "0x54F, xnack, sramecc")):
        path = tmp_path / f"{arch}.o"
        path.write_bytes(objects[f"hipv4-amdgcn-amd-amdhsa--{arch}"])
        # llvm-readelf 19 names gfx942's EF_AMDGPU_MACH (0x04c) but not gfx950's (0x04f, LLVM 20)
        assert header_fields(path)["Flags"] == flags
        assert header_fields(path)["Machine"] == "EM_AMDGPU"
        # s_endpgm is encoded alike on both (gfx950 is gfx942's successor, unknown to llvm-objdump 19)
        disassembly = subprocess.run(
            [hip.tool("llvm-objdump"), "-d", "--mcpu=gfx942", str(path)], capture_output=True, text=True, check=True
        ).stdout
        assert "s_endpgm" in disassembly


def test_a_code_object_has_the_header_clang_19_writes(hip_artifacts: HipArtifacts, tmp_path: Path) -> None:
    """clang-19 (code object v5 by default) for gfx942 and for gfx90a, side by side with the stub's."""
    fatbin = hip.dump_fatbin(hip_artifacts.plain_objects["k90a"], tmp_path)  # gfx90a:xnack- and gfx942
    real = code_objects(fatbin.read_bytes())["hipv4-amdgcn-amd-amdhsa--gfx942"]
    (tmp_path / "real.o").write_bytes(real)
    (tmp_path / "stub.o").write_bytes(code_object("gfx942"))
    assert header_fields(tmp_path / "stub.o") == header_fields(tmp_path / "real.o")
    assert (
        header_fields(tmp_path / "real.o")["ABI Version"] == "3"
        and header_fields(tmp_path / "real.o")["OS/ABI"] == "AMDGPU - HSA"
    )


def test_wheelpin_reads_what_the_tools_read(library: Path) -> None:
    with library.open("rb") as stream:
        report = read_elf(stream, library.stat().st_size, "demo_cache/_demo_hip.so")
    assert report.gpu == "hip" and report.archs == ("gfx942", "gfx950") and report.targets == ("gfx942", "gfx950")
    assert report.needed == ("libamdhip64.so.7",) and report.soname == "_demo_hip.so" and report.bundles == 1


@pytest.mark.parametrize("target", ["gfx90a:xnack-", "gfx1100", "gfx9500"])
def test_a_target_the_stub_cannot_write_is_refused(target: str) -> None:
    with pytest.raises(ValueError):
        code_object(target)

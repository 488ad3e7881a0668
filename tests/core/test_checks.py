"""The verify rules, on a wheel holding real clang-19 HIP libraries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.core.amdgpu import TargetId
from bot.core.checks import WheelRules, problems
from bot.core.elf import ElfReport
from bot.core.inspect import WheelReport, inspect_wheel
from tests.fixtures.wheels import build_wheel

COMMIT = "05fc77a0d1c2b3a4e5f60718293a4b5c6d7e8f90"


@pytest.fixture(scope="module")
def report(rocm_wheel: Path) -> WheelReport:
    return inspect_wheel(rocm_wheel)


def rules(**kwargs: object) -> WheelRules:
    if "require_archs" in kwargs:
        kwargs["require_archs"] = tuple(TargetId.parse(a) for a in kwargs["require_archs"])  # type: ignore[union-attr]
    return WheelRules(**kwargs)  # type: ignore[arg-type]


def test_report_of_a_rocm_wheel(report: WheelReport) -> None:
    assert report.name == "lmcache"
    assert report.version == "0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"
    assert report.tags == ("cp312-cp312-manylinux_2_39_x86_64",)
    assert report.archs == ["gfx90a", "gfx942", "gfx1100"]
    assert [elf.bundles for elf in report.elf] == [3, 3]
    assert report.integrity == () and problems(report, WheelRules()) == []


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"require_archs": ["gfx942"]}, []),
        ({"require_archs": ["gfx942", "gfx90a"]}, []),
        ({"require_archs": ["gfx950"]}, ["has no code for gfx950"] * 2),
        # both libraries hold gfx90a only as xnack-: code for xnack+ is missing
        ({"require_archs": ["gfx90a:xnack+"]}, ["has no code for gfx90a:xnack+"] * 2),
        ({"require_archs": ["gfx90a:xnack-"]}, []),
        ({"expect_name": "LMCache"}, []),
        ({"expect_name": "lmcache-rocm"}, ["distribution is 'lmcache', expected 'lmcache-rocm'"]),
        ({"expect_commit": COMMIT}, []),
        ({"expect_commit": COMMIT[:8]}, []),
        ({"expect_commit": "3d3aa833"}, ["does not carry commit g3d3aa833"]),  # torch's git3d3aa833
        ({"expect_commit": "deadbeef00"}, ["does not carry commit gdeadbeef"]),
        ({"require_needed": ["libm.so*"]}, []),
        ({"require_needed": ["libamdhip64*"]}, ["no ELF file in the wheel needs a library matching libamdhip64*"]),
        ({"forbid_needed": ["libm.so*"]}, ["needs libm.so.6, a forbidden library"] * 2),
    ],
)
def test_rules(report: WheelReport, kwargs: dict[str, object], expected: list[str]) -> None:
    found = problems(report, rules(**kwargs))
    assert len(found) == len(expected)
    for problem, fragment in zip(found, expected):
        assert fragment in problem


def test_expect_commit_must_be_hex(report: WheelReport) -> None:
    with pytest.raises(ValueError, match="8 to 40 hex digits"):
        WheelRules(expect_commit="05fc77")


def test_versions_without_commit(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, name="mooncake-transfer-engine-rocm", version="0.3.13.post1",
                        files={"mooncake/__init__.py": b""})
    found = problems(inspect_wheel(wheel), WheelRules(expect_commit=COMMIT))
    assert found == [f"version 0.3.13.post1 carries no commit (expected g{COMMIT[:8]})"]


def test_names_normalise_but_cuda_name_differs(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, name="mooncake-transfer-engine-rocm", version="0.3.13.post1",
                        files={"mooncake/__init__.py": b""})
    report = inspect_wheel(wheel)
    assert problems(report, WheelRules(expect_name="mooncake_transfer_engine_rocm")) == []
    assert problems(report, WheelRules(expect_name="Mooncake.Transfer.Engine.ROCm")) == []
    assert problems(report, WheelRules(expect_name="mooncake-transfer-engine")) != []


def test_pure_python_wheel_passes_the_rocm_check_but_not_an_arch(tmp_path: Path) -> None:
    report = inspect_wheel(build_wheel(tmp_path, name="demo", version="1.0",
                                       files={"demo/__init__.py": b""}))
    assert problems(report, WheelRules()) == []
    assert problems(report, rules(require_archs=["gfx942"])) == [
        "no HIP device code found, but gfx942 is required"]


def fake_elf(**kwargs: object) -> ElfReport:
    base = ElfReport(path="pkg/_c.so", needed=(), gpu=None, targets=(), archs=(), bundles=0,
                     compressed_bundles=0)
    return replace(base, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("library", ["libcudart.so.13", "libcuda.so.1", "libnvrtc.so.12",
                                     "libcublasLt.so.12", "libtorch_cuda.so", "libc10_cuda.so"])
def test_cuda_libraries_are_problems(report: WheelReport, library: str) -> None:
    cuda = replace(report, elf=(fake_elf(needed=(library,)),))
    (found,) = problems(cuda, WheelRules())
    assert f"needs {library}, a CUDA library" in found
    assert problems(cuda, WheelRules(rocm=False)) == []


def test_rocm_torch_libraries_are_fine(report: WheelReport) -> None:
    rocm = replace(report, elf=(fake_elf(needed=("libtorch_hip.so", "libc10_hip.so", "libamdhip64.so.7")),))
    assert problems(rocm, WheelRules(require_needed=("libamdhip64*",))) == []


def test_generic_code_serves_its_family(report: WheelReport) -> None:
    generic = replace(report, elf=(fake_elf(gpu="hip", targets=("gfx9-4-generic",), archs=("gfx9-4-generic",)),))
    assert problems(generic, rules(require_archs=["gfx942", "gfx950"])) == []
    assert len(problems(generic, rules(require_archs=["gfx90a"]))) == 1

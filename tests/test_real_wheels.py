"""`wheelpin wheel inspect` on real PyPI wheels: a ROCm library wheel, a ROCm wheel with
no device code, and the CUDA build of LMCache that a ROCm image must refuse."""

from __future__ import annotations

from pathlib import Path

from tests.cli import wheelpin

CUPY_ARCHS = ["gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201"]


def test_cupy_rocm_reports_every_arch(cupy_wheel: Path) -> None:
    result = wheelpin("wheel", "inspect", str(cupy_wheel), "--json", *(f"--require-arch={arch}" for arch in CUPY_ARCHS))
    assert result.code == 0, result.stdout + result.stderr
    report = result.json()
    assert report["archs"] == CUPY_ARCHS
    assert report["name"] == "cupy-rocm-7-0" and report["version"] == "14.2.0"
    hip = [elf for elf in report["elf"] if elf["gpu"] == "hip"]
    assert hip and all(elf["archs"] == CUPY_ARCHS for elf in hip)
    assert any(any(n.startswith("libamdhip64") for n in elf["needed"]) for elf in hip)
    assert report["problems"] == [] and report["cuda_archs"] == []
    assert len(report["sha256"]) == 64 and report["size"] == cupy_wheel.stat().st_size


def test_cupy_rocm_lacks_gfx1151(cupy_wheel: Path) -> None:
    result = wheelpin("wheel", "inspect", str(cupy_wheel), "--json", "--require-arch", "gfx1151")
    assert result.code == 1
    problems = result.json()["problems"]
    assert problems and all("has no code for gfx1151" in p for p in problems)


def test_mooncake_rocm_needs_hip_and_has_no_device_code(mooncake_wheel: Path) -> None:
    result = wheelpin(
        "wheel",
        "inspect",
        str(mooncake_wheel),
        "--json",
        "--expect-name",
        "mooncake_transfer_engine_rocm",
        "--require-needed",
        "libamdhip64*",
        "--require-needed",
        "libhsa-runtime64*",
    )
    assert result.code == 0, result.stdout + result.stderr
    report = result.json()
    assert report["archs"] == [] and all(elf["gpu"] is None for elf in report["elf"])
    needed = {name for elf in report["elf"] for name in elf["needed"]}
    assert any(name.startswith("libamdhip64") for name in needed)
    assert any(name.startswith("libhsa-runtime64") for name in needed)
    assert report["version"] == "0.3.13.post1" and report["local"] is None


def test_mooncake_is_not_the_cuda_distribution(mooncake_wheel: Path) -> None:
    result = wheelpin("wheel", "inspect", str(mooncake_wheel), "--json", "--expect-name", "mooncake-transfer-engine")
    assert result.code == 1
    assert result.json()["problems"] == [
        "distribution is 'mooncake-transfer-engine-rocm', expected 'mooncake-transfer-engine'"
    ]


def test_mooncake_fails_a_required_arch(mooncake_wheel: Path) -> None:
    result = wheelpin("wheel", "inspect", str(mooncake_wheel), "--json", "--require-arch", "gfx942")
    assert result.code == 1
    assert result.json()["problems"] == ["no HIP device code found, but gfx942 is required"]


def test_lmcache_from_pypi_is_a_cuda_build(lmcache_cuda_wheel: Path) -> None:
    result = wheelpin("wheel", "inspect", str(lmcache_cuda_wheel), "--json")
    assert result.code == 1
    report = result.json()
    cuda = [elf for elf in report["elf"] if elf["gpu"] == "cuda"]
    assert cuda and report["cuda_archs"] and report["archs"] == []
    assert any("libcudart.so.13" in elf["needed"] for elf in report["elf"])
    assert any("needs libcudart.so.13, a CUDA library" in p for p in report["problems"])
    assert any("carries CUDA device code" in p for p in report["problems"])
    # with the ROCm check off, the CUDA build is only a wheel like any other
    relaxed = wheelpin("wheel", "inspect", str(lmcache_cuda_wheel), "--json", "--no-rocm-check")
    assert relaxed.code == 0 and relaxed.json()["problems"] == []


def test_diff_between_real_wheels(cupy_wheel: Path, mooncake_wheel: Path) -> None:
    result = wheelpin("wheel", "diff", str(cupy_wheel), str(mooncake_wheel), "--json")
    assert result.code == 0
    diff = result.json()
    assert {c["name"] for c in diff["removed"]} >= {"numpy"}
    assert diff["conflicts"] == []


def test_the_refusal_of_a_cuda_build_is_read_root_cause_first(lmcache_cuda_wheel: Path) -> None:
    """LMCache's CUDA wheel where ATOM expects its ROCm build: dozens of problems, said in
    one line a person reads, the root cause first, every problem kept for --json."""
    from bot.core.checks.component import SUMMARY_LIMIT, check_wheels, summary
    from bot.core.checks.rules import WheelRules
    from bot.core.wheel.amdgpu import TargetId
    from bot.core.wheel.report import inspect_wheel

    rules = WheelRules(
        expect_name="lmcache-rocm", require_archs=(TargetId.parse("gfx942"),), require_needed=("libamdhip64*",)
    )
    problems = check_wheels(None, [inspect_wheel(lmcache_cuda_wheel)], rules)
    assert len(problems) >= 7
    line = summary(problems, wheels=1)
    assert line.startswith("distribution is 'lmcache', expected 'lmcache-rocm': a build of the non-ROCm variant")
    assert len(line) <= SUMMARY_LIMIT
    assert (
        "lmcache/cuda_ops.cpython-311-x86_64-linux-gnu.so needs libcudart.so.13, libc10_cuda.so, "
        "libtorch_cuda.so (CUDA libraries)"
    ) in line  # one ELF's CUDA libraries said once
    assert line.index("CUDA: ") < line.index("GPU archs: ") < line.index("libraries: ")
    cut = summary(problems, wheels=1, limit=300)
    assert len(cut) <= 300 and cut.endswith(f"({len(problems)} problems in all; --json lists every one)")

"""The verify rules, on a wheel holding real clang-19 HIP libraries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.core.checks.rules import WheelRules, problems
from bot.core.wheel.amdgpu import TargetId
from bot.core.wheel.elf import ElfReport
from bot.core.wheel.report import WheelReport, inspect_wheel
from bot.core.wheel.rocmlibs import library_of, rocm_library
from tests.cli import wheelpin
from tests.fixtures.consumerimages import hip_runtime, stub_library
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
    for problem, fragment in zip(found, expected, strict=True):
        assert fragment in problem


def test_expect_commit_must_be_hex(report: WheelReport) -> None:
    with pytest.raises(ValueError, match="8 to 40 hex digits"):
        WheelRules(expect_commit="05fc77")


def test_versions_without_commit(tmp_path: Path) -> None:
    wheel = build_wheel(
        tmp_path, name="mooncake-transfer-engine-rocm", version="0.3.13.post1", files={"mooncake/__init__.py": b""}
    )
    found = problems(inspect_wheel(wheel), WheelRules(expect_commit=COMMIT))
    assert found == [f"version 0.3.13.post1 carries no commit (expected g{COMMIT[:8]})"]


def test_names_normalise_but_cuda_name_differs(tmp_path: Path) -> None:
    wheel = build_wheel(
        tmp_path, name="mooncake-transfer-engine-rocm", version="0.3.13.post1", files={"mooncake/__init__.py": b""}
    )
    report = inspect_wheel(wheel)
    assert problems(report, WheelRules(expect_name="mooncake_transfer_engine_rocm")) == []
    assert problems(report, WheelRules(expect_name="Mooncake.Transfer.Engine.ROCm")) == []
    assert problems(report, WheelRules(expect_name="mooncake-transfer-engine")) != []


def test_pure_python_wheel_passes_the_rocm_check_but_not_an_arch(tmp_path: Path) -> None:
    report = inspect_wheel(build_wheel(tmp_path, name="demo", version="1.0", files={"demo/__init__.py": b""}))
    assert problems(report, WheelRules()) == []
    assert problems(report, rules(require_archs=["gfx942"])) == ["no HIP device code found, but gfx942 is required"]


def fake_elf(**kwargs: object) -> ElfReport:
    base = ElfReport(path="pkg/_c.so", needed=(), gpu=None, targets=(), archs=(), bundles=0, compressed_bundles=0)
    return replace(base, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "library",
    ["libcudart.so.13", "libcuda.so.1", "libnvrtc.so.12", "libcublasLt.so.12", "libtorch_cuda.so", "libc10_cuda.so"],
)
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


# -- ROCm's own libraries come from the image -------------------------------------------------

LIBS = "mooncake_transfer_engine_rocm.libs"
GRAFTED = "libamdhip64-5f3a9c1e.so.7"  # auditwheel's name: the library's, the file's sha256[:8]


def _vendoring_wheel(folder: Path, *, with_member: bool = True, version: str = "0.3.13.post1") -> Path:
    """Mooncake's wheel as `auditwheel repair` without `--exclude 'libamdhip64.so*'` leaves
    it: the HIP runtime copied into <name>.libs/ under a hashed name that is its SONAME, and
    the extension's DT_NEEDED rewritten to it, found through DT_RPATH."""
    runtime = stub_library(folder, GRAFTED, GRAFTED)
    engine = stub_library(folder, "engine.so", "engine.so", needed=[runtime], rpath=f"$ORIGIN/../{LIBS}")
    files = {"mooncake/__init__.py": b"", "mooncake/engine.so": engine.read_bytes()}
    if with_member:
        files[f"{LIBS}/{GRAFTED}"] = runtime.read_bytes()
    return build_wheel(
        folder / "dist",
        name="mooncake-transfer-engine-rocm",
        version=version,
        tag="cp312-cp312-manylinux_2_35_x86_64",
        files=files,
    )


def test_a_wheel_carrying_the_hip_runtime_is_refused(tmp_path: Path) -> None:
    report = inspect_wheel(_vendoring_wheel(tmp_path))
    assert [elf.soname for elf in report.elf] == ["engine.so", GRAFTED]
    vendored = (
        f"{LIBS}/{GRAFTED} carries the ROCm runtime libamdhip64; the image must provide it "
        "(auditwheel repair --exclude 'libamdhip64.so*')"
    )
    assert problems(report, WheelRules()) == [vendored]
    # the grafted copy is not the image's HIP runtime, which is what a required library is
    required = "no ELF file in the wheel needs a library matching libamdhip64*"
    assert problems(report, WheelRules(require_needed=("libamdhip64*",))) == [required, vendored]
    assert problems(report, WheelRules(allow_vendored_rocm=True)) == []


def test_a_grafted_hip_runtime_needed_but_not_carried_is_refused(tmp_path: Path) -> None:
    report = inspect_wheel(_vendoring_wheel(tmp_path, with_member=False))
    assert problems(report, WheelRules()) == [
        f"mooncake/engine.so needs {GRAFTED}, a copy of the ROCm runtime libamdhip64 grafted by auditwheel; "
        "the image must provide it (auditwheel repair --exclude 'libamdhip64.so*')"
    ]


def test_rocm_libraries_copied_in_unrenamed_are_refused_and_others_grafted_are_not(tmp_path: Path) -> None:
    """As PyTorch's ROCm wheels copy ROCm into torch/lib; a grafted libgflags (Mooncake's) is fine."""
    rocblas = stub_library(tmp_path, "librocblas.so.5", "librocblas.so.5.1")
    rocfft = stub_library(tmp_path, "librocfft-device-0.so.0", "librocfft-device-0.so.0.1")
    gflags = stub_library(tmp_path, "libgflags-f3c7dc50.so.2.2.2", "libgflags-f3c7dc50.so.2.2.2")
    hipblaslt = stub_library(tmp_path, "libhipblaslt.so.1", "libhipblaslt.so.1.0")
    wheel = build_wheel(
        tmp_path / "dist",
        name="torch",
        version="2.10.0+rocm7.2",
        tag="cp312-cp312-linux_x86_64",
        files={
            "torch/lib/librocblas.so": rocblas.read_bytes(),  # named by its SONAME only
            "torch/lib/librocfft-device-0.so.0": rocfft.read_bytes(),
            "torch/lib/libhipblaslt.so": hipblaslt.read_bytes(),
            f"torch.libs/{gflags.name}": gflags.read_bytes(),
        },
    )
    found = problems(inspect_wheel(wheel), WheelRules())
    assert found == [
        "torch/lib/libhipblaslt.so carries the ROCm library libhipblaslt; the image must provide it "
        "(auditwheel repair --exclude 'libhipblaslt.so*')",
        "torch/lib/librocblas.so carries the ROCm library librocblas; the image must provide it "
        "(auditwheel repair --exclude 'librocblas.so*')",
        "torch/lib/librocfft-device-0.so.0 carries the ROCm library librocfft-device-0; the image must "
        "provide it (auditwheel repair --exclude 'librocfft-device-0.so*')",
    ]


@pytest.mark.parametrize(
    ("name", "library"),
    [
        ("libamdhip64.so.7", "libamdhip64"),
        ("libamdhip64-5f3a9c1e.so.7.2.70200", "libamdhip64"),
        ("libhsa-runtime64.so.1", "libhsa-runtime64"),
        ("libhipblaslt.so.0", "libhipblaslt"),
        ("libhipblas.so.3", "libhipblas"),
        ("librocfft-device-3.so.0", "librocfft"),
        ("librocprofiler-sdk-roctx.so.1", "librocprofiler"),
        ("libMIOpen.so.1", "libMIOpen"),
        ("libasio-43102265.so", None),
        ("libhipcub.so", None),
        ("libc.so.6", None),
        ("engine.cpython-312-x86_64-linux-gnu.so", None),
    ],
)
def test_which_names_are_rocm_libraries(name: str, library: str | None) -> None:
    read = library_of(name)
    assert (rocm_library(read.name) if read else None) == library


# -- the ROCm a local version says is the HIP runtime's the ELF files need ------------------


@pytest.mark.parametrize(
    ("major", "said"),
    [
        (7, []),
        (6, ["version 0.5.6+g05fc77a0.rocm7.2.4 says rocm7.2.4, but its ELF files need libamdhip64.so.6 (ROCm 6)"]),
    ],
)
def test_the_local_versions_rocm_against_the_hip_runtime_needed(tmp_path: Path, major: int, said: list[str]) -> None:
    runtime = hip_runtime(tmp_path, major)
    ops = stub_library(tmp_path, "c_ops.so", "c_ops.so", needed=[runtime])
    wheel = build_wheel(
        tmp_path / "dist",
        name="lmcache",
        version="0.5.6+g05fc77a0.rocm7.2.4",
        tag="cp312-cp312-linux_x86_64",
        files={"lmcache/c_ops.so": ops.read_bytes()},
    )
    assert problems(inspect_wheel(wheel), WheelRules()) == said


def test_no_rocm_said_or_no_hip_runtime_needed_is_not_judged(report: WheelReport) -> None:
    assert problems(report, WheelRules()) == []  # rocm7.2.4, but no ELF needs libamdhip64
    plain = replace(report, version="0.5.6", elf=(fake_elf(needed=("libamdhip64.so.6",)),))
    assert problems(plain, WheelRules()) == []


def test_wheel_inspect_refuses_a_carried_hip_runtime_unless_allowed(tmp_path: Path) -> None:
    wheel = str(_vendoring_wheel(tmp_path))
    refused = wheelpin("wheel", "inspect", wheel, "--json", "--require-needed", "libamdhip64*")
    assert refused.code == 1 and len(refused.json()["problems"]) == 2
    assert [elf["soname"] for elf in refused.json()["elf"]] == ["engine.so", GRAFTED]
    allowed = wheelpin("wheel", "inspect", wheel, "--json", "--allow-vendored-rocm")
    assert allowed.code == 0 and allowed.json()["problems"] == []

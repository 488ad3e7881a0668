"""The consuming image read from its layers: real images built by buildah and
pushed to the real registry (tests/fixtures/consumerimages.py), gzip and zstd alike,
whiteouts applied, cached by layer (a summary an older wheelpin cached is read again); a
wheel checked against them as the loader would find its libraries (ROCm's
/opt/rocm symlink, Debian's merged /usr, torch's libraries loaded by `import torch`)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from bot.adapters.consumerread import LayerCache, read_consumer
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.registry import RegistryClient
from bot.core.image.consumer import check
from bot.core.wheel.report import inspect_wheel
from tests.cli import wheelpin
from tests.fixtures import consumerimages, hip
from tests.fixtures.consumerimages import ConsumerImages
from tests.fixtures.wheels import build_wheel


@pytest.fixture
def consumers(consumer_images: ConsumerImages) -> ConsumerImages:
    return consumer_images


def opened(ref: str) -> tuple[RegistryRepository, str]:
    host, _, rest = ref.partition("/")
    path, _, digest = rest.partition("@")
    return RegistryRepository(RegistryClient(host), path), digest


def link(tmp_path: Path, name: str, *flags: str, against: list[Path]) -> bytes:
    source = tmp_path / "ops.c"
    source.write_text("int hipGetDeviceCount(int *count);\nint ops(void) { int n; return hipGetDeviceCount(&n); }\n")
    library = tmp_path / name
    subprocess.run(
        [
            hip.tool("clang"),
            "-shared",
            "-fPIC",
            "-nostdlib",
            *flags,
            "-o",
            str(library),
            str(source),
            *map(str, against),
        ],
        check=True,
        capture_output=True,
    )
    return library.read_bytes()


@pytest.fixture
def wheel(tmp_path: Path, consumers: ConsumerImages) -> Path:
    """A ROCm 7 build, as LMCache's: its torch extension links the HIP runtime (DT_NEEDED
    libamdhip64.so.7), torch's libc10.so and libtorch.so with no path to them (a RUNPATH
    to its own `lmcache.libs`), libc and the program interpreter; another library finds
    the HIP runtime by a DT_RPATH. It asks numpy<=2.2.6, as LMCache does, and packages the
    image does not have."""
    runtime = consumerimages.hip_runtime(tmp_path, 7)
    torch = consumerimages.torch_libraries(tmp_path)
    c_ops = link(
        tmp_path,
        "c_ops.so",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lmcache.libs",
        against=[runtime, *torch, consumerimages.LIBC, consumerimages.INTERPRETER],
    )
    hip_ops = link(tmp_path, "hip_ops.so", "-Wl,--disable-new-dtags,-rpath,/opt/rocm-7.2.4/lib", against=[runtime])
    return build_wheel(
        tmp_path / "dist",
        name="lmcache",
        version="0.5.7+g3d3aa833",
        tag="cp312-cp312-linux_x86_64",
        files={"lmcache/__init__.py": b"", "lmcache/c_ops.so": c_ops, "lmcache/hip_ops.so": hip_ops},
        requires_dist=[
            "numpy<=2.2.6",
            "opentelemetry-api<1.40",
            "torch==2.10.0",
            "grpcio>=1.78.0",
            "redis",
            "pywin32; sys_platform == 'win32'",
        ],
    )


INSTALLED = {"numpy": "2.3.5", "opentelemetry-api": "1.44.0", "torch": "2.10.0", "vllm": "0.11.0"}
NO_HIP = [
    f"lmcache/{name}.so needs libamdhip64.so.7, which the image does not have where the loader looks"
    for name in ("c_ops", "hip_ops")
]


@pytest.mark.parametrize("which", ["rocm7", "rocm7_zstd"])
def test_the_image_is_read_from_its_layers_whiteouts_applied(
    consumers: ConsumerImages, tmp_path: Path, which: str
) -> None:
    store, digest = opened(getattr(consumers, which))
    cache = LayerCache(tmp_path / "layers")
    image = read_consumer(store, digest, cache=cache)
    files = image.files
    installed = {name: dist.version for name, dist in files.installed().items()}
    assert installed == INSTALLED  # numpy 2.2.6: gone
    assert files.python_version == "3.12" and files.rocm_version() == "7.2.4-97"
    # LD_LIBRARY_PATH of the config, then what /etc/ld.so.conf includes, then the defaults
    assert files.library_folders()[:5] == [
        "usr/local/lib",
        "opt/rocm/opencl/lib",
        "opt/rocm/lib",
        "opt/rocm/lib64",
        "lib",
    ]
    assert files.libraries["opt/rocm-7.2.4/lib/libamdhip64.so.7"] == "libamdhip64.so.7.2.70204"
    assert files.links["opt/rocm"] == "rocm-7.2.4" and files.links["lib64"] == "usr/lib64"
    assert files.libraries["usr/lib64/ld-linux-x86-64.so.2"] == "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    assert files.installed()["torch"].libraries == tuple(
        f"{consumerimages.SITE}/torch/lib/{name}" for name in ("libc10.so", "libtorch.so")
    )
    assert image.layers_read > 0 and image.layers_cached == 0
    again = read_consumer(store, digest, cache=cache)  # layers never change: read once
    assert (again.layers_read, again.layers_cached) == (0, image.layers_read) and again.files == files
    for path in (tmp_path / "layers").iterdir():  # as a wheelpin before layer summaries had a format
        old = json.loads(path.read_text())
        path.write_text(
            json.dumps({key: value for key, value in old.items() if key not in ("format", "links", "records")})
        )
    older = read_consumer(store, digest, cache=cache)
    assert (older.layers_read, older.layers_cached) == (image.layers_read, 0) and older.files == files


def test_a_wheel_is_checked_against_the_image(consumers: ConsumerImages, tmp_path: Path, wheel: Path) -> None:
    report = inspect_wheel(wheel)
    store, digest = opened(consumers.rocm7)
    assert {elf.path: (elf.runpath, elf.rpath) for elf in report.elf} == {
        "lmcache/c_ops.so": (("$ORIGIN/../lmcache.libs",), ()),
        "lmcache/hip_ops.so": ((), ("/opt/rocm-7.2.4/lib",)),
    }
    assert set(report.elf[0].needed) == {
        "libamdhip64.so.7",
        "libc10.so",
        "libtorch.so",
        "libc.so.6",
        "ld-linux-x86-64.so.2",
    }
    files = read_consumer(store, digest, cache=LayerCache(None)).files
    fits = check(consumers.rocm7, files, [report], [report])
    assert fits.unresolved == () and fits.rocm == "7.2.4-97" and fits.python == "3.12"
    assert "numpy==2.3.5" in fits.constraints and "opentelemetry-api==1.44.0" in fits.constraints
    assert fits.absent == ("grpcio>=1.78.0", "redis")
    alone = dataclasses.replace(report, requires_dist=("numpy<=2.2.6",))  # torch not required: not loaded
    assert check(consumers.rocm7, files, [alone], [alone]).unresolved == tuple(
        f"lmcache/c_ops.so needs {name}, which the image does not have where the loader looks; torch 2.10.0 in "
        "the image has it, but lmcache does not require torch"
        for name in ("libc10.so", "libtorch.so")
    )
    store, digest = opened(consumers.rocm6)
    older = check(consumers.rocm6, read_consumer(store, digest, cache=LayerCache(None)).files, [report], [report])
    assert older.rocm == "6.4.1-97"
    assert older.unresolved == tuple(NO_HIP)


def test_image_check_names_conflicts_and_missing_libraries(
    consumers: ConsumerImages, wheel: Path, env: dict[str, str]
) -> None:
    older = wheelpin("image", "check", str(wheel), "--consumer", consumers.rocm6, "--json", env=env)
    assert older.code == 1, older.stderr
    found = older.json()
    assert found["conflicts"] == [
        {"requirement": "numpy<=2.2.6", "constraint": "numpy==2.3.5"},
        {"requirement": "opentelemetry-api<1.40", "constraint": "opentelemetry-api==1.44.0"},
    ]
    assert found["unresolved"] == NO_HIP
    assert (found["rocm"], found["wheel_rocm"], found["python"]) == ("6.4.1-97", "7", "3.12")
    assert found["installed"] == INSTALLED and found["absent"] == ["grpcio>=1.78.0", "redis"]
    assert found["dependents"] == [
        {"dependent": "vllm==0.11.0", "requirement": "lmcache<=0.5.6", "why": "excludes lmcache 0.5.7+g3d3aa833"},
        {
            "dependent": "vllm==0.11.0",
            "requirement": "numpy>=2.3",
            "why": "lmcache asks numpy<=2.2.6, and no version satisfies both",
        },
    ]
    text = wheelpin("image", "check", str(wheel), "--consumer", consumers.rocm7_zstd, env=env)
    assert text.code == 1
    assert text.stdout.splitlines()[1:] == [
        "  numpy 2.3.5 installed, the wheel asks numpy<=2.2.6",
        "  opentelemetry-api 1.44.0 installed, the wheel asks opentelemetry-api<1.40",
        "  vllm==0.11.0 needs lmcache<=0.5.6: excludes lmcache 0.5.7+g3d3aa833",
        "  vllm==0.11.0 needs numpy>=2.3: lmcache asks numpy<=2.2.6, and no version satisfies both",
        # information, marked apart from the problems above it
        "  (info) the wheel is built for ROCm 7; the image has ROCm 7.2.4-97",
        "  (info) new to the image: grpcio>=1.78.0, redis",
    ]
    again = wheelpin("image", "check", str(wheel), "--consumer", consumers.rocm7_zstd, "--json", env=env)
    assert (again.json()["layers_read"], again.json()["unresolved"]) == (0, [])  # every layer from the cache

"""A wheel against its consuming image, from the image's merged layers (core/imagefs.py,
core/consumer.py): whiteouts as the OCI image spec's layer.md defines them, the loader's
search for each DT_NEEDED (RUNPATH with $ORIGIN, LD_LIBRARY_PATH, ld.so.conf), and
the installed distributions a new wheel would leave inconsistent."""

from __future__ import annotations

import pytest

from bot.core.config import Consumer
from bot.core.consumer import check, reference_in
from bot.core.elf import ElfReport
from bot.core.imagefs import LayerSummary, merge
from bot.core.inspect import WheelReport

SITE = "usr/local/lib/python3.12/dist-packages"


def dist(name: str, version: str, *requires: str, site: str = SITE) -> tuple[str, dict[str, object]]:
    return (f"{site}/{name}-{version}.dist-info/METADATA",
            {"name": name, "version": version, "requires": list(requires)})


def layer(*dists: tuple[str, dict[str, object]], libraries: dict[str, str] | None = None,
          whiteouts: list[str] | None = None, opaque: list[str] | None = None,
          texts: dict[str, str] | None = None) -> LayerSummary:
    return LayerSummary(dict(dists), libraries or {}, texts or {}, [], whiteouts or [], opaque or [], 1)


def report(*elf: ElfReport, requires: tuple[str, ...] = ()) -> WheelReport:
    return WheelReport("x.whl", "lmcache-0.5.7-cp312-cp312-linux_x86_64.whl", "lmcache", "0.5.7", None,
                       ("cp312-cp312-linux_x86_64",), "a" * 64, 1, requires, None, elf)


def elf(path: str, *needed: str, runpath: tuple[str, ...] = ()) -> ElfReport:
    return ElfReport(path, needed, None, (), (), 0, 0, runpath)


def test_whiteouts_and_opaque_folders_remove_what_lower_layers_put() -> None:
    files = merge([
        layer(dist("numpy", "2.2.6"), dist("redis", "5.0"), libraries={"opt/rocm/lib/libamdhip64.so.6": "",
                                                                        "opt/rocm/lib/libhsa-runtime64.so.1": ""}),
        layer(dist("numpy", "2.3.5"), whiteouts=[f"{SITE}/numpy-2.2.6.dist-info"], opaque=["opt/rocm/lib"],
              libraries={"opt/rocm/lib/libamdhip64.so.7": ""}),
        layer(whiteouts=[f"{SITE}/redis-5.0.dist-info/METADATA"]),
    ], env={})
    assert {name: d.version for name, d in files.installed().items()} == {"numpy": "2.3.5"}
    assert set(files.libraries) == {"opt/rocm/lib/libamdhip64.so.7"}  # the opaque folder hid the ROCm 6 ones
    assert files.python_version == "3.12"


def test_libraries_are_found_where_the_loader_looks() -> None:
    files = merge([layer(libraries={f"{SITE}/torch/lib/libtorch.so": "", "opt/rocm/lib/libamdhip64.so.7": "",
                                    "opt/other/libfoo.so.1": "", "usr/lib/x86_64-linux-gnu/libc.so.6": ""},
                         texts={"etc/ld.so.conf.d/rocm.conf": "# ROCm\n/opt/rocm/lib\ninclude /etc/x/*.conf\n"},
                         *[dist("torch", "2.10.0")])], env={"LD_LIBRARY_PATH": "/opt/extra"})
    wheel = report(elf("lmcache/c_ops.so", "libtorch.so", "libamdhip64.so.7", "libc.so.6", "libbundled.so",
                       runpath=("$ORIGIN/../torch/lib", "${ORIGIN}/../lmcache.libs")),  # as auditwheel writes
                   elf("lmcache.libs/libbundled.so"),
                   elf("lmcache/other.so", "libtorch.so", "libfoo.so.1"))
    found = check("img", files, [wheel], [wheel])
    assert found.unresolved == (
        "lmcache/other.so needs libtorch.so, which the image does not have where the loader looks",
        "lmcache/other.so needs libfoo.so.1, which the image does not have where the loader looks")
    assert files.library_folders()[:2] == ["opt/extra", "opt/rocm/lib"]


def test_installed_packages_the_new_wheel_would_leave_inconsistent() -> None:
    files = merge([layer(dist("numpy", "2.3.5"), dist("scipy", "1.16.0", "numpy<2.6,>=2.3"),
                         dist("vllm", "0.11.0", "lmcache<0.5; python_version >= '3.10'", "numpy"),
                         dist("pandas", "2.3.0", "numpy>=1.26"),
                         dist("winonly", "1.0", "numpy>=3; sys_platform == 'win32'"))], env={})
    wheel = report(requires=("numpy<=2.2.6", "redis"))
    found = check("img", files, [wheel])
    assert [(d.dependent, d.requirement) for d in found.dependents] == [
        ("scipy==1.16.0", "numpy<2.6,>=2.3"), ("vllm==0.11.0", 'lmcache<0.5; python_version >= "3.10"')]
    assert found.dependents[0].why == "lmcache asks numpy<=2.2.6, and no version satisfies both"
    assert found.dependents[1].why == "excludes lmcache 0.5.7"
    assert "numpy==2.3.5" in found.constraints and found.rocm is None


DOCKERFILE = """ARG BASE_IMAGE="rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"
ARG REGISTRY=docker.io
FROM ${REGISTRY}/rocm/vllm-dev@sha256:""" + "1" * 64 + """ AS base
FROM ${BASE_IMAGE} AS other
FROM $NOPE AS broken
"""


@pytest.mark.parametrize(("consumer", "expected"), [
    (Consumer(from_arg="BASE_IMAGE"), "rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"),
    (Consumer(from_stage="base"), "docker.io/rocm/vllm-dev@sha256:" + "1" * 64),
    (Consumer(from_stage="other"), "rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"),
])
def test_the_consumer_is_read_from_the_dockerfile(consumer: Consumer, expected: str) -> None:
    assert reference_in(consumer, DOCKERFILE, where="docker/Dockerfile") == expected


@pytest.mark.parametrize(("consumer", "message"), [
    (Consumer(from_stage="broken"), "uses an ARG with no default"),
    (Consumer(from_stage="nowhere"), "no `FROM … AS nowhere`"),
    (Consumer(from_arg="MISSING"), "no `ARG MISSING=…`"),
])
def test_a_dockerfile_that_does_not_say_is_one_sentence(consumer: Consumer, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reference_in(consumer, DOCKERFILE, where="docker/Dockerfile")

"""A wheel against its consuming image, from the image's merged layers (core/image/files.py,
core/image/consumer.py, core/image/ldso.py): whiteouts as the OCI image spec's layer.md defines them,
the loader's search for each DT_NEEDED as ld.so(8) says it (DT_RPATH, LD_LIBRARY_PATH,
DT_RUNPATH with $ORIGIN, ld.so.conf and its includes, the default folders, symlinks
followed inside the image's root, sonames already loaded by the distributions the wheel
requires), the installed distributions a new wheel would leave inconsistent, and the
requirements the image has nothing for."""

from __future__ import annotations

import pytest

from bot.core.config.model import Consumer
from bot.core.image.consumer import check, reference_in, wrong_platform
from bot.core.image.files import LayerSummary, merge
from bot.core.image.ldso import MAXSYMLINKS, Tree, conf_folders, locate, search_folders
from bot.core.wheel.elf import ElfReport
from bot.core.wheel.report import WheelReport

SITE = "usr/local/lib/python3.12/dist-packages"


def dist(name: str, version: str, *requires: str, site: str = SITE) -> tuple[str, dict[str, object]]:
    return (
        f"{site}/{name}-{version}.dist-info/METADATA",
        {"name": name, "version": version, "requires": list(requires)},
    )


def layer(
    *dists: tuple[str, dict[str, object]],
    libraries: dict[str, str] | None = None,
    whiteouts: list[str] | None = None,
    opaque: list[str] | None = None,
    texts: dict[str, str] | None = None,
    links: dict[str, str] | None = None,
    records: dict[str, list[str]] | None = None,
) -> LayerSummary:
    return LayerSummary(
        dict(dists), libraries or {}, texts or {}, [], whiteouts or [], opaque or [], 1, links or {}, records or {}
    )


def report(*elf: ElfReport, requires: tuple[str, ...] = ()) -> WheelReport:
    return WheelReport(
        "x.whl",
        "lmcache-0.5.7-cp312-cp312-linux_x86_64.whl",
        "lmcache",
        "0.5.7",
        None,
        ("cp312-cp312-linux_x86_64",),
        "a" * 64,
        1,
        requires,
        None,
        elf,
    )


def elf(path: str, *needed: str, runpath: tuple[str, ...] = (), rpath: tuple[str, ...] = ()) -> ElfReport:
    return ElfReport(path, needed, None, (), (), 0, 0, runpath, rpath)


MISSING = "which the image does not have where the loader looks"


def test_whiteouts_and_opaque_folders_remove_what_lower_layers_put() -> None:
    files = merge(
        [
            layer(
                dist("numpy", "2.2.6"),
                dist("redis", "5.0"),
                libraries={"opt/rocm/lib/libamdhip64.so.6": "", "opt/rocm/lib/libhsa-runtime64.so.1": ""},
            ),
            layer(
                dist("numpy", "2.3.5"),
                whiteouts=[f"{SITE}/numpy-2.2.6.dist-info"],
                opaque=["opt/rocm/lib"],
                libraries={"opt/rocm/lib/libamdhip64.so.7": ""},
            ),
            layer(whiteouts=[f"{SITE}/redis-5.0.dist-info/METADATA"]),
        ],
        env={},
    )
    assert {name: d.version for name, d in files.installed().items()} == {"numpy": "2.3.5"}
    assert set(files.libraries) == {"opt/rocm/lib/libamdhip64.so.7"}  # the opaque folder hid the ROCm 6 ones
    assert files.python_version == "3.12"


def test_libraries_are_found_where_the_loader_looks() -> None:
    files = merge(
        [
            layer(
                dist("torch", "2.10.0"),
                libraries={
                    f"{SITE}/torch/lib/libtorch.so": "",
                    "opt/rocm/lib/libamdhip64.so.7": "",
                    "opt/other/libfoo.so.1": "",
                    "usr/lib/x86_64-linux-gnu/libc.so.6": "",
                },
                texts={"etc/ld.so.conf.d/rocm.conf": "# ROCm\n/opt/rocm/lib\ninclude /etc/x/*.conf\n"},
            )
        ],
        env={"LD_LIBRARY_PATH": "/opt/extra"},
    )
    wheel = report(
        elf(
            "lmcache/c_ops.so",
            "libtorch.so",
            "libamdhip64.so.7",
            "libc.so.6",
            "libbundled.so",
            runpath=("$ORIGIN/../torch/lib", "${ORIGIN}/../lmcache.libs"),
        ),  # as auditwheel writes
        elf("lmcache.libs/libbundled.so"),
        elf("lmcache/other.so", "libtorch.so", "libfoo.so.1"),
    )
    found = check("img", files, [wheel], [wheel])
    assert found.unresolved == (
        "lmcache/other.so needs libtorch.so, which the image does not have where the loader looks",
        "lmcache/other.so needs libfoo.so.1, which the image does not have where the loader looks",
    )
    assert files.library_folders()[:2] == ["opt/extra", "opt/rocm/lib"]


def chain(length: int) -> Tree:
    """`l/0` → `1` → … → `l/<length>`, a file: `length` symlinks."""
    return Tree({f"l/{length}"}, {f"l/{i}": str(i + 1) for i in range(length)})


def test_symlinks_are_followed_at_most_maxsymlinks_times() -> None:
    assert chain(MAXSYMLINKS).resolve("l/0") == f"l/{MAXSYMLINKS}"
    assert chain(MAXSYMLINKS + 1).resolve("l/0") is None  # open() would fail with ELOOP
    loops = Tree(
        {"usr/lib/libx.so.1"}, {"opt/a": "b", "opt/b": "a", "opt/self": "/opt/self", "usr/lib/liby.so": "liby.so"}
    )
    assert loops.resolve("opt/a/libx.so.1") is None and loops.resolve("opt/self/libx.so.1") is None
    assert loops.resolve("usr/lib/liby.so") is None


def test_an_absolute_symlink_is_resolved_inside_the_image_root() -> None:
    """ROCm as its packages lay it out: /opt/rocm → /etc/alternatives/rocm (update-alternatives)
    → /opt/rocm-7.2.4, and lib<name>.so.<major> → lib<name>.so.<major>.<minor>.<patch>."""
    tree = Tree(
        {"opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"},
        {
            "opt/rocm": "/etc/alternatives/rocm",
            "etc/alternatives/rocm": "/opt/rocm-7.2.4",
            "opt/rocm-7.2.4/lib/libamdhip64.so.7": "libamdhip64.so.7.2.70204",
            "usr/lib/libshadow.so": "/etc/shadow",
        },
    )
    assert tree.resolve("opt/rocm/lib/libamdhip64.so.7") == "opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"
    assert tree.resolve("usr/lib/libshadow.so") is None  # the host's /etc/shadow is not the image's


def test_dotdot_stops_at_the_image_root() -> None:
    tree = Tree({"usr/lib/libc.so.6"}, {"opt/x/lib": "../../../../../../usr/lib"})
    assert tree.resolve("opt/x/lib/libc.so.6") == "usr/lib/libc.so.6"
    assert tree.resolve("../../../usr/lib/libc.so.6") == "usr/lib/libc.so.6"
    assert tree.resolve("opt/x/lib/../../../../etc/passwd") is None


def test_the_program_interpreter_is_found_through_merged_usr() -> None:
    """Debian's merged /usr: /lib → usr/lib and /lib64 → usr/lib64 are symlinks, and
    usr/lib64/ld-linux-x86-64.so.2 one to the multiarch folder's file."""
    files = merge(
        [
            layer(
                libraries={
                    "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": "",
                    "usr/lib/x86_64-linux-gnu/libc.so.6": "",
                    "usr/lib64/ld-linux-x86-64.so.2": "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
                    "usr/lib/x86_64-linux-gnu/libgone.so.1": "libgone.so.1.0",
                },
                links={"lib": "usr/lib", "lib64": "usr/lib64", "bin": "usr/bin"},
            )
        ],
        env={},
    )
    wheel = report(
        elf("lmcache/c_ops.so", "libc.so.6", "/lib64/ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2", "libgone.so.1")
    )
    assert check("img", files, [wheel], [wheel]).unresolved == (
        f"lmcache/c_ops.so needs libgone.so.1, {MISSING}",
    )  # a symlink that ends nowhere is nothing


LD_SO_CONF = {
    "etc/ld.so.conf": "include ld.so.conf.d/*.conf\n/usr/local/lib  # local builds\n",  # relative: from /etc
    "etc/ld.so.conf.d/10-rocm-opencl.conf": "/opt/rocm/opencl/lib\n",
    "etc/ld.so.conf.d/20-rocm.conf": "/opt/rocm/lib\n/opt/rocm/lib64\ninclude /etc/ld.so.conf.d/more/*\n",
    "etc/ld.so.conf.d/more/x": "/opt/x/lib\n",
    "etc/ld.so.conf.d/.hidden.conf": "/opt/hidden\n",  # glob's `*` skips a leading dot
    "etc/ld.so.conf.d/notes.txt": "/opt/never\n",  # included by nothing
}


def test_ld_so_conf_is_read_through_its_include_globs() -> None:
    assert conf_folders(LD_SO_CONF) == [
        "opt/rocm/opencl/lib",
        "opt/rocm/lib",
        "opt/rocm/lib64",
        "opt/x/lib",
        "usr/local/lib",
    ]
    files = merge([layer(texts=LD_SO_CONF)], env={"LD_LIBRARY_PATH": "/opt/env:"})
    assert files.library_folders()[:3] == ["opt/env", "opt/rocm/opencl/lib", "opt/rocm/lib"]
    # no /etc/ld.so.conf: `include /etc/ld.so.conf.d/*.conf` is taken as said
    without = {path: text for path, text in LD_SO_CONF.items() if path != "etc/ld.so.conf"}
    assert conf_folders(without) == ["opt/rocm/opencl/lib", "opt/rocm/lib", "opt/rocm/lib64", "opt/x/lib"]
    looping = {"etc/ld.so.conf": "include /etc/ld.so.conf\n/opt/a\n"}
    assert conf_folders(looping) == ["opt/a"]


def test_dt_rpath_counts_only_without_dt_runpath_and_before_ld_library_path() -> None:
    files = merge(
        [layer(libraries={"opt/a/libx.so.1": "", "opt/b/liby.so.1": "", "opt/env/libx.so.1": ""})],
        env={"LD_LIBRARY_PATH": "/opt/env"},
    )
    wheel = report(
        elf("lmcache/a.so", "libx.so.1", "liby.so.1", rpath=("/opt/a", "$ORIGIN/../../../../../../opt/b")),
        elf("lmcache/b.so", "liby.so.1", rpath=("/opt/b",), runpath=("/opt/a",)),
    )
    assert check("img", files, [wheel], [wheel]).unresolved == (f"lmcache/b.so needs liby.so.1, {MISSING}",)
    tree = Tree(set(files.libraries), {})
    found = [
        locate("libx.so.1", search_folders(rpath=rpath, runpath=runpath, origin="x", env=files.env, conf=[]), tree)
        for rpath, runpath in [(("/opt/a",), ()), ((), ("/opt/a",)), (("/opt/a",), ("/opt/a",))]
    ]
    assert found == ["opt/a/libx.so.1", "opt/env/libx.so.1", "opt/env/libx.so.1"]  # LD_LIBRARY_PATH before RUNPATH


TORCH_LIBRARIES = [f"{SITE}/torch/lib/libc10.so", f"{SITE}/torch/lib/libtorch.so"]


@pytest.mark.parametrize(
    ("requires", "torch", "unresolved"),
    [
        (("torch",), True, ()),
        (("vllm>=0.11",), True, ()),  # one level down: vllm requires torch
        (("app",), True, ("libc10.so", "libtorch.so")),  # two levels down: not followed
        (("torch; python_version < '3.10'",), True, ("libc10.so", "libtorch.so")),  # not for the image's python
        (("torch; extra == 'cuda'",), True, ("libc10.so", "libtorch.so")),
        ((), True, ("libc10.so", "libtorch.so")),
        (("torch",), False, ("libc10.so", "libtorch.so")),  # required, not installed: pip would bring it
    ],
)
def test_libraries_a_required_distribution_loaded_are_found(
    requires: tuple[str, ...], torch: bool, unresolved: tuple[str, ...]
) -> None:
    """LMCache's torch extensions name libc10.so with no RUNPATH: `import torch` loaded it."""
    dists = [dist("vllm", "0.11.0", "torch==2.10.0"), dist("app", "1.0", "vllm")]
    if torch:
        dists.append(dist("torch", "2.10.0", "filelock"))
    files = merge(
        [
            layer(
                *dists,
                libraries=dict.fromkeys(TORCH_LIBRARIES, "") if torch else {},
                records={f"{SITE}/torch-2.10.0.dist-info/RECORD": TORCH_LIBRARIES} if torch else {},
            )
        ],
        env={},
    )
    wheel = report(elf("lmcache/c_ops.so", "libc10.so", "libtorch.so"), requires=requires)
    found = check("img", files, [wheel], [wheel]).unresolved
    said = "; torch 2.10.0 in the image has it, but lmcache does not require torch" if torch else ""
    assert found == tuple(f"lmcache/c_ops.so needs {name}, {MISSING}{said}" for name in unresolved)


def test_requirements_the_image_has_nothing_for_are_absent() -> None:
    files = merge([layer(dist("numpy", "2.3.5"), dist("Redis", "5.0"))], env={})
    wheel = report(
        requires=(
            "numpy<=2.2.6",
            "grpcio>=1.78.0",
            "redis",
            "aiofile",
            'grpcio-observability==1.78.0; platform_system == "Linux"',
            "pywin32; sys_platform == 'win32'",
            "tomli; python_version < '3.11'",
            'nixl>=1.3.0; python_version < "3.13" and extra == "nixl"',
            "lmcache[kafka]",
            "Foo[b,a]>=1",
        )
    )
    found = check("img", files, [wheel])
    assert found.absent == ("grpcio>=1.78.0", "aiofile", "grpcio-observability==1.78.0", "Foo[a,b]>=1")
    assert found.to_json()["absent"] == list(found.absent)


def test_installed_packages_the_new_wheel_would_leave_inconsistent() -> None:
    files = merge(
        [
            layer(
                dist("numpy", "2.3.5"),
                dist("scipy", "1.16.0", "numpy<2.6,>=2.3"),
                dist("vllm", "0.11.0", "lmcache<0.5; python_version >= '3.10'", "numpy"),
                dist("pandas", "2.3.0", "numpy>=1.26"),
                dist("winonly", "1.0", "numpy>=3; sys_platform == 'win32'"),
            )
        ],
        env={},
    )
    wheel = report(requires=("numpy<=2.2.6", "redis"))
    found = check("img", files, [wheel])
    assert [(d.dependent, d.requirement) for d in found.dependents] == [
        ("scipy==1.16.0", "numpy<2.6,>=2.3"),
        ("vllm==0.11.0", 'lmcache<0.5; python_version >= "3.10"'),
    ]
    assert found.dependents[0].why == "lmcache asks numpy<=2.2.6, and no version satisfies both"
    assert found.dependents[1].why == "excludes lmcache 0.5.7"
    assert "numpy==2.3.5" in found.constraints and found.rocm is None


DOCKERFILE = (
    """ARG BASE_IMAGE="rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"
ARG REGISTRY=docker.io
FROM ${REGISTRY}/rocm/vllm-dev@sha256:"""
    + "1" * 64
    + """ AS base
FROM ${BASE_IMAGE} AS other
FROM $NOPE AS broken
"""
)


@pytest.mark.parametrize(
    ("consumer", "expected"),
    [
        (Consumer(from_arg="BASE_IMAGE"), "rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"),
        (Consumer(from_stage="base"), "docker.io/rocm/vllm-dev@sha256:" + "1" * 64),
        (Consumer(from_stage="other"), "rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"),
    ],
)
def test_the_consumer_is_read_from_the_dockerfile(consumer: Consumer, expected: str) -> None:
    assert reference_in(consumer, DOCKERFILE, where="docker/Dockerfile") == expected


@pytest.mark.parametrize(
    ("consumer", "message"),
    [
        (Consumer(from_stage="broken"), "uses an ARG with no default"),
        (Consumer(from_stage="nowhere"), "no `FROM … AS nowhere`"),
        (Consumer(from_arg="MISSING"), "no `ARG MISSING=…`"),
    ],
)
def test_a_dockerfile_that_does_not_say_is_one_sentence(consumer: Consumer, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reference_in(consumer, DOCKERFILE, where="docker/Dockerfile")


X86_64 = "lmcache-0.4.1+rocm7.2.4-cp312-cp312-manylinux_2_28_x86_64.whl"
AARCH64 = "lmcache-0.4.1+rocm7.2.4-cp312-cp312-manylinux_2_28_aarch64.whl"
PURE = "lmcache-0.4.1-py3-none-any.whl"
IMAGE = "r/base@sha256:" + "c" * 64


def test_a_wheel_of_another_platform_than_the_image_config_says_is_refused_in_one_sentence() -> None:
    assert wrong_platform(IMAGE, ("linux", "arm64"), [X86_64, PURE]) == (
        f"{X86_64} is built for linux/amd64, and the consuming image {IMAGE} is linux/arm64: "
        "pip there would refuse it (the platform tag does not match)"
    )
    cp311 = X86_64.replace("cp312", "cp311")
    assert wrong_platform(IMAGE, ("windows", "amd64"), [X86_64, cp311]) == (
        f"{X86_64}, {cp311} are built for linux/amd64, and the consuming image {IMAGE} is windows/amd64: "
        "pip there would refuse them (the platform tag does not match)"
    )


@pytest.mark.parametrize(
    ("platform", "wheels"),
    [
        (("linux", "arm64"), [AARCH64]),
        (("linux", "amd64"), [X86_64, PURE]),
        (("linux", "s390x"), [PURE]),  # pure Python installs on every platform
        (None, [X86_64]),  # a config that does not say its platform is not compared
    ],
)
def test_wheels_of_the_image_platform_or_of_none_are_not_refused(
    platform: tuple[str, str] | None, wheels: list[str]
) -> None:
    assert wrong_platform(IMAGE, platform, wheels) is None

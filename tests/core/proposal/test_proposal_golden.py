"""The proposal bodies of the three seed pipelines, byte for byte (tests/golden/proposals/):
what ATOM's, vLLM's and Mooncake's maintainers review instead of their own scripts. Each
shows from → to against the wheel pinned today, archs and DT_NEEDED changes, conflicts
new or already present, a refused commit and the provenance. The wheels' facts are
those of the real wheels (LMCache's ROCm builds, mooncake-transfer-engine-rocm
0.3.13.post1 from PyPI); the pinned wheels' sizes are those of the PyPI wheels in the test
cache (lmcache 0.5.6, mooncake-transfer-engine-rocm 0.3.13.post1: file, and the sum of the
uncompressed sizes in the zip's central directory), the new ones grown from them, LMCache's
past `wheel.size_growth_warn`; `WHEELPIN_UPDATE_GOLDEN=1` writes the files again."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from bot.adapters.configdisk import load_config
from bot.core.config.model import Component
from bot.core.image.oci import WheelEntry
from bot.core.pins.bump import BumpPlan, Edit
from bot.core.proposal.assemble import assemble
from bot.core.proposal.text import body
from bot.core.proposal.upstreamcommit import Commit, History

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "proposals"
CONFIGS = Path(__file__).resolve().parents[3] / "config"
OLD, NEW = "05fc77a0" + "1" * 32, "3d3aa833" + "2" * 32
REFUSED = Commit(
    "9e1f0c2b" + "3" * 32,
    "Build against torch 2.11",
    refused="ABI: version 0.5.7.dev3+g9e1f0c2b.rocm7.2.4.torch2.11.cxx11abi1 carries torch2.11, "
    "expected torch2.10 (wheel.local_segments)",
)
LMCACHE_NEEDED = (
    "libamdhip64.so.7",
    "libc.so.6",
    "libc10.so",
    "libc10_hip.so",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libtorch.so",
    "libtorch_cpu.so",
    "libtorch_hip.so",
    "libtorch_python.so",
)
LMCACHE_REQUIRES = ("numpy<=2.2.6", "opentelemetry-api<1.40", "torch==2.10.0", "transformers>=4.51.1")


def lmcache(
    version: str,
    sha: str,
    archs: tuple[str, ...],
    needed: tuple[str, ...],
    sizes: tuple[int, int] = (21_734_112, 104_913_408),
) -> WheelEntry:
    return WheelEntry(
        f"lmcache-{version}-cp312-cp312-linux_x86_64.whl",
        sha * 64,
        sizes[0],
        "lmcache",
        version,
        LMCACHE_REQUIRES,
        archs,
        ("cp312-cp312-linux_x86_64",),
        needed,
        installed=sizes[1],
    )


def component(folder: str) -> Component:
    return load_config(CONFIGS / folder / ".github" / "wheelpin.toml", root=CONFIGS / folder).config.components[0]


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.md"
    if os.environ.get("WHEELPIN_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs (WHEELPIN_UPDATE_GOLDEN=1 writes it again)"


def edits(file: str, *values: tuple[str, str, str] | tuple[str, str, str, str]) -> BumpPlan:
    """A bump's edits from (what, old, new), a sha256 one with the python tag its pin names after."""
    return BumpPlan(
        "x",
        {file: ""},
        tuple(Edit(file, line, *value[1:3], value[0], *value[3:]) for line, value in enumerate(values, start=2)),
    )


@pytest.mark.parametrize("seed", ["atom-lmcache", "vllm-lmcache", "mooncake"])
def test_seed_proposal_bodies(seed: str) -> None:
    if seed == "mooncake":
        ours = component("mooncake")  # moving on from cp310 to cp314, as the config now says
        ours = ours.model_copy(
            update={"wheel": ours.wheel.model_copy(update={"python_tags": ["cp311", "cp312", "cp313", "cp314"]})}
        )
        tags = ("cp310", "cp311", "cp312", "cp313")
        needed = ("libamdhip64.so.6", "libc.so.6", "libhsa-runtime64.so.1", "libibverbs.so.1", "libstdc++.so.6")

        def wheel(tag: str, version: str, sha: str, libs: tuple[str, ...], sizes: tuple[int, int]) -> WheelEntry:
            return WheelEntry(
                f"mooncake_transfer_engine_rocm-{version}-{tag}-{tag}-manylinux_2_35_x86_64.whl",
                sha * 64,
                sizes[0],
                "mooncake-transfer-engine-rocm",
                version,
                ("aiohttp", "requests"),
                (),
                (f"{tag}-{tag}-manylinux_2_35_x86_64",),
                libs,
                installed=sizes[1],
            )

        pinned = [wheel(tag, "0.3.13.post1", "a", needed, (33_366_411, 89_317_189)) for tag in tags]
        new = [
            wheel(
                tag,
                "0.3.14",
                "b",
                tuple(sorted({*needed, "libnuma.so.1"} - {"libibverbs.so.1"})),
                (33_512_880, 89_702_411),
            )
            for tag in ("cp311", "cp312", "cp313", "cp314")
        ]
        image_sizes = (134_057_472 + 1_733, 133_470_208 + 1_733)  # four wheels' tar layer, and the config
        plan = edits(
            "docker/Dockerfile",
            (
                "image",
                "rocm/atom-dev:mooncake-0.3.13.post1@sha256:" + "c" * 64,
                "rocm/atom-dev:mooncake-0.3.14@sha256:" + "d" * 64,
            ),
        )
        image = "docker.io/rocm/atom-dev:mooncake-0.3.14-g3d3aa833-rocm7.2.4@sha256:" + "d" * 64
        provenance = (
            "built by run https://github.com/ROCm/ATOM/actions/runs/19283746 of mooncake-rocm-wheel.yaml; "
            "published by wheelpin, its 4 wheels verified first"
        )
        extra = {
            "more_verification": (
                "smoke test `python -c 'import mooncake.engine'`: run by the build workflow "
                "(wheelpin runs no repository command on its host)",
            )
        }
        commits = [Commit(NEW, "Support ROCm 7.2 in the transfer engine")]
    else:
        ours = component("atom-lmcache")
        if seed == "vllm-lmcache":  # vLLM's rule: gfx90a where the build has it
            ours = ours.model_copy(update={"wheel": ours.wheel.model_copy(update={"archs_wanted": ["gfx90a"]})})
        pinned = [
            lmcache(
                "0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1",
                "a",
                ("gfx90a", "gfx942", "gfx950"),
                tuple(n.replace(".so.7", ".so.6") for n in LMCACHE_NEEDED),
                sizes=(17_659_257, 83_055_622),
            )
        ]
        image_sizes = (21_736_960 + 1_412, 17_661_952 + 1_412)  # the wheel's tar layer, and the config
        otel = "opentelemetry-api<1.40" if seed == "atom-lmcache" else "opentelemetry-api>=1.30"  # vLLM: a new conflict
        pinned = [replace(pinned[0], requires_dist=("numpy<2.3", otel, "torch==2.10.0"))]
        new = [
            lmcache(
                "0.5.7.dev12+g3d3aa833.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1",
                "b",
                ("gfx942", "gfx950"),
                LMCACHE_NEEDED,
            )
        ]
        plan = edits(
            "docker/Dockerfile",
            (
                "image",
                "rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:" + "c" * 64,
                "rocm/atom-dev:lmcache-v0.5.7.dev12-g3d3aa833-rocm-torch210@sha256:" + "d" * 64,
            ),
            ("sha256", "a" * 64, "b" * 64),
        )
        image = "docker.io/rocm/atom-dev:lmcache-v0.5.7.dev12-g3d3aa833-rocm-torch210@sha256:" + "d" * 64
        provenance = (
            "adopted: pushed by run https://github.com/ROCm/ATOM/actions/runs/19283745 of "
            "lmcache-rocm-wheel.yaml; wheelpin fetched its 1 wheel and verified them like a build of its own"
        )
        extra = {}
        commits = [REFUSED, Commit(NEW, "Faster chunk lookups")]
    facts = assemble(
        ours,
        upstream=ours.upstream.repo,
        old_commit=OLD,
        new_commit=NEW,
        image=image,
        wheels=new,
        pinned=pinned,
        constraints_text="numpy==2.3.5\nopentelemetry-api==1.44.0\n",
        commits=commits,
        bump=plan,
        state={"component": ours.name, "commit": NEW},
        check_refs=(),
        provenance=provenance,
        image_sizes=image_sizes,
        **extra,
    )
    check(seed, body(facts))


def test_a_proposal_whose_pinned_image_could_not_be_read() -> None:
    """Mooncake's pin names a digest its registry does not hold (a typo, a deleted image):
    the proposal says once that the pinned image could not be read and compares nothing
    with it, shows each sha256 its Dockerfile holds, and lists the commits from the one
    the pinned tag names (`…-gd1003172`), found in the upstream."""
    ours = component("mooncake")
    tags = ("cp310", "cp311", "cp312", "cp313")
    new = [
        WheelEntry(
            f"mooncake_transfer_engine_rocm-0.3.14-{tag}-{tag}-manylinux_2_35_x86_64.whl",
            str(i) * 64,
            33_512_880,
            "mooncake-transfer-engine-rocm",
            "0.3.14",
            ("aiohttp", "requests"),
            (),
            (f"{tag}-{tag}-manylinux_2_35_x86_64",),
            ("libamdhip64.so.7", "libc.so.6", "libhsa-runtime64.so.1", "libnuma.so.1", "libstdc++.so.6"),
            installed=89_702_411,
        )
        for i, tag in enumerate(tags, start=1)
    ]
    pinned_image = "docker.io/rocm/atom-dev:mooncake-0.3.13.post1-gd1003172@sha256:" + "c" * 64
    image = "docker.io/rocm/atom-dev:mooncake-0.3.14-g3d3aa833-rocm7.2.4@sha256:" + "d" * 64
    old = "d1003172" + "4" * 32
    plan = edits(
        "docker/Dockerfile",
        ("image", pinned_image.removeprefix("docker.io/"), image.removeprefix("docker.io/")),
        *(
            ("sha256", letter * 64, str(i) * 64, tag)
            for i, (letter, tag) in enumerate(zip("abcd", tags, strict=True), start=1)
        ),
    )
    commits = (Commit(NEW, "Support ROCm 7.2 in the transfer engine"), Commit("5a9eda73" + "5" * 32, "Faster path"))
    facts = assemble(
        ours,
        upstream=ours.upstream.repo,
        old_commit=None,
        new_commit=NEW,
        image=image,
        wheels=new,
        pinned=[],
        constraints_text=None,
        commits=commits,
        bump=plan,
        state={"component": ours.name, "commit": NEW},
        check_refs=(),
        provenance="built by run https://github.com/ROCm/ATOM/actions/runs/19283747 of mooncake-rocm-wheel.yaml; "
        "published by wheelpin, its 4 wheels verified first",
        pinned_image=pinned_image,
        pinned_problem="the pinned digest is not in the registry (404)",
        image_sizes=(134_057_472 + 1_733, None),
        history=History(old, commits, ours.upstream.branch, from_tag=True),
    )
    check("mooncake-pinned-unread", body(facts))

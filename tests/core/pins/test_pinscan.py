"""What `wheelpin init` reads before any image: the wheel pins of a Dockerfile and the
references it skips, found by every pin format that looks in it (core/pins/scan.py), the
tag template read back from a pinned tag (core/config/templates.py), the ABI segments of a
version (core/wheel/localversion.py), and the TOML strings it writes
(core/config/initconfig.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bot.core.config.initconfig import toml_string
from bot.core.config.templates import infer_tag_template
from bot.core.pins.scan import scan
from bot.core.wheel.localversion import segments

CONFIG = Path(__file__).resolve().parents[3] / "config"
DIGEST = "sha256:" + "a" * 64
SHA = "05fc77a0" + "c" * 32
LMCACHE_VERSION = "0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"


def test_atoms_dockerfile_pins_lmcache_by_an_arg_with_its_sha256_and_base() -> None:
    text = (CONFIG / "atom-lmcache/docker/Dockerfile").read_text()
    (pin,), skipped = scan(text, "docker/Dockerfile")
    assert (pin.line, pin.kind, pin.key, pin.named) == (3, "dockerfile-arg", "image_arg", "LMCACHE_WHEEL_IMAGE")
    assert pin.used_line == 6
    assert pin.what == "ARG LMCACHE_WHEEL_IMAGE"
    assert pin.reference.startswith("rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:")
    assert [(a.name, a.line, a.python_tag) for a in pin.sha256_args] == [("LMCACHE_WHEEL_SHA256", 4, None)]
    assert pin.consumer is not None and (pin.consumer.from_arg, pin.consumer.line) == ("BASE_IMAGE", 2)
    assert [str(s) for s in skipped] == [
        "docker/Dockerfile:2: ARG BASE_IMAGE: stage base runs COPY: a base image, not a wheel image"
    ]


def test_mooncakes_pins_one_sha256_per_python_tag() -> None:
    text = (CONFIG / "mooncake/docker/Dockerfile").read_text()
    (pin,), skipped = scan(text, "docker/Dockerfile")
    assert [(a.name, a.python_tag) for a in pin.sha256_args] == [
        (f"MOONCAKE_WHEEL_SHA256_CP3{n}", f"cp3{n}") for n in (10, 11, 12, 13)
    ]
    assert pin.consumer is None and skipped == []  # a fragment: nothing copies the wheels yet


def test_a_literal_from_stage_and_what_is_skipped() -> None:
    text = (
        f"ARG UNUSED=ghcr.io/x/y@{DIGEST}\n"
        f"ARG TAGGED=ghcr.io/x/wheel:v1\n"
        f"FROM ${{TAGGED}} AS tagged\n"
        f"FROM ghcr.io/x/lmcache-wheel:v1@{DIGEST} AS lmcache-wheel\n"
        f"ARG LMCACHE_WHEEL_SHA256={'b' * 64}\n"
        f"FROM ghcr.io/x/{{REPO}}:${{TAG}} AS two\n"
        f"FROM rocm/vllm@{DIGEST} AS base\n"
        f"FROM base AS final\n"
        "COPY --from=lmcache-wheel / /w/\n"
        "COPY --from=tagged / /t/\n"
    )
    (pin,), skipped = scan(text.replace("{REPO}", "${REPO}"), "Dockerfile")
    assert (pin.kind, pin.key, pin.named, pin.line) == ("dockerfile-from", "from_stage", "lmcache-wheel", 4)
    assert pin.what == "FROM … AS lmcache-wheel"
    assert [a.name for a in pin.sha256_args] == ["LMCACHE_WHEEL_SHA256"]
    assert pin.consumer is not None and (pin.consumer.from_stage, pin.consumer.value) == ("base", f"rocm/vllm@{DIGEST}")
    assert [str(s) for s in skipped] == [  # in line order, whichever format skipped them
        "Dockerfile:1: ARG UNUSED: pinned by digest, but no stage's FROM names it",
        "Dockerfile:2: ARG TAGGED: pinned by tag only (no @sha256:…): wheelpin moves digest pins",
        "Dockerfile:6: FROM ghcr.io/x/${REPO}:${TAG}: built from variables: wheelpin "
        "pins one ARG or a literal reference",
        f"Dockerfile:7: FROM rocm/vllm@{DIGEST}: stage final is built on it: a base image, not a wheel image",
    ]


def test_the_tag_template_is_read_back_from_the_pinned_tag() -> None:
    assert (
        infer_tag_template(
            "lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210",
            version=LMCACHE_VERSION,
            commit="05fc77a0",
            component="lmcache",
        )
        == "lmcache-v{version_base}-g{sha8}-rocm-torch210"
    )
    assert (
        infer_tag_template(
            "mooncake-0.3.13.post1-g05fc77a0-rocm7.2.4", version="0.3.13.post1", commit=SHA, component="mooncake"
        )
        == "mooncake-{version}-g{sha8}-rocm7.2.4"
    )
    assert infer_tag_template(f"build-{SHA}", version="1.0", commit=SHA, component="x") == "build-{sha}"
    assert infer_tag_template("latest", version="1.0", commit=SHA, component="x") is None  # names no commit
    assert infer_tag_template("v1.0", version="1.0", commit=None, component="x") is None
    assert infer_tag_template("{odd}-g05fc77a0", version="1.0", commit=SHA, component="x") is None  # no valid tag


def test_the_segments_of_a_local_version_leave_out_the_commits() -> None:
    assert segments(LMCACHE_VERSION) == ["rocm7.2.4", "torch2.10", "cxx11abi1"]
    assert segments("0.3.13.post1") == [] and segments("1.0+7.torch2.1") == ["torch2.1"]


@given(st.text())
def test_any_text_is_one_toml_string(text: str) -> None:
    written = toml_string(text)
    assert tomllib.loads(f"key = {written}") == {"key": text}

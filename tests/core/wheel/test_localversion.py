"""The ABI a wheel's local version carries (core/wheel/localversion.py), the tag placeholders
taken from it, and a tag's commit against its wheel's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.checks.commit import tag_commit_problems
from bot.core.config.templates import (
    TagValues,
    TemplateError,
    commit_only,
    render_tag,
    tag_pattern,
    validate_tag_template,
)
from bot.core.wheel.localversion import carried, local_value, normalized_segment, segment_problems
from bot.core.wheel.report import inspect_wheel
from tests.cli import wheelpin
from tests.fixtures.wheels import build_wheel

# LMCache's ROCm wheel as ATOM builds it (torch 2.10, the C++11 ABI)
ATOM = "0.3.15.dev12+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"
TORCH_211 = ATOM.replace("torch2.10", "torch2.11")


def test_what_a_version_carries() -> None:
    assert carried(ATOM, "torch") == "torch2.10"
    assert carried(ATOM, "rocm") == "rocm7.2.4" and carried(ATOM, "cxx11abi") == "cxx11abi1"
    assert carried(ATOM, "cuda") is None and carried("1.0", "torch") is None
    assert carried("1.0+torchvision0.25.torch2.9", "torch") == "torch2.9"  # a longer name is not it


@pytest.mark.parametrize(
    ("version", "wanted", "said"),
    [
        (ATOM, ["torch2.10", "cxx11abi1"], []),
        (ATOM.replace("torch2.10", "torch2.10.1"), ["torch2.10"], []),  # a patch release of the same ABI
        (
            TORCH_211,
            ["torch2.10"],
            [f"version {TORCH_211} carries torch2.11, expected torch2.10 (wheel.local_segments)"],
        ),
        (ATOM.replace("torch2.10", "torch2.1"), ["torch2.10"], ["carries torch2.1, expected torch2.10"]),
        (ATOM.replace("cxx11abi1", "cxx11abi0"), ["torch2.10", "cxx11abi1"], ["carries cxx11abi0, expected cxx11abi1"]),
        ("0.3.15", ["torch2.10"], ["version 0.3.15 carries no torch segment, expected torch2.10"]),
    ],
)
def test_segments_a_wheel_must_carry(version: str, wanted: list[str], said: list[str]) -> None:
    found = segment_problems(version, wanted)
    assert len(found) == len(said) and all(words in sentence for words, sentence in zip(said, found, strict=True))


def test_segments_are_written_as_a_local_version_normalizes_them() -> None:
    assert normalized_segment("Torch2-10") == "torch2.10" and normalized_segment("cxx11abi1") == "cxx11abi1"
    for bad in ("2.10", "torch+2", "", "torch..2"):
        with pytest.raises(ValueError, match="is not a local version segment"):
            normalized_segment(bad)


def test_tag_placeholders_from_the_wheels_own_version() -> None:
    template = "lmcache-v{version_base}-g{sha8}-rocm-torch{local_torch_digits}"
    values = TagValues(sha="05fc77a0" + "0" * 32, component="lmcache", version=ATOM)
    assert render_tag(template, values) == "lmcache-v0.3.15.dev12-g05fc77a0-rocm-torch210"
    assert local_value(ATOM, "local_torch") == "2.10" and local_value(ATOM, "local_rocm_digits") == "724"
    assert render_tag(template, TagValues(sha=values.sha, component="lmcache", version=TORCH_211)).endswith("torch211")
    with pytest.raises(TemplateError, match=r"\{local_torch_digits\} has no value, as version 0.3.15 carries no torch"):
        render_tag(template, TagValues(sha=values.sha, component="lmcache", version="0.3.15"))
    validate_tag_template(template, component="lmcache")
    assert not commit_only(template)  # the tag needs the wheel, not only the commit
    assert tag_pattern(template, component="lmcache").match("lmcache-v0.3.15.dev12-g05fc77a0-rocm-torch210")


def test_a_tag_naming_another_commit_than_its_wheel(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, name="lmcache", version=ATOM, files={"lmcache/__init__.py": b""})
    reports = [inspect_wheel(wheel)]
    assert tag_commit_problems("lmcache-v0.3.15-g05fc77a0-rocm", reports) == []
    assert tag_commit_problems("latest", reports) == []  # names no commit: nothing to judge
    (said,) = tag_commit_problems("lmcache-v0.3.15-gdeadbeef-rocm", reports)
    assert said == (
        f"{wheel.name}: tag lmcache-v0.3.15-gdeadbeef-rocm names commit gdeadbeef, but the wheel's "
        f"version {ATOM} carries g05fc77a0"
    )


def test_image_publish_without_a_component_refuses_a_tag_naming_another_commit(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, name="lmcache", version=ATOM, files={"lmcache/__init__.py": b""})
    layout = tmp_path / "images"
    refused = wheelpin(
        "image",
        "publish",
        str(wheel),
        "--to",
        f"oci:{layout}:lmcache-gdeadbeef-rocm",
        env={"WHEELPIN_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert refused.code != 0 and "names commit gdeadbeef, but the wheel's version" in refused.stderr
    assert not layout.exists() or not (layout / "index.json").exists()  # nothing written
    as_json = wheelpin(
        "image",
        "publish",
        str(wheel),
        "--to",
        f"oci:{layout}:lmcache-gdeadbeef-rocm",
        "--json",
        env={"WHEELPIN_CACHE_DIR": str(tmp_path / "cache")},
    )
    (problem,) = as_json.json()["problems"]  # every problem, on stdout, beside the one-line error
    assert as_json.code == 1 and problem.startswith(f"{wheel.name}: tag lmcache-gdeadbeef-rocm names commit")
    published = wheelpin(
        "image",
        "publish",
        str(wheel),
        "--to",
        f"oci:{layout}:lmcache-g05fc77a0-rocm",
        env={"WHEELPIN_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert published.code == 0, published.stderr

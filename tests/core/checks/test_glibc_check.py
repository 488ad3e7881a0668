"""The manylinux/glibc check (bot/core/checks/glibc.py) on real wheel files, named as
build backends and auditwheel name them (PEP 427 file names, PEP 600 platform tags), from
`wheel inspect --max-glibc` and from `wheel.max_glibc`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.checks.rules import WheelRules, problems
from bot.core.wheel.report import inspect_wheel
from tests.cli import wheelpin
from tests.core.config.test_config import GOOD, PINNED, problems_of
from tests.fixtures.wheels import build_wheel

NO_PROMISE = "promises no glibc version (PEP 600: only a manylinux tag does); auditwheel repair gives the wheel one"


def wheel(folder: Path, tag: str) -> Path:
    return build_wheel(
        folder, name="mooncake-transfer-engine", version="0.3.7", tag=tag, files={"mooncake/__init__.py": b""}
    )


@pytest.mark.parametrize(
    ("tag", "said"),
    [
        ("cp312-cp312-manylinux_2_28_x86_64", []),
        ("cp312-cp312-manylinux_2_17_x86_64", []),
        ("cp312-cp312-manylinux2014_x86_64", []),  # PEP 600's legacy name for manylinux_2_17
        ("cp312-cp312-manylinux1_x86_64", []),  # … and for manylinux_2_5
        # auditwheel writes a compressed tag set: any one tag the images satisfy will do
        ("cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64", []),
        ("py3-none-any", []),  # a pure wheel runs on any glibc
        (
            "cp312-cp312-manylinux_2_34_x86_64",
            ["platform tag manylinux_2_34_x86_64 needs glibc 2.34 or newer, the images have 2.28 (wheel.max_glibc)"],
        ),
        (
            "cp312-cp312-manylinux_2_31_x86_64.manylinux_2_34_x86_64",  # said by the least it needs
            ["platform tag manylinux_2_31_x86_64 needs glibc 2.31 or newer, the images have 2.28 (wheel.max_glibc)"],
        ),
        ("cp312-cp312-linux_x86_64", [f"platform tag linux_x86_64 {NO_PROMISE}"]),
        ("cp312-cp312-musllinux_1_2_x86_64", [f"platform tag musllinux_1_2_x86_64 {NO_PROMISE}"]),
    ],
)
def test_a_platform_tag_against_the_images_glibc(tmp_path: Path, tag: str, said: list[str]) -> None:
    report = inspect_wheel(wheel(tmp_path, tag))
    assert problems(report, WheelRules(max_glibc="2.28")) == said
    assert problems(report, WheelRules()) == []  # not asked, not judged


def test_wheel_inspect_max_glibc(tmp_path: Path) -> None:
    newer = wheel(tmp_path, "cp312-cp312-manylinux_2_34_x86_64")
    refused = wheelpin("wheel", "inspect", str(newer), "--max-glibc", "2.28", "--json")
    assert refused.code == 1 and refused.json()["problems"] == [
        "platform tag manylinux_2_34_x86_64 needs glibc 2.34 or newer, the images have 2.28 (wheel.max_glibc)"
    ]
    assert wheelpin("wheel", "inspect", str(newer), "--max-glibc", "2.34").code == 0
    bad = wheelpin("wheel", "inspect", str(newer), "--max-glibc", "2.x")
    assert bad.code == 2 and "'2.x' is not a glibc version such as 2.28" in bad.stderr and bad.stdout == ""


def test_a_max_glibc_that_is_no_version_is_located_in_the_config(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    for name in ("Dockerfile", "atom_release.dockerfile"):
        (tmp_path / "docker" / name).write_text(PINNED)
    text = GOOD.replace('distribution = "lmcache",', 'distribution = "lmcache", max_glibc = "2.28.1",', 1)
    assert any(
        ":4: lmcache.wheel.max_glibc: '2.28.1' is not a glibc version such as 2.28" in problem
        for problem in problems_of(tmp_path, text)
    )


def test_an_unset_max_glibc_leaves_the_rules_digest_of_published_images_as_it_was() -> None:
    """The digest wheelpin wrote into ATOM's images before `wheel.max_glibc` existed: an
    upgrade must not take them for images verified under other rules."""
    from bot.adapters.configdisk import load_config
    from bot.core.checks.digest import rules_digest

    config = Path(__file__).resolve().parents[3] / "config" / "atom-lmcache"
    component = load_config(config / ".github" / "wheelpin.toml", root=config).config.components[0]
    assert rules_digest(component) == "9bcda5f1edfac47f"
    glibc = component.model_copy(update={"wheel": component.wheel.model_copy(update={"max_glibc": "2.28"})})
    assert rules_digest(glibc) != "9bcda5f1edfac47f"

"""The wheel set rules of a component's wheels (core/checks/wheelset.py): one wheel per
python tag and variant label (PEP 825), all of one version, a label meaning one property
set, and the labels `wheel.variants` expects. Real wheels, built by tests/fixtures/wheels.py
(variant wheels with their `*.dist-info/variant.json`) and read as a pass reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.checks.api import CHECKS
from bot.core.checks.component import check_wheels, component_rules, summary
from bot.core.checks.rules import WheelRules
from bot.core.config.model import Component, Wheel
from bot.core.wheel.report import WheelReport, inspect_wheel
from tests.fixtures.wheels import build_wheel

GFX942 = ("amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
GFX950 = ("amd_gfx950", {"amd": {"gfx_arch": ["gfx950"]}})
NULL = ("null", {})  # PEP 825's null variant: no properties, the fallback every system fits


def wheel(
    folder: Path,
    python: str = "cp312",
    variant: tuple[str, dict[str, dict[str, list[str]]]] | None = None,
    *,
    version: str = "1.0",
    platform: str = "manylinux_2_28_x86_64",
) -> WheelReport:
    out = folder / f"{python}-{platform}-{variant[0] if variant else 'plain'}-{version}"
    out.mkdir(parents=True, exist_ok=True)
    path = build_wheel(
        out,
        name="kernels",
        version=version,
        files={"kernels/__init__.py": b""},
        tag=f"{python}-{python}-{platform}",
        variant=variant,
    )
    report = inspect_wheel(path)
    assert report.integrity == (), report.integrity
    return report


def set_problems(reports: list[WheelReport], **rules: object) -> list[str]:
    component = Component.model_validate(
        {
            "name": "kernels",
            "upstream": {"repo": "https://github.com/o/kernels", "branch": "main"},
            "build": {"command": "true"},
            "image": {"repository": "ghcr.io/o/kernels", "tag": "kernels-{version}-g{sha8}"},
            "wheel": {"distribution": "kernels", **rules},
            "pins": [{"file": "Dockerfile", "image_arg": "KERNELS_IMAGE"}],
        }
    )
    wheel_rules = WheelRules(
        **{
            name: check.from_config(getattr(component.wheel, check.field), commit=None)
            for name, check in CHECKS.items()
            if check.kind == "set"
        }
    )
    return [str(problem) for problem in check_wheels(component, reports, wheel_rules) if problem.kind == "set"]


def test_variant_wheels_of_one_python_tag_are_one_set(tmp_path: Path) -> None:
    two = [wheel(tmp_path, variant=GFX942), wheel(tmp_path, variant=GFX950)]
    assert set_problems(two, python_tags=["cp312"]) == []
    assert set_problems(two) == []  # no python_tags: the wheels of one python tag, one per label
    per_tag = [wheel(tmp_path, tag, variant) for tag in ("cp311", "cp312") for variant in (GFX942, GFX950)]
    assert set_problems(per_tag, python_tags=["cp311", "cp312"]) == []


def test_the_non_variant_wheel_and_the_null_variant_may_stand_beside_the_variants(tmp_path: Path) -> None:
    """PEP 825 orders the null variant after every other variant and the non-variant wheel
    after it: the fallbacks of a system no variant fits, and of an installer that reads no
    variants at all."""
    reports = [wheel(tmp_path, variant=GFX942), wheel(tmp_path, variant=NULL), wheel(tmp_path)]
    assert set_problems(reports, python_tags=["cp312"]) == []
    assert set_problems(reports) == []


@pytest.mark.parametrize(
    ("wheels", "rules", "expected"),
    [
        # two wheels of one python tag and label: neither is the one
        (
            [("cp312", GFX942, "manylinux_2_28_x86_64"), ("cp312", GFX942, "manylinux_2_34_x86_64")],
            {"python_tags": ["cp312"]},
            ["expected one wheel for cp312 (variant amd_gfx942), found 2"],
        ),
        (
            [("cp312", GFX942, "manylinux_2_28_x86_64"), ("cp312", GFX942, "manylinux_2_34_x86_64")],
            {},
            ["expected one wheel for variant amd_gfx942, found 2"],
        ),
        # two non-variant wheels beside variant wheels of their tag
        (
            [
                ("cp312", GFX942, "manylinux_2_28_x86_64"),
                ("cp312", None, "manylinux_2_28_x86_64"),
                ("cp312", None, "manylinux_2_34_x86_64"),
            ],
            {"python_tags": ["cp312"]},
            ["expected one wheel for cp312 (no variant), found 2"],
        ),
        # no variant at all: as before variants were known
        (
            [("cp312", None, "manylinux_2_28_x86_64"), ("cp312", None, "manylinux_2_34_x86_64")],
            {"python_tags": ["cp312"]},
            ["expected one wheel for cp312, found 2"],
        ),
        (
            [("cp312", None, "manylinux_2_28_x86_64"), ("cp313", None, "manylinux_2_28_x86_64")],
            {},
            ["expected one wheel, found 2 (list wheel.python_tags for several)"],
        ),
        # variant wheels of two python tags with none listed
        (
            [("cp311", GFX942, "manylinux_2_28_x86_64"), ("cp312", GFX950, "manylinux_2_28_x86_64")],
            {},
            ["the wheels are of several python tags, cp311 and cp312 (list wheel.python_tags for several)"],
        ),
        (
            [("cp312", GFX942, "manylinux_2_28_x86_64")],
            {"python_tags": ["cp311", "cp312"]},
            ["expected one wheel for cp311, found 0"],
        ),
    ],
)
def test_a_set_no_installer_can_choose_from_is_refused(
    tmp_path: Path,
    wheels: list[tuple[str, tuple[str, dict[str, dict[str, list[str]]]] | None, str]],
    rules: dict[str, object],
    expected: list[str],
) -> None:
    reports = [wheel(tmp_path, python, variant, platform=platform) for python, variant, platform in wheels]
    assert set_problems(reports, **rules) == expected


def test_variant_wheels_of_two_versions_are_refused(tmp_path: Path) -> None:
    reports = [wheel(tmp_path, variant=GFX942, version="1.0"), wheel(tmp_path, variant=GFX950, version="1.1")]
    assert set_problems(reports, python_tags=["cp312"]) == ["the wheels carry several versions: 1.0, 1.1"]


def test_one_label_giving_two_property_sets_is_refused(tmp_path: Path) -> None:
    """PEP 825: every wheel of one label in one package version carries the same properties."""
    other = ("amd_gfx942", {"amd": {"gfx_arch": ["gfx942", "gfx950"]}})
    reports = [wheel(tmp_path, "cp311", GFX942), wheel(tmp_path, "cp312", other)]
    assert set_problems(reports, python_tags=["cp311", "cp312"]) == [
        "variant amd_gfx942 is given two property sets: `amd :: gfx_arch :: gfx942` by "
        "kernels-1.0-cp311-cp311-manylinux_2_28_x86_64-amd_gfx942.whl, `amd :: gfx_arch :: gfx942`, "
        "`amd :: gfx_arch :: gfx950` by kernels-1.0-cp312-cp312-manylinux_2_28_x86_64-amd_gfx942.whl "
        "(PEP 825: one label, one property set in a version)"
    ]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["amd_gfx942", "amd_gfx950"], []),
        (
            ["amd_gfx942", "amd_gfx950", "amd_gfx90a"],
            ["cp311 has no wheel of variant amd_gfx90a", "cp312 has no wheel of variant amd_gfx90a"],
        ),
        (["amd_gfx942", "amd_gfx950", ""], ["cp311 has no non-variant wheel", "cp312 has no non-variant wheel"]),
        (
            ["amd_gfx942"],
            [
                "kernels-1.0-cp311-cp311-manylinux_2_28_x86_64-amd_gfx950.whl is of variant amd_gfx950, "
                "which wheel.variants does not list",
                "kernels-1.0-cp312-cp312-manylinux_2_28_x86_64-amd_gfx950.whl is of variant amd_gfx950, "
                "which wheel.variants does not list",
            ],
        ),
    ],
)
def test_wheel_variants_names_the_labels_each_python_tag_must_have(
    tmp_path: Path, labels: list[str], expected: list[str]
) -> None:
    reports = [wheel(tmp_path, tag, variant) for tag in ("cp311", "cp312") for variant in (GFX942, GFX950)]
    assert set_problems(reports, python_tags=["cp311", "cp312"], variants=labels) == expected


def test_wheel_variants_with_the_non_variant_wheel(tmp_path: Path) -> None:
    reports = [wheel(tmp_path, variant=GFX942), wheel(tmp_path)]
    assert set_problems(reports, variants=["amd_gfx942", ""]) == []
    assert set_problems(reports, variants=["amd_gfx942"]) == [
        "kernels-1.0-cp312-cp312-manylinux_2_28_x86_64.whl is no variant wheel, and wheel.variants does not "
        'list "" (the non-variant wheel)'
    ]


@pytest.mark.parametrize(
    ("labels", "error"),
    [
        (["amd_gfx942", "amd_gfx942"], "variants lists a label twice"),
        (["AMD-gfx942"], "'AMD-gfx942' is not a variant label"),
        (["amd_gfx942_and_gfx950"], "'amd_gfx942_and_gfx950' is not a variant label"),
    ],
)
def test_wheel_variants_holds_labels_pep_825_allows(labels: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Wheel.model_validate({"distribution": "kernels", "variants": labels})


def test_a_refusal_says_which_variant_wheel_of_a_tag_broke_a_rule(tmp_path: Path) -> None:
    """Of two wheels of cp312, the one of label amd_gfx950 promises a GPU target it has no
    code for (core/checks/variant.py): the summary names its row, not the tag both share."""
    reports = [wheel(tmp_path, variant=("x8664v3", {"x86_64": {"level": ["v3"]}})), wheel(tmp_path, variant=GFX950)]
    component = Component.model_validate(
        {
            "name": "kernels",
            "upstream": {"repo": "https://github.com/o/kernels", "branch": "main"},
            "build": {"command": "true"},
            "image": {"repository": "ghcr.io/o/kernels", "tag": "kernels-{version}-g{sha8}"},
            "wheel": {"distribution": "kernels", "python_tags": ["cp312"]},
            "pins": [{"file": "Dockerfile", "image_arg": "KERNELS_IMAGE"}],
        }
    )
    found = check_wheels(component, reports, component_rules(component, commit=None))
    assert summary(found, wheels=2) == (
        "variant: variant amd_gfx950 promises gfx950, but the wheel has no HIP device code "
        "(in cp312 (variant amd_gfx950))"
    )

"""An image's record of a wheel (core/image/oci.py WheelEntry) read back as the report the
wheel checks judge (`WheelEntry.as_report`), as `config validate --online` judges a pinned
image's wheels: a rule the record breaks, the wheel breaks too; what the record keeps no
fact of (an arch only some GPU libraries carry) passes. The wheels are real: the demo's
stub HIP libraries (core/wheel/hipstub.py), read by the same code as the verify step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.core.checks.rules import WheelRules, checked_problems
from bot.core.image.oci import WheelEntry
from bot.core.wheel.amdgpu import TargetId
from bot.core.wheel.hipstub import hip_library
from bot.core.wheel.report import WheelReport, inspect_wheel
from tests.fixtures.wheels import build_wheel


def broken(report: WheelReport, rules: WheelRules) -> set[str]:
    """The names of the checks the report breaks under `rules`."""
    return {check.name for check, _ in checked_problems(report, rules) if check is not None}


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> WheelReport:
    """A variant wheel promising gfx950 whose two GPU libraries both need the HIP runtime
    and carry gfx942, and only one of which carries gfx950."""
    libraries = {"_a.so": ("gfx942", "gfx950"), "_b.so": ("gfx942",)}
    wheel = build_wheel(
        tmp_path_factory.mktemp("partial"),
        name="demo-cache",
        version="0.1.0+g22222222",
        tag="cp312-cp312-manylinux_2_28_x86_64",
        files={
            "demo_cache/__init__.py": b"",
            **{
                f"demo_cache/{name}": hip_library(soname=name, needed=["libamdhip64.so.7"], targets=targets)
                for name, targets in libraries.items()
            },
        },
        variant=("amd_gfx950", {"amd": {"gfx_arch": ["gfx950"]}}),
    )
    return inspect_wheel(wheel)


def arch(*names: str) -> tuple[TargetId, ...]:
    return tuple(TargetId.parse(name) for name in names)


RULES = {
    "an arch every library carries": WheelRules(require_archs=arch("gfx942")),
    "an arch one library carries": WheelRules(require_archs=arch("gfx950")),
    "an arch none carries": WheelRules(require_archs=arch("gfx90a")),
    "a wanted arch none carries": WheelRules(wanted_archs=arch("gfx90a")),
    "a library needed": WheelRules(require_needed=("libamdhip64.so*",)),
    "a library not needed": WheelRules(require_needed=("libamdhip46.so*",)),
    "a library forbidden": WheelRules(forbid_needed=("libamdhip64.so*",)),
    "the variant's promise kept by one library": WheelRules(),
    "a commit carried": WheelRules(expect_commit="22222222"),
    "a commit not carried": WheelRules(expect_commit="33333333"),
    "a glibc older than the tag's": WheelRules(max_glibc=(2, 17)),
}


@pytest.mark.parametrize("rules", RULES.values(), ids=RULES.keys())
def test_a_rule_the_record_breaks_the_wheel_breaks(partial: WheelReport, rules: WheelRules) -> None:
    record = WheelEntry.of_report(partial).as_report()
    assert broken(record, rules) <= broken(partial, rules)


def test_what_the_record_keeps_no_fact_of_passes(partial: WheelReport) -> None:
    """An arch one GPU library lacks, and a variant promising it: the wheel breaks both; its
    record, holding what all its libraries carry together, breaks neither."""
    record = WheelEntry.of_report(partial).as_report()
    rules = RULES["an arch one library carries"]
    assert broken(partial, rules) == {"require_archs", "allow_variant_mismatch"}
    assert broken(record, rules) == set()
    (library,) = record.elf
    assert library.path == "the wheel" and library.needed == ("libamdhip64.so.7",)
    assert library.targets == ("gfx942", "gfx950")


def test_the_records_sentences_are_the_rules_own(partial: WheelReport) -> None:
    record = WheelEntry.of_report(partial).as_report()
    found = [finding.text for _, finding in checked_problems(record, RULES["an arch none carries"])]
    assert found == ["the wheel has no code for gfx90a (it carries gfx942, gfx950)"]


@pytest.mark.parametrize("rules", RULES.values(), ids=RULES.keys())
def test_a_record_without_elf_facts_is_judged_only_by_rules_that_do_not_want_them(
    partial: WheelReport, rules: WheelRules
) -> None:
    """An older wheelpin's image records no DT_NEEDED (nor archs): its record has no ELF
    file, and only a check that `wants_elf` (which validate leaves unjudged then) may find
    a problem the wheel does not have."""
    record = replace(WheelEntry.of_report(partial), needed=None, archs=(), archs_partial=()).as_report()
    assert record.elf == ()
    checks = {check.name: check for check, _ in checked_problems(record, rules) if check is not None}
    assert all(check.wants_elf for name, check in checks.items() if name not in broken(partial, rules))

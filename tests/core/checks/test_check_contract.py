"""The contract every wheel check of bot/core/checks/api.py keeps (as Renovate's contract
tests hold each manager of lib/modules/manager/api.ts to one interface): it declares a kind,
a label, a `[wheel]` field and a `wheel inspect` flag; its flag parses; a wheel that
satisfies it passes, from the flag and from the config; one that breaks it is refused with
a problem of its kind, said under its label; the proposal's Verification section says it.

The wheel is the real LMCache-like ROCm wheel of tests/conftest.py (clang's HIP code in two
libraries); each case breaks one rule of it and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bot.adapters.configdisk import load_config
from bot.cli import build_parser
from bot.core.checks.api import CHECKS, KINDS, LABELS
from bot.core.checks.base import WheelCheck
from bot.core.checks.component import check_wheels, component_rules, summary
from bot.core.checks.rules import WheelRules, kinded_problems, problems
from bot.core.config.model import Component, Wheel
from bot.core.proposal.assemble import verification_lines
from bot.core.proposal.text import ProposalFacts, body
from bot.core.wheel.metadata import Variant
from bot.core.wheel.report import WheelReport, inspect_wheel

COMMIT = "05fc77a0" + "1" * 32
CONFIGS = Path(__file__).resolve().parents[3] / "config"


def _needing(library: str) -> Callable[[WheelReport], WheelReport]:
    return lambda report: replace(
        report, elf=(replace(report.elf[0], needed=(*report.elf[0].needed, library)), *report.elf[1:])
    )


def _variant(*archs: str) -> Callable[[WheelReport], WheelReport]:
    """The wheel as a variant wheel whose properties promise `archs` (the AMD variant
    provider's `amd :: gfx_arch`: core/checks/variant.py)."""
    return lambda report: replace(
        report, variant=Variant("amd_" + "_".join(archs), tuple(f"amd :: gfx_arch :: {arch}" for arch in archs))
    )


def _tagged(platform: str) -> Callable[[WheelReport], WheelReport]:
    return lambda report: replace(report, filename=report.filename.replace("manylinux_2_39_x86_64", platform))


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]  # the wheel inspect flags that ask the rule (none where the default does)
    config: object  # the value of the check's [wheel] field that asks it
    breaks: Callable[[WheelReport], WheelReport]  # the wheel, breaking the rule and no other
    fits: Callable[[WheelReport], WheelReport] = lambda report: report


CASES: dict[str, Case] = {
    "expect_name": Case(("--expect-name", "LMCache"), "lmcache", lambda r: replace(r, name="vllm")),
    "expect_commit": Case(
        ("--expect-commit", COMMIT[:8]), True, lambda r: replace(r, version=r.version.replace("g05fc77a0", "g3d3aa833"))
    ),
    "python_tags": Case((), ["cp312"], lambda r: r),  # broken by two wheels for cp312: see set_of
    # broken by a wheel that is no variant wheel, where wheel.variants lists only amd_gfx942
    "variants": Case((), ["amd_gfx942"], lambda r: r, fits=_variant("gfx942")),
    "local_segments": Case(
        ("--expect-segment", "torch2.10"),
        ["torch2.10"],
        lambda r: replace(r, version=r.version.replace("torch2.10", "torch2.11")),
    ),
    "require_archs": Case(("--require-arch", "gfx942"), ["gfx942"], lambda r: replace(r, elf=())),
    "wanted_archs": Case(
        ("--want-arch", "gfx942", "--want-arch", "gfx950"),
        ["gfx942", "gfx950"],
        lambda r: replace(r, elf=tuple(replace(e, targets=("gfx1100",)) for e in r.elf)),
    ),
    "allow_variant_mismatch": Case((), False, _variant("gfx942", "gfx950"), fits=_variant("gfx942")),
    "rocm": Case((), True, _needing("libcudart.so.12")),
    "forbid_needed": Case(("--forbid-needed", "libcrypt*"), ["libcrypt*"], _needing("libcrypt.so.1")),
    "require_needed": Case(
        ("--require-needed", "libm.so*"),
        ["libm.so*"],
        lambda r: replace(r, elf=tuple(replace(e, needed=()) for e in r.elf)),
    ),
    "allow_vendored_rocm": Case(
        (),
        False,
        lambda r: replace(
            r,
            elf=(
                *r.elf,
                replace(r.elf[0], path="lmcache.libs/libamdhip64-5f3a9c1e.so.7", soname="libamdhip64-5f3a9c1e.so.7"),
            ),
        ),
    ),
    "max_glibc": Case(
        ("--max-glibc", "2.28"), "2.28", _tagged("manylinux_2_34_x86_64"), fits=_tagged("manylinux_2_28_x86_64")
    ),
}
# Checks whose passing the proposal has never said (it lists what was asked of the wheel,
# not every default refusal); saying them now would change every proposal's text.
SILENT = {"forbid_needed", "allow_vendored_rocm", "allow_variant_mismatch"}


@pytest.fixture(scope="module")
def report(rocm_wheel: Path) -> WheelReport:
    return inspect_wheel(rocm_wheel)


@pytest.fixture(scope="module")
def base() -> Component:
    return load_config(
        CONFIGS / "atom-lmcache" / ".github" / "wheelpin.toml", root=CONFIGS / "atom-lmcache"
    ).config.components[0]


def configured(base: Component, check: WheelCheck[object], value: object) -> Component:
    """A component whose `[wheel]` table is `distribution = "lmcache"` and the check's field,
    read as a config file is (validated)."""
    wheel = Wheel.model_validate({"distribution": "lmcache", check.field: value})
    return base.model_copy(update={"wheel": wheel})


def set_of(name: str, report: WheelReport, broken: bool) -> list[WheelReport]:
    if name == "python_tags":
        return [report, report] if broken else [report]
    return [CASES[name].breaks(report) if broken else CASES[name].fits(report)]


def inspect_rules(argv: tuple[str, ...]) -> WheelRules:
    from bot.commands.wheel import flagged_checks

    args = build_parser("wheel").parse_args(["wheel", "inspect", "x.whl", *argv])
    return WheelRules.from_flags({name: getattr(args, name) for name in flagged_checks()})


def test_every_check_has_a_case_and_a_declaration() -> None:
    assert list(CASES) == list(CHECKS)
    for name, check in CHECKS.items():
        assert check.name == name and check.kind in KINDS and LABELS[check.kind] == check.label
        assert check.field in Wheel.model_fields, f"{name}: config.Wheel has no field {check.field}"
        assert check.flag is not None or name in {"python_tags", "variants"}  # wheel inspect reads one wheel: no set
    flags = [check.flag.option for check in CHECKS.values() if check.flag]
    assert len(set(flags)) == len(flags)


@pytest.mark.parametrize("name", [name for name, check in CHECKS.items() if check.flag])
def test_its_flag_parses_into_its_rule(name: str) -> None:
    check = CHECKS[name]
    assert check.flag is not None
    asked = CASES[name].argv or (check.flag.option,)  # a rule on by default: its flag turns it off
    assert inspect_rules(asked).of(check) != check.default
    assert inspect_rules(()) == WheelRules()


@pytest.mark.parametrize("name", [name for name, check in CHECKS.items() if check.flag])
def test_from_its_flag_a_fitting_wheel_passes_and_a_breaking_one_has_a_problem_of_its_kind(
    name: str, report: WheelReport
) -> None:
    check, case = CHECKS[name], CASES[name]
    rules = inspect_rules(case.argv)
    assert problems(case.fits(report), rules) == []
    found = kinded_problems(case.breaks(report), rules)
    assert found and {finding.kind for finding in found} == {check.kind}


@pytest.mark.parametrize("name", list(CHECKS))
def test_from_its_config_field_it_refuses_under_its_label_and_the_proposal_says_it_passed(
    name: str, report: WheelReport, base: Component
) -> None:
    check = CHECKS[name]
    component = configured(base, check, CASES[name].config)
    rules = component_rules(component, commit=COMMIT)
    assert check_wheels(component, set_of(name, report, broken=False), rules) == []
    wheels = set_of(name, report, broken=True)
    found = check_wheels(component, wheels, rules)
    assert found and {problem.kind for problem in found} == {check.kind}
    assert summary(found, wheels=len(wheels)).startswith(f"{check.label}: " if check.label else "distribution is")

    said = check.passed(rules.of(check))
    assert bool(said) != (name in SILENT)
    lines = verification_lines(component, COMMIT)
    text = body(
        ProposalFacts(
            component="lmcache",
            upstream="https://github.com/LMCache/LMCache",
            old_commit=None,
            new_commit=COMMIT,
            version=report.version,
            image="ghcr.io/o/lmcache@sha256:" + "c" * 64,
            wheels=(),
            verification=lines,
        )
    )
    section = text.split("### Verification\n", 1)[1]
    assert all(f"- ✅ {line}\n" in section for line in said)


def test_the_registry_loads_nothing_a_check_judges_with() -> None:
    """The CLI builds its flags from it on every start-up, `wheelpin --help` too."""
    from tests.test_startup import modules_after

    loaded = modules_after("import bot.core.checks.api")
    assert not {"packaging", "dataclasses", "pydantic"} & loaded

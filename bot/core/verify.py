"""A component's verify rules (docs/design.md §1.3), from its config and the built commit."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.utils import parse_wheel_filename

from .amdgpu import TargetId
from .checks import WheelRules, problems
from .config import Component
from .inspect import WheelReport


def component_rules(component: Component, *, commit: str | None) -> WheelRules:
    wheel = component.wheel
    return WheelRules(
        require_archs=tuple(TargetId.parse(arch) for arch in wheel.archs),
        expect_name=wheel.distribution,
        expect_commit=commit if (commit and wheel.version_carries_commit) else None,
        rocm=wheel.rocm,
        require_needed=tuple(wheel.require_needed),
        forbid_needed=tuple(wheel.forbid_needed),
        local_segments=tuple(wheel.local_segments),
    )


def python_tags_of(filename: str) -> set[str]:
    return {tag.interpreter for tag in parse_wheel_filename(filename)[3]}


def wheel_set_problems(component: Component, reports: Sequence[WheelReport]) -> list[str]:
    """One wheel per configured python tag (or exactly one wheel when none are listed),
    all of one version."""
    found: list[str] = []
    wanted = component.wheel.python_tags
    if not reports:
        return ["no wheel was given"]
    if wanted:
        for tag in wanted:
            matching = [r.filename for r in reports if tag in python_tags_of(r.filename)]
            if len(matching) != 1:
                found.append(f"expected one wheel for {tag}, found {len(matching)}")
        extra = [r.filename for r in reports if not python_tags_of(r.filename) & set(wanted)]
        found += [f"{name} is for none of the python tags {', '.join(wanted)}" for name in extra]
    elif len(reports) != 1:
        found.append(f"expected one wheel, found {len(reports)} (list wheel.python_tags for several)")
    versions = sorted({r.version for r in reports})
    if len(versions) > 1:
        found.append(f"the wheels carry several versions: {', '.join(versions)}")
    return found


def verify_wheels(component: Component | None, reports: Sequence[WheelReport],
                  rules: WheelRules) -> list[str]:
    """Every problem of every wheel, prefixed by its file name, and of the set."""
    found = [] if component is None else wheel_set_problems(component, reports)
    for report in reports:
        found += [f"{report.filename}: {problem}" for problem in problems(report, rules)]
    return found

"""A component's wheels as a set: one wheel per configured python tag (or exactly one wheel
when none are listed), all of one version. Judged only for a component's wheels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .base import Finding, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport


def python_tags_of(filename: str) -> set[str]:
    from ..wheel.metadata import wheel_filename_parts

    return {tag.interpreter for tag in wheel_filename_parts(filename)[3]}


class WheelSetCheck(WheelCheck[tuple[str, ...] | None]):
    name = "python_tags"
    kind = "set"
    label = "wheel set"
    field = "python_tags"
    flag = None  # `wheel inspect` reads one wheel
    default = None

    def check(self, report: WheelReport, rule: tuple[str, ...] | None) -> list[Finding]:
        return []

    def check_set(self, reports: Sequence[WheelReport], rule: tuple[str, ...] | None) -> list[str]:
        if rule is None:
            return []
        if not reports:
            return ["no wheel was given"]
        found: list[str] = []
        if rule:
            for tag in rule:
                matching = [r.filename for r in reports if tag in python_tags_of(r.filename)]
                if len(matching) != 1:
                    found.append(f"expected one wheel for {tag}, found {len(matching)}")
            extra = [r.filename for r in reports if not python_tags_of(r.filename) & set(rule)]
            found += [f"{name} is for none of the python tags {', '.join(rule)}" for name in extra]
        elif len(reports) != 1:
            found.append(f"expected one wheel, found {len(reports)} (list wheel.python_tags for several)")
        versions = sorted({r.version for r in reports})
        if len(versions) > 1:
            found.append(f"the wheels carry several versions: {', '.join(versions)}")
        return found

    def passed(self, rule: tuple[str, ...] | None) -> list[str]:
        return ["one wheel each for " + ", ".join(rule)] if rule else []

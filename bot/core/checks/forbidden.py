"""No ELF of the wheel needs (DT_NEEDED) a library the config forbids."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport


class ForbiddenCheck(WheelCheck[tuple[str, ...]]):
    name = "forbid_needed"
    kind = "libraries"
    label = "libraries"
    field = "forbid_needed"
    flag = Flag(
        "--forbid-needed", "no ELF may need a library matching GLOB (repeatable)", metavar="GLOB", repeatable=True
    )
    default = ()

    def check(self, report: WheelReport, rule: tuple[str, ...]) -> list[Finding]:
        return self.needing(report, rule, "a forbidden")

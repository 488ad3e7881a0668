"""The wheel is of the configured distribution, compared normalised (PEP 503)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport


class NameCheck(WheelCheck[str | None]):
    name = "expect_name"
    kind = "name"
    label = ""  # the sentence names the distribution itself
    field = "distribution"
    flag = Flag("--expect-name", "the distribution name", metavar="NAME")
    default = None

    def check(self, report: WheelReport, rule: str | None) -> list[Finding]:
        from packaging.utils import canonicalize_name

        if rule is None or canonicalize_name(report.name) == canonicalize_name(rule):
            return []
        return self.found([f"distribution is {report.name!r}, expected {rule!r}"])

    def passed(self, rule: str | None) -> list[str]:
        return [] if rule is None else [f"distribution {rule}"]

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
        if rule is None or same_distribution(report.name, rule):
            return []
        return self.found([f"distribution is {report.name!r}, expected {rule!r}"])

    def passed(self, rule: str | None) -> list[str]:
        return [] if rule is None else [f"distribution {rule}"]


def same_distribution(name: str, other: str) -> bool:
    """Whether two distribution names are one, as PEP 503 normalizes them (`Demo_Cache` is `demo-cache`)."""
    from packaging.utils import canonicalize_name

    return canonicalize_name(name) == canonicalize_name(other)

"""The wheel's local version carries the built commit as g<hex> (LMCache's `+g05fc77a0`),
and a tag naming a commit names the one its wheels carry."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport

_COMMIT_SEGMENT = re.compile(r"^g([0-9a-f]{8,40})$")
_HEX = re.compile(r"^[0-9a-f]{8,40}$")
_TAG_COMMIT = re.compile(r"(?:^|[^A-Za-z0-9])g([0-9a-f]{8,40})(?=$|[^A-Za-z0-9])")


class CommitCheck(WheelCheck[str | None]):
    name = "expect_commit"
    kind = "commit"
    label = "commit"
    field = "version_carries_commit"
    flag = Flag("--expect-commit", "the local version must carry g + the commit's first 8+ hex digits", metavar="SHA")
    default = None

    def accept(self, value: Any) -> str | None:
        if value is not None and not _HEX.match(str(value).lower()):
            raise ValueError(f"expected commit {value!r} is not 8 to 40 hex digits")
        return value  # type: ignore[no-any-return]

    def from_config(self, value: Any, *, commit: str | None) -> str | None:
        return self.accept(commit if (commit and value) else None)

    def check(self, report: WheelReport, rule: str | None) -> list[Finding]:
        if rule is None:
            return []
        commit = rule.lower()
        if report.version_parsed.local is None:
            return self.found([f"version {report.version} carries no commit (expected g{commit[:8]})"])
        if any(commit.startswith(written) or written.startswith(commit) for written in commits_in(report.version)):
            return []
        return self.found([f"version {report.version} does not carry commit g{commit[:8]}"])

    def passed(self, rule: str | None) -> list[str]:
        return [f"version carries g{rule[:8]}" if rule else "version carries no commit; the tag does"]


def commits_in(version: str) -> list[str]:
    """The commits a version's local part carries as g<hex> (LMCache's `+g05fc77a0`)."""
    from ..wheel.localversion import local_parts

    return [match.group(1) for part in local_parts(version) if (match := _COMMIT_SEGMENT.match(part))]


def tag_commit_problems(tag: str, reports: list[WheelReport]) -> list[str]:
    """A tag naming a commit (`…-g05fc77a0-…`) over wheels whose versions carry another:
    the tag would drift from its wheel. Wheels that carry no commit are not judged."""
    named = _TAG_COMMIT.findall(tag)
    if not named:
        return []
    found: list[str] = []
    for report in reports:
        carried = commits_in(report.version)
        commit = carried[0] if carried else None
        if commit is not None and not any(c.startswith(commit) or commit.startswith(c) for c in named):
            found.append(
                f"{report.filename}: tag {tag} names commit g{named[0][:8]}, but the wheel's "
                f"version {report.version} carries g{commit[:8]}"
            )
    return found

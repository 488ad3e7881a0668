"""The service's unit of work (docs/design.md §2, app/): one model for what a webhook
delivery or the schedule asks, and for what the work queue coalesces. Two jobs that
compare equal are one job: a burst of deliveries for one repository is one pass, and a
sender repeating a command is one command (the comments that gave it ride along and do
not count in the comparison)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class JobKind(StrEnum):
    INSTALLATIONS = "installations"  # which repositories to watch
    CONFIG = "config"  # read a repository's config again, schedule its components
    REPOSITORY = "repository"  # the same, and a pass of each component
    COMPONENT = "component"  # one pass of one component
    COMMAND = "command"  # `/wheelpin rebase|recheck|skip|build --from-run N` on a bot pull request (build: or the dashboard)
    DASHBOARD = "dashboard"  # bring the dashboard issue up to date


@dataclass(frozen=True)
class Job:
    kind: JobKind
    repository: str = "*"  # `owner/name`; "*" for the installations
    component: str | None = None
    command: str | None = None  # rebase | recheck | skip | build
    run: int | None = None  # build: the Actions run whose artifacts are the build (`--from-run`)
    number: int | None = None  # the pull request (or the dashboard issue) a command was given on
    on_dashboard: bool = False  # given on the dashboard issue: `/wheelpin build --from-run N [--component C]`
    sender: str | None = None  # who gave it (the service checks their access)
    granted: bool = False  # installations after the App's new permissions were accepted: refused writes retried
    comment: int | None = field(default=None, compare=False)  # the comment that gave a command (reacted to)
    seen: str | None = field(default=None, compare=False)  # the upstream commit that pull request proposed then

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", JobKind(self.kind))  # "component" is JobKind.COMPONENT

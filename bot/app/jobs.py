"""The service's unit of work (docs/design.md §2, app/): one model for what a webhook
delivery or the schedule asks, and for what the work queue coalesces. Part of the
service's contract with a forge (a forge's door turns a delivery into jobs): it imports
core alone, so a forge's package may name it (tests/test_layout.py). Two jobs that
compare equal are one job: a burst of deliveries for one repository is one pass, and a
sender repeating a command is one command (the comments that gave it ride along and do
not count in the comparison)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, Protocol


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

    @property
    def key(self) -> str:
        """The job as one string, equal for jobs that compare equal: what coalesces it on
        PostgreSQL (procrastinate's `queueing_lock`) and names its comments there."""
        return json.dumps([getattr(self, f.name) for f in fields(self) if f.compare], separators=(",", ":"))

    @property
    def lock(self) -> str:
        """What runs one job at a time: the repository (its reconciler and state are used by
        one job only); the installations job, which changes the watch list, has its own."""
        return f"repository:{self.repository}" if self.kind is not JobKind.INSTALLATIONS else "installations"

    def to_args(self) -> dict[str, Any]:
        """As JSON-able arguments of a task on PostgreSQL (every field, the comment too)."""
        return asdict(self)

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> Job:
        known = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in args.items() if name in known})


class Intake(Protocol):
    """Where jobs go: the in-process work queue (app/workqueue.py) or the one on
    PostgreSQL (app/pgqueue.py) that several replicas share."""

    def put(self, key: Job, *, note: str | None = None, urgent: bool = False) -> None: ...

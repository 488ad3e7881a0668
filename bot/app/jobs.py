"""The service's unit of work (docs/design.md §2, app/): one model for what a webhook
delivery or the schedule asks, and for what the work queue coalesces. Part of the
service's contract with a forge (a forge's door turns a delivery into jobs): it imports
core alone, so a forge's package may name it (tests/test_layout.py). Two jobs that
compare equal are one job: a burst of deliveries for one repository is one pass, and a
sender repeating a command is one command (the comments that gave it ride along and do
not count in the comparison)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, Protocol, Self

from ..core.config.model import BRANCH_PREFIX, ActionsBuild, Config


def repository_key(name: str) -> str:
    """What every spelling of one repository's `OWNER/NAME` shares: the one rule by which the
    service matches a repository's name (its watch list, the routing of deliveries, the
    queue's one-job-a-repository, the leases). GitHub's owner and repository names "are
    not case sensitive" (its OpenAPI description, `repos/get`'s parameters), so a delivery
    naming `ROCm/Atom` is about the repository watched as `rocm/atom`. Its names are ASCII
    (letters, digits, `-`, `_`, `.`), where `lower()` is PostgreSQL's `lower()` too
    (app/shared.py matches so). A name is still spelt as the forge lists it: the key only
    matches."""
    return name.lower()


class JobKind(StrEnum):
    INSTALLATIONS = "installations"  # which repositories to watch
    CONFIG = "config"  # read a repository's config again, schedule its components
    REPOSITORY = "repository"  # the same, and a pass of each component
    COMPONENT = "component"  # one pass of one component
    COMMAND = (
        "command"  # `/wheelpin rebase|recheck|skip|build --from-run N` on a bot pull request (build: or the dashboard)
    )
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
        if self.kind is JobKind.INSTALLATIONS:
            return "installations"
        return f"repository:{repository_key(self.repository)}"  # however a delivery spelt it

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


@dataclass(frozen=True)
class Routing:
    """What a delivery about a repository is matched against: its config's bot branches,
    base branches and build workflows (kept by the service for the door's threads, as
    JSON with a database)."""

    prefix: str = BRANCH_PREFIX  # the bot's branches: `<prefix><component>`
    bases: frozenset[str] = frozenset({"main"})  # a push to one of them re-reads the repository
    workflows: frozenset[str] = frozenset()  # build workflows (file or name); none: any run's end counts

    @classmethod
    def of(cls, config: Config) -> Self:
        return cls(
            config.defaults.branch_prefix,
            frozenset({config.defaults.base_branch}),
            frozenset(c.build.workflow for c in config.components if isinstance(c.build, ActionsBuild)),
        )

    def to_json(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "bases": sorted(self.bases), "workflows": sorted(self.workflows)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls(str(data["prefix"]), frozenset(data["bases"]), frozenset(data["workflows"]))


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery as a forge's door read it: the jobs it asks for, or an answer
    given at once (a ping), and what the logs and metrics say of it."""

    event: str  # the forge's name for what happened (`push`): the metrics' label
    jobs: tuple[Job, ...] = ()
    repository: str | None = None
    action: str | None = None
    reply: dict[str, Any] | None = None  # answered at once, asking for nothing
    outcome: str | None = None  # the metrics' outcome of a reply (otherwise queued or ignored)
    id: str = ""  # the forge's id of the delivery: the note its jobs carry, naming their cause


class Refused(Exception):
    """A delivery the door does not take: the HTTP status to answer, one sentence, and the
    event and outcome the metrics count it under."""

    def __init__(self, status: int, message: str, *, event: str, outcome: str | None) -> None:
        super().__init__(message)
        self.status, self.message, self.event, self.outcome = status, message, event, outcome


class Door(Protocol):
    """A forge's webhook door: a request's headers (lower-case names) and body in, a
    Delivery out, or Refused. It never queues nor does the work: the service does."""

    max_body: int  # bytes: a longer body is refused (413) before the door sees it

    def context(self, headers: Mapping[str, str]) -> dict[str, str | None]:
        """What the logs of this request carry (the forge's delivery id and event)."""
        ...

    def event_of(self, headers: Mapping[str, str]) -> str:
        """The event the headers name, "" when none: the metrics' label before the body is read."""
        ...

    def read(self, headers: Mapping[str, str], body: bytes, routing: Callable[[str | None], Routing]) -> Delivery:
        """The delivery, verified and read; `routing` gives a repository's Routing."""
        ...

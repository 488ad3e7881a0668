"""What a pass of the loop did: each action's `Outcome` for the next action of the same
plan, and per component and in all what the CLI prints and the service turns into a
dashboard row, metrics and a job outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.decide.backoff import Failure
from ..core.decide.plan import Action, Facts, Report

if TYPE_CHECKING:
    from ..adapters.provenance import Attached
    from ..adapters.smoke import SmokeResult
    from ..core.image.oci import WheelEntry
    from .preview import ComponentPlan


@dataclass(frozen=True)
class Outcome:
    """What the actions of one plan have done so far, handed to the next: the facts as they
    stand now, and what an action learned that a later one says or uses (a build's wheels
    from fetching to publishing; who made the build, its smoke test and the image's wheels
    from publishing or adopting to the proposal). A plan starts from its observation's facts."""

    facts: Facts
    wheels: tuple[Path, ...] | None = None  # the build's wheels, collected
    made_by: str | None = None  # who made the build, said before the build folder goes
    smoke: SmokeResult | None = None  # the smoke test of the wheels the image holds
    image_wheels: tuple[WheelEntry, ...] | None = None  # what `facts.image` holds, as published or verified
    image_size: int | None = None  # its size as pulled, with its wheels
    attached: tuple[Attached, ...] | None = None  # the provenance and SBOM the publish attached to it


class Status(StrEnum):
    NOTHING = "nothing"  # the world was as it should be
    DONE = "done"  # actions ran and the world is as it should be now
    FAILED = "failed"
    WAITING = "waiting"  # a quiet period, a build under way
    LEFT_ALONE = "left-alone"  # a branch a human wrote to
    PLANNED = "planned"  # a dry run: the plan, not run


@dataclass
class ComponentResult:
    name: str
    status: Status = Status.NOTHING
    head: str | None = None
    actions: list[Action] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    error_kind: str | None = None  # when failed: config | verification | refused | transient | … | reported
    pinned: str | None = None  # the upstream commit the base pins today
    image: str | None = None  # the image of `head`, when there is one
    proposal: str | None = None  # the bot's branch, when it exists
    build: str = ""  # where the build of `head` stands
    retry_after: float | None = None  # when failed for a reason that says how long it lasts (a rate limit)
    notes: list[str] = field(default_factory=list)  # what a reviewer must not miss (a wanted arch skipped)
    problems: list[str] = field(default_factory=list)  # every problem of a refused wheel (messages say a summary)
    pruned: list[str] = field(default_factory=list)  # superseded image tags deleted (image.prune_after_days)
    plan: ComponentPlan | None = None  # a dry run's plan (loop/preview.py)
    retry: str | None = None  # when a failed build or refused wheel of `head` is tried again (core/decide/backoff.py)
    failed_at: Action | None = None  # the action the pass failed at: in `actions` (it was tried), not done

    def action_said(self, action: Action) -> str:
        """An action as the pass's text and summary list it: its kind and detail, and
        `(failed)` for the one the pass failed at (which may have done part of its work: a
        publish whose documents could not be attached pushed its tag)."""
        said = f"{action.kind.value} {action.detail}".rstrip()
        return f"{said} (failed)" if action is self.failed_at else said

    @property
    def would_fail(self) -> bool:
        """A dry run's plan meets a refusal the real pass would fail at."""
        return self.plan is not None and self.plan.fails

    def to_json(self) -> dict[str, Any]:
        said: dict[str, Any] = {
            "component": self.name,
            "status": self.status.value,
            "head": self.head,
            "actions": [a.to_json() for a in self.actions],
            "messages": self.messages,
            "error_kind": self.error_kind,
            "pinned": self.pinned,
            "image": self.image,
            "proposal": self.proposal,
            "build": self.build,
            "notes": self.notes,
            "problems": self.problems,
            "pruned": self.pruned,
            "retry": self.retry,
            "failed_at": self.failed_at.kind.value if self.failed_at is not None else None,
        }
        if self.plan is not None:
            said["plan"] = self.plan.to_json()
        return said

    def note(self, *notes: str) -> None:
        """Add what a reviewer must not miss, each once however often a pass sees it."""
        self.notes += [note for note in dict.fromkeys(notes) if note not in self.notes]

    def seen(self, facts: Facts, failure: Failure | None) -> None:
        """Note what was observed; `failure` is the recorded failure that still holds."""
        self.head = facts.head
        self.pinned = facts.pinned_commit
        self.image = facts.image.ref if facts.image else None
        self.proposal = facts.proposal.branch if facts.proposal else None
        self.build = (
            failure.message
            if failure
            else facts.build.detail
            or ("built" if facts.build.state == "ready" else "image found" if facts.image else "")
        )
        if facts.pinned_problem:
            self.note(facts.pinned_problem)

    def fail(self, kind: str | None, message: str, retry_after: float | None = None) -> None:
        self.status = Status.FAILED
        self.error_kind = kind
        self.messages.append(message)
        self.retry_after = retry_after


@dataclass
class PassResult:
    components: list[ComponentResult]
    dry_run: bool
    requests: dict[str, int] = field(default_factory=dict)  # outside requests the pass made

    @property
    def failed(self) -> bool:
        """A component failed; in a dry run, or would fail (its plan meets a refusal)."""
        return any(c.status == Status.FAILED or (self.dry_run and c.would_fail) for c in self.components)

    @property
    def exit_code(self) -> int:
        """As `wheelpin reconcile --help` lists them (cli.RECONCILE_EXIT_CODES): when a
        component failed, 4 if every failure was an outside one (a registry, GitHub, the
        network, git: trying again later may be all it takes), else 1, before all else; 3
        when none failed but a branch a human wrote to was left alone (not wheelpin's
        failure, but the proposal is stuck until someone deletes the branch, and a script
        must be able to tell without parsing); else 0. A dry run exits as the real pass
        would (its plan meets a refusal: `ComponentResult.would_fail`, of the kind the plan
        foresees)."""
        failed = [c for c in self.components if c.status == Status.FAILED or (self.dry_run and c.would_fail)]
        if failed:
            return 4 if all(c.error_kind == "transient" for c in failed) else 1
        return 3 if self.left_alone else 0

    @property
    def left_alone(self) -> bool:
        """A component's branch was left alone (in a dry run: would be), as a human wrote to it."""
        return any(
            c.status == Status.LEFT_ALONE or any(isinstance(a, Report) and a.left_alone for a in c.actions)
            for c in self.components
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "failed": self.failed,
            "left_alone": self.left_alone,
            "requests": self.requests,
            "components": [c.to_json() for c in self.components],
        }

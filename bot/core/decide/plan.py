"""The planner (docs/design.md §2): the facts observed of one component → the whole plan.

Pure: no I/O, no clock (`now` is given). `bot/loop/observe.py` gathers the facts,
`plan` makes every decision (quiet period, failure backoff, refused writes, adoption,
a declined commit, a base that caught up, a branch a human wrote to) and returns every
action it can foresee, in order; `bot/loop/execute.py` runs them. The runner runs a plan
up to its first `Wait` or `Report`, then observes and plans again until nothing is left,
so a pass killed anywhere is finished by the next one, and a pass that finds the world
as it should be plans nothing and writes nothing. A dry run prints the plan.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, ClassVar

from .backoff import Failure, Refusal

# -- facts ----------------------------------------------------------------------------------


class BuildState(StrEnum):
    """Where the build of the head stands, as its builder tells it."""

    NONE = "none"  # none started (or the last one failed and was recorded)
    RUNNING = "running"
    SUCCEEDED = "succeeded"  # ended well; its wheels are still to be fetched
    FAILED = "failed"  # ended badly, not yet recorded as a failure
    READY = "ready"  # its wheels are in the build cache


@dataclass(frozen=True)
class BuildSeen:
    state: BuildState = BuildState.NONE
    detail: str = ""  # e.g. "build run https://… is in_progress"
    asynchronous: bool = False  # the build outlives the pass (GitHub Actions): waited for
    adopts: bool = False  # the build pushes the image itself: nothing to fetch or publish
    followed: bool = False  # a build of the head was started after any recorded failure
    where: str = ""  # where a build of its kind runs, as the plan says it ("on GitHub Actions")


@dataclass(frozen=True)
class ImageFound:
    tag: str
    digest: str
    ref: str  # as it will be pinned: repository:tag@digest
    verified: bool = True  # False: pushed by someone else, its wheels not yet verified
    adopted: bool = False  # pushed by someone else, its wheels verified by wheelpin: not wheelpin's build


@dataclass(frozen=True)
class ProposalSeen:
    branch: str
    head: str
    state: dict[str, Any] | None  # the marker of the bot's commit
    foreign: tuple[str, ...] = ()  # commits on the branch that the bot did not make
    open: bool = True  # a proposal is open on it (False: a declined pull request's kept branch)


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What `observe` found of one component, raw: no decision is made here."""

    component: str
    head: str | None  # the upstream commit to propose
    error: str | None = None  # observing failed (upstream unreachable, a tag holding other content, …)
    error_kind: str = "reported"  # what kind of failure `error` is (core/errors.kind_of): transient, config…
    pinned_problem: str | None = None  # why the pinned image could not be read, when it could not
    base: str = ""  # the base commit the proposal would start from
    base_files: str = ""  # a hash of the pin files at `base`
    pinned_commit: str | None = None  # what the base pins today (from the image's revision)
    base_has_head: bool = False  # the base pins `head`, a descendant of it, or a higher release
    base_pins_image: bool = False  # every pin already names the image found for `head`
    proposal: ProposalSeen | None = None
    skipped: bool = False  # a human closed this commit's proposal without merging it (branch kept or not)
    committed_at: float | None = None  # when `head` was committed, read when a quiet period is set
    quiet_minutes: int = 0
    image: ImageFound | None = None
    build: BuildSeen = BuildSeen()
    failure: Failure | None = None  # a recorded failure of `head`, whatever its age
    judged_under: str = ""  # a digest of what its wheels are judged under now: the config, the consuming image
    refusal: Refusal | None = None  # a recorded refusal of the very write a proposal would make


@dataclass(frozen=True)
class Asks:
    """What a human asked of this pass."""

    retry: bool = False  # `--retry-failed`, `/wheelpin recheck`: recorded failures and refusals are tried again
    rebase: bool = False  # `/wheelpin rebase`: the branch is rewritten from the base, whoever pushed to it


# -- actions ----------------------------------------------------------------------------------


class Kind(StrEnum):
    BUILD = "build"
    FETCH = "fetch"
    ADOPT = "adopt"
    PUBLISH = "publish"
    PROPOSE = "propose"
    CLOSE = "close"
    COMMENT = "comment"
    RECORD = "record"
    REPORT = "report"
    WAIT = "wait"


@dataclass(frozen=True)
class Step:
    """What every action carries. `kind` names its type in JSON and text."""

    kind: ClassVar[Kind]
    component: str
    commit: str | None

    @property
    def detail(self) -> str:
        return ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "component": self.component, "commit": self.commit, "detail": self.detail}

    def __str__(self) -> str:
        commit = f" {self.commit[:8]}" if self.commit else ""
        return f"{self.component}: {self.kind.value}{commit} {self.detail}".rstrip()


@dataclass(frozen=True)
class StartBuild(Step):
    kind = Kind.BUILD
    where: str = ""

    @property
    def detail(self) -> str:
        return self.where


@dataclass(frozen=True)
class FetchArtifacts(Step):
    kind = Kind.FETCH
    run: str = ""

    @property
    def detail(self) -> str:
        return self.run


@dataclass(frozen=True)
class AdoptImage(Step):
    """Verify the wheels of an image someone else pushed under the head's tag."""

    kind = Kind.ADOPT
    image: ImageFound | None = None

    @property
    def detail(self) -> str:
        return self.image.ref if self.image else "the image the build pushes"


@dataclass(frozen=True)
class PublishImage(Step):
    kind = Kind.PUBLISH


@dataclass(frozen=True)
class WriteProposal(Step):
    kind = Kind.PROPOSE
    verb: str = "open"  # "open" | "update"
    image: str | None = None  # None: the image published before it in the plan

    @property
    def detail(self) -> str:
        return f"{self.verb} {self.image}" if self.image else self.verb


@dataclass(frozen=True)
class ClosePR(Step):
    kind = Kind.CLOSE
    branch: str = ""
    expected: str = ""  # the branch's tip as observed: closed only if it is still there
    why: str = ""

    @property
    def detail(self) -> str:
        return f"{self.branch}: {self.why}"  # `close wheelpin/x: the base already pins c9a61e2a`


@dataclass(frozen=True)
class Comment(Step):
    """Say something on the proposal's pull request, once per key."""

    kind = Kind.COMMENT
    branch: str = ""
    key: str = ""
    text: str = ""

    @property
    def detail(self) -> str:
        return f"on {self.branch}"


@dataclass(frozen=True)
class RecordFailure(Step):
    """Note a failed build of the commit, so it backs off instead of running again."""

    kind = Kind.RECORD
    what: str = "build"  # "build" | "verify"
    message: str = ""

    @property
    def detail(self) -> str:
        return f"{self.what} failure"


@dataclass(frozen=True)
class Report(Step):
    """End this component's pass and say why: a failure, or a branch left alone."""

    kind = Kind.REPORT
    why: str = ""
    left_alone: bool = False
    error_kind: str = "reported"  # a failure observed: its kind (transient: an outside system failed)

    @property
    def detail(self) -> str:
        return self.why


@dataclass(frozen=True)
class Wait(Step):
    """End this component's pass for now: something outside must move first."""

    kind = Kind.WAIT
    why: str = ""
    until: float | None = None  # when known (a quiet period's end)

    @property
    def detail(self) -> str:
        return self.why

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "until": self.until}


Action = (
    StartBuild
    | FetchArtifacts
    | AdoptImage
    | PublishImage
    | WriteProposal
    | ClosePR
    | Comment
    | RecordFailure
    | Report
    | Wait
)


# -- decisions --------------------------------------------------------------------------------


def desired_state(facts: Facts) -> dict[str, Any]:
    """The marker a proposal of the facts' image carries: equal markers, nothing to write."""
    assert facts.image is not None and facts.head is not None
    return {
        "component": facts.component,
        "commit": facts.head,
        "tag": facts.image.tag,
        "digest": facts.image.digest,
        "base_files": facts.base_files,
    }


def write_key(facts: Facts, *, where: str) -> str:
    """What a proposal write is made of: the same key is the same write to the same branch
    tip on the same base, which GitHub refuses the same way."""
    proposal = facts.proposal
    made_of = {
        "where": where,
        "component": facts.judged_under,
        "want": desired_state(facts),
        "base": facts.base,
        "branch": proposal.head if proposal else None,
    }
    return hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()


def live_failure(facts: Facts, now: float, asks: Asks = Asks()) -> Failure | None:
    """The recorded failure of the head that still holds: under the same config and consuming image (a
    change is judged again), with no build followed since, within its backoff, and not
    asked to be retried."""
    failure = facts.failure
    if failure is None or asks.retry or facts.build.followed:
        return None
    if failure.judged_under and failure.judged_under != facts.judged_under:
        return None
    return failure if failure.retry_at > now else None


def _left_alone(facts: Facts, proposal: ProposalSeen) -> list[Action]:
    why = (
        f"{proposal.branch} carries commits the bot did not make "
        f"({', '.join(c[:8] for c in proposal.foreign)}); it is left alone"
    )
    text = (
        f"wheelpin leaves this branch alone: {why}. Delete the branch (or drop those commits) "
        "to let wheelpin propose again."
    )
    return [
        Comment(facts.component, facts.head, branch=proposal.branch, key=f"foreign-{proposal.head}", text=text),
        Report(facts.component, facts.head, why=why, left_alone=True),
    ]


def _build(facts: Facts, head: str, verb: str) -> list[Action]:
    """From no image: build (or follow the build), publish, propose."""
    name, build = facts.component, facts.build
    propose = WriteProposal(name, head, verb=verb)
    adopt = [AdoptImage(name, head), propose] if build.adopts else [propose]
    match build.state:
        case BuildState.READY:
            return [PublishImage(name, head), propose]
        case BuildState.RUNNING:
            return [
                Wait(name, head, why=build.detail),
                *(adopt if build.adopts else [FetchArtifacts(name, head), PublishImage(name, head), propose]),
            ]
        case BuildState.SUCCEEDED if build.adopts:
            return [
                Report(
                    name,
                    head,
                    why=f"{build.detail}, but no image of {head[:8]} is under its tag (the workflow was to push it)",
                )
            ]
        case BuildState.SUCCEEDED:
            return [FetchArtifacts(name, head, run=build.detail), PublishImage(name, head), propose]
        case BuildState.FAILED:
            return [RecordFailure(name, head, what="build", message=build.detail), Report(name, head, why=build.detail)]
        case BuildState.NONE if build.asynchronous:
            awaited = Wait(name, head, why=f"the build of {head[:8]} runs {build.where}".rstrip())
            rest = adopt if build.adopts else [FetchArtifacts(name, head), PublishImage(name, head), propose]
            return [StartBuild(name, head, where=build.where), awaited, *rest]
        case _:
            return [StartBuild(name, head, where=build.where), PublishImage(name, head), propose]


def plan(facts: Facts, now: float, asks: Asks = Asks()) -> list[Action]:
    name, head, proposal = facts.component, facts.head, facts.proposal
    if proposal is not None and asks.rebase:  # rewritten from the base, whoever pushed
        proposal = replace(proposal, state=None, foreign=())
    if facts.error:
        return [Report(name, head, why=facts.error, error_kind=facts.error_kind)]
    if proposal is not None and proposal.foreign:
        return _left_alone(facts, proposal)
    if head is None:
        return []
    if facts.base_has_head or facts.base_pins_image:
        if proposal is None:
            return []
        pinned = (facts.pinned_commit or head)[:8]
        return [
            ClosePR(name, head, branch=proposal.branch, expected=proposal.head, why=f"the base already pins {pinned}")
        ]
    if facts.skipped:
        return []  # that commit was declined (its branch may be kept); a newer one gets a new proposal
    if facts.quiet_minutes and facts.committed_at is not None:
        until = facts.committed_at + facts.quiet_minutes * 60
        if now < until:
            age = max(now - facts.committed_at, 0.0)
            return [
                Wait(
                    name,
                    head,
                    until=until,
                    why=f"in its quiet period ({int(age // 60)} of {facts.quiet_minutes} minutes)",
                )
            ]
    # a declined proposal's kept branch is written over, and a new pull request opened
    verb = "update" if proposal is not None and proposal.open else "open"
    image = facts.image
    if image is None:
        failure = live_failure(facts, now, asks)
        if failure is not None:
            return [Report(name, head, why=failure.message)]
        return _build(facts, head, verb)
    if not image.verified and (failure := live_failure(facts, now, asks)) is not None:
        return [Report(name, head, why=failure.message)]  # its image was refused: not fetched again
    adopt: list[Action] = [] if image.verified else [AdoptImage(name, head, image=image)]
    if proposal is not None and proposal.state == desired_state(facts):
        return adopt
    refusal = facts.refusal
    if refusal is not None and not asks.retry and refusal.retry_at > now:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(refusal.retry_at))
        return [
            Report(
                name,
                head,
                why=f"{refusal.message} (not tried again before {when}, unless the base or "
                "upstream moves, permissions are granted, or `/wheelpin recheck` asks)",
            )
        ]
    return [*adopt, WriteProposal(name, head, verb=verb, image=image.ref)]

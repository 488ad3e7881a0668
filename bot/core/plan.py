"""The planner (docs/design.md §2): what was observed of one component → the next actions.

Pure: no I/O. The executor runs the actions, observes again and plans again until
nothing is left to do, so a pass killed anywhere is finished by the next one, and a pass
that finds the world as it should be plans nothing and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ImageFound:
    tag: str
    digest: str
    ref: str  # as it will be pinned: repository:tag@digest


@dataclass(frozen=True)
class ProposalSeen:
    branch: str
    head: str
    state: dict[str, Any] | None  # the marker of the bot's commit
    foreign: tuple[str, ...] = ()  # commits on the branch that the bot did not make


@dataclass(frozen=True, kw_only=True)
class Observed:
    component: str
    head: str | None  # the upstream commit to propose
    error: str | None = None  # observing failed (upstream unreachable, …)
    waiting: str | None = None  # a reason not to act yet (quiet period)
    image: ImageFound | None = None
    built: bool = False  # verified-ready wheels for `head` in the build cache
    failure: str | None = None  # a build/verify failure of `head` still in its backoff
    pinned_commit: str | None = None  # what the base pins today (from the image's revision)
    base_has_head: bool = False  # the base pins `head`, or a newer commit
    base: str = ""  # the base commit the proposal would start from
    base_files: str = ""  # a hash of the pin files at `base`
    proposal: ProposalSeen | None = None
    skipped: bool = False  # a human closed this commit's proposal without merging it
    workflow: bool = False  # built by a GitHub Actions workflow rather than a local command
    run: str | None = None  # that build's run: None (none yet), "running", "success", "failure"
    run_detail: str = ""
    adopts: bool = False  # the workflow pushes the image itself: nothing to fetch or push


@dataclass(frozen=True)
class Action:
    kind: str
    component: str
    commit: str | None = None
    detail: str = ""
    then: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "component": self.component, "commit": self.commit,
                "detail": self.detail, "then": list(self.then)}

    def __str__(self) -> str:
        commit = f" {self.commit[:8]}" if self.commit else ""
        then = f" (then {', '.join(self.then)})" if self.then else ""
        return f"{self.component}: {self.kind}{commit} {self.detail}".rstrip() + then


BUILD, FETCH, PUBLISH, PROPOSE, CLOSE, REPORT, WAIT = (
    "build", "fetch", "publish", "propose", "close", "report", "wait")


def desired_state(observed: Observed) -> dict[str, Any]:
    assert observed.image is not None and observed.head is not None
    return {"component": observed.component, "commit": observed.head, "tag": observed.image.tag,
            "digest": observed.image.digest, "base_files": observed.base_files}


def plan(observed: Observed) -> list[Action]:
    name, head = observed.component, observed.head
    proposal = observed.proposal
    if observed.error:
        return [Action(REPORT, name, head, observed.error)]
    if proposal is not None and proposal.foreign:
        return [Action(REPORT, name, head,
                       f"{proposal.branch} carries commits the bot did not make "
                       f"({', '.join(c[:8] for c in proposal.foreign)}); it is left alone")]
    if head is None:
        return []
    if observed.base_has_head:
        if proposal is not None:
            return [Action(CLOSE, name, head, f"the base already pins {(observed.pinned_commit or head)[:8]}")]
        return []
    if observed.skipped and proposal is None:
        return []  # that commit was declined; a newer one gets a new proposal
    if observed.waiting:
        return [Action(WAIT, name, head, observed.waiting)]
    if observed.image is None:
        if observed.failure:
            return [Action(REPORT, name, head, observed.failure)]
        if observed.built:
            return [Action(PUBLISH, name, head, then=(PROPOSE,))]
        if observed.workflow and observed.run == "running":
            return [Action(WAIT, name, head, observed.run_detail)]
        if observed.workflow and observed.run == "success" and observed.adopts:
            return [Action(REPORT, name, head, f"{observed.run_detail}, but no image of {head[:8]} "
                           "is under its tag (the workflow was to push it)")]
        if observed.workflow and observed.run == "success":
            return [Action(FETCH, name, head, observed.run_detail, then=(PUBLISH, PROPOSE))]
        if observed.workflow and observed.run == "failure":
            return [Action(REPORT, name, head, observed.run_detail)]
        then = ((PROPOSE,) if observed.adopts else (FETCH, PUBLISH, PROPOSE)) if observed.workflow \
            else (PUBLISH, PROPOSE)
        return [Action(BUILD, name, head, "on GitHub Actions" if observed.workflow else "", then=then)]
    if proposal is not None and proposal.state == desired_state(observed):
        return []
    verb = "update" if proposal is not None else "open"
    return [Action(PROPOSE, name, head, f"{verb} {observed.image.ref}")]

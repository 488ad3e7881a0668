"""The plan a dry run shows (docs/dry-run.md): what a pass would do for one component,
said before anything is built or written, and agreeing with what the pass then does.

Made from what observe read and the planner decided (`core/decide/plan.py`), and from what the
real pass's actions would say of them before a build: the pinned image, the commits
between it and the head, the build its builder would start (`loop/builders/`
`preview`), the image reference it would publish to, the pin edits (`core/pins/bump.py`
`plan_bump`, the very function the proposal writes with), the proposal's title
(`core/proposal/text.py`), and each refusal the real pass would meet that can be known before
a build. What only a build can tell (the version, the digest, the wheels' checks) is
written as a `{placeholder}` and said once, never guessed. It reads and never writes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.config.templates import commit_values, render_known, sample_tag
from ..core.decide.plan import (
    Action,
    AdoptImage,
    Asks,
    ClosePR,
    Facts,
    FetchArtifacts,
    Kind,
    PublishImage,
    Report,
    StartBuild,
    Wait,
    WriteProposal,
    live_failure,
)
from ..core.errors import UsageError, VerificationError, WheelpinError, kind_of
from ..core.pins.bump import Edit, Sha256s, plan_bump
from ..core.pins.sha256 import held_sha256s, wheel_sha256s
from ..core.proposal.upstreamcommit import Commit, History
from ..core.redact import public_url
from .builders.base import BuildPreview
from .context import Context, Reads, Stores
from .observation import Observation, pin_repository

# What only the build or the publishing says, as the plan writes it (docs/dry-run.md).
DIGEST = "{digest}"  # the image's digest, known once it is published
SHA256 = "{sha256}"  # a wheel's sha256, known once it is built
_STAND_IN_DIGEST = "sha256:" + "d" * 64  # stand-ins plan_bump checks and writes, then said as the above
_STAND_IN_SHA256 = "e" * 64


@dataclass(frozen=True)
class PinnedPlan:
    """The image the base pins, as the pass reads it: found, or why not."""

    reference: str | None = None
    version: str | None = None  # its wheel's
    commit: str | None = None  # the upstream commit it was built from, when it says
    why: str | None = None  # why it was not found or read

    def to_json(self) -> dict[str, Any]:
        return {"reference": self.reference, "version": self.version, "commit": self.commit, "why": self.why}


@dataclass
class ComponentPlan:
    """One component's plan. `{placeholders}` in `image`, `edits` and `title` stand for what
    only the build tells (the version, the digest, a wheel's sha256)."""

    branch: str
    pinned: PinnedPlan = PinnedPlan()
    upstream: str = ""  # the upstream repository and what it follows, as the user can read it
    head: str | None = None
    commits: tuple[Commit, ...] = ()  # after the pinned commit up to the head, newest first
    history: History | None = None  # the same, with what they start after and how it relates to the head
    build: BuildPreview | None = None  # the build it would start
    build_said: str = ""  # when it starts none: what stands instead (a build under way, an image found)
    image: str | None = None  # the reference the proposal would pin
    edits: tuple[Edit, ...] = ()
    left_behind: tuple[str, ...] = ()  # the component's image named where no pin moves it (core/pins/behind.py)
    tags_moved: tuple[str, ...] = ()  # a sha256 ARG of the only wheel moved to another python tag's (pins/sha256.py)
    title: str | None = None
    proposal: str = ""  # "create" | "update" | "keep" | "close" | "leave alone" | "": what it does with the proposal
    waits: str | None = None  # why, and until when, it would wait
    refusals: list[str] = field(default_factory=list)
    after_build: str | None = None  # what is checked only after the build
    consumer_platform: str | None = None  # the consuming image's platform, when the build decides it
    fails_at: Kind | None = None  # the action the real pass would fail at
    error_kind: str | None = None  # its error kind, as the real pass's --json says it

    @property
    def fails(self) -> bool:
        return self.fails_at is not None

    def refuse(self, at: Kind, kind: str, why: str) -> None:
        """The real pass would stop here; the first refusal is the one it meets."""
        self.refusals.append(why)
        if self.fails_at is None:
            self.fails_at, self.error_kind = at, kind

    def to_json(self) -> dict[str, Any]:
        return {
            "pinned": self.pinned.to_json(),
            "upstream": self.upstream,
            "head": self.head,
            "commits": [{"sha": c.sha, "subject": c.subject} for c in self.commits],
            "commits_said": self.history.said() if self.history else None,
            "history_warning": self.history.warning(self.head) if self.history and self.head else None,
            "build": None
            if self.build is None
            else {"runs": self.build.runs, "where": self.build.where, "inputs": self.build.inputs},
            "build_said": self.build_said,
            "image": self.image,
            "edits": [{"file": e.file, "line": e.line, "old": e.old, "new": e.new, "what": e.what} for e in self.edits],
            "left_behind": list(self.left_behind),
            "tags_moved": list(self.tags_moved),
            "title": self.title,
            "proposal": self.proposal,
            "branch": self.branch,
            "waits": self.waits,
            "refusals": self.refusals,
            "after_build": self.after_build,
            "consumer_platform": self.consumer_platform,
            "fails": self.fails,
            "fails_at": self.fails_at.value if self.fails_at else None,
            "error_kind": self.error_kind,
        }


def preview(
    context: Context,
    seen: Observation,
    actions: list[Action],
    *,
    now: float,
    asks: Asks,
    reads: Reads,
    stores: Stores,
) -> ComponentPlan:
    """The plan of `actions`, planned from `seen`; `reads` reads a file of the base or an
    image as the pass does, once; `stores` opens the registry of the consuming image."""
    component, facts = context.component, seen.facts
    head = facts.head
    upstream = component.upstream
    follows = f"tags {upstream.tags}" if upstream.tags else f"branch {upstream.branch}"
    plan = ComponentPlan(
        context.branch, pinned=_pinned(seen), upstream=f"{public_url(upstream.repo)} ({follows})", head=head
    )
    for action in actions:
        match action:
            case Report(left_alone=True):
                plan.proposal = "leave alone"
            case Report():
                plan.refuse(Kind.REPORT, action.error_kind, _with_retry(action.why, facts, now, asks))
            case ClosePR():
                plan.proposal = "close"
            case Wait() if plan.waits is None:
                until = f", until {_when(action.until)}" if action.until is not None else ""
                plan.waits = f"{action.why}{until}"
            case _:
                pass
    if head is None or facts.error:
        return plan
    write = next((a for a in actions if isinstance(a, WriteProposal)), None)
    builds = any(isinstance(a, (StartBuild, FetchArtifacts, PublishImage)) for a in actions)
    adopts = any(isinstance(a, AdoptImage) for a in actions)
    if any(isinstance(a, StartBuild) for a in actions):
        plan.build = context.builder.preview(head)
        if plan.build.refusal is not None:
            plan.refuse(Kind.BUILD, kind_of(WheelpinError(plan.build.refusal)), plan.build.refusal)
    elif facts.image is not None:
        plan.build_said = "image found, adopted (its wheels verified first)" if adopts else "image found, reused"
    elif builds or adopts:
        plan.build_said = facts.build.detail or (
            "built: its wheels are in the build cache" if facts.build.state == "ready" else ""
        )
    if builds or adopts:
        plan.after_build = _after_build(context, adopted=facts.image is not None)
    reading = _consumer_read_at(context, actions)
    if not isinstance(reading, WriteProposal):  # read at the publish or the adoption, before any proposal
        _consumer(context, seen, reading, plan, reads, stores)
    if write is None:
        if facts.proposal is not None and not actions:
            plan.proposal = "keep"  # it already says what it should
        return plan
    plan.proposal = "create" if write.verb == "open" else "update"
    since, from_tag = seen.since
    plan.history = context.upstream.history(since, head, from_tag=from_tag)
    plan.commits = plan.history.commits
    _bump(context, seen, plan, reads)
    if component.constraints_file:  # the proposal reads it from the base next: missing, the pass fails there
        try:
            reads.file(facts.base, component.constraints_file)
        except WheelpinError as exc:
            plan.refuse(Kind.PROPOSE, kind_of(exc), exc.message)
    if isinstance(reading, WriteProposal):  # the proposal reads it after its pin edits and constraints
        _consumer(context, seen, reading, plan, reads, stores)
    return plan


def _consumer_read_at(context: Context, actions: list[Action]) -> Action | None:
    """The first action of this pass that reads the consuming image (loop/execute.py): the
    adoption or the publish checks the wheels against it, else the proposal says what the
    image has installed, once its pin edits are planned and its constraints read; None
    when no action reads it, or the component names none."""
    if context.component.consumer is None:
        return None
    return next(
        (a for a in _this_pass(actions) if isinstance(a, (AdoptImage, PublishImage, WriteProposal))),
        None,
    )


def _consumer(
    context: Context, seen: Observation, reading: Action | None, plan: ComponentPlan, reads: Reads, stores: Stores
) -> None:
    """At `reading`, where this pass would read the consuming image (`consumer`: to check
    wheels it built, fetched or adopts, or for the proposal of an image found, called in the
    pass's order so its first refusal is the pass's), whether its registry resolves it: its
    manifest and config, as the pass's read of it starts (loop/consumers.py
    `resolve`), so a registry that cannot be reached or does not hold it is refused here in
    the pass's own sentence, at the action the pass would stop at. Its layers are left to
    the pass. The architectures are those of the wheels of the image found, or else, before
    a build, those the image pinned today's wheels name (as `config validate --online`
    resolves it); when they name none, the build decides, and the plan says which platform
    of the consuming image's index that leaves the pass (`consumer_platform`).

    An image found is adopted only once its wheels pass the consumer checks: one whose
    wheels are of another platform than the consuming image's config says is refused
    here by the pass's own rule (core/image/consumer.wrong_platform). Before a build it is
    a forecast from the pinned wheels, said in `consumer_platform`: the build decides."""
    if reading is None:
        return
    from .consumers import platform_said, resolve  # the consumer's reading: only for a component that names one

    found = seen.facts.image
    info = reads.image(context.store, found.digest) if found is not None else seen.pinned
    files = [wheel.file for wheel in info.wheels] if info is not None else []
    try:
        resolved = resolve(stores, seen, files, built=found is not None)
    except WheelpinError as exc:
        plan.refuse(reading.kind, kind_of(exc), exc.message)
        return
    if isinstance(reading, AdoptImage):  # the pass checks the wheels it adopts (loop/execute.py)
        for wrong in filter(None, (one.refusal() for one in resolved)):
            plan.refuse(reading.kind, "verification", wrong)
    plan.consumer_platform = platform_said(resolved, built=found is not None)


def _this_pass(actions: list[Action]) -> Iterator[Action]:
    """The actions this pass carries out before a wait, which ends it (loop/runner.py)."""
    for action in actions:
        if isinstance(action, Wait):
            return
        yield action


def _pinned(seen: Observation) -> PinnedPlan:
    facts = seen.facts
    stopped = "not read (the pass stops before: see below)"
    if not seen.pins:
        return PinnedPlan(why=stopped if facts.error else "no pin")
    pin = seen.pins[0]
    ref = pin.ref
    where = f"{pin.file}:{pin.line}"
    if ref is None:
        return PinnedPlan(reference=pin.image, why=f"{where}: {pin.image!r} is not an image reference")
    if ref.digest is None:
        return PinnedPlan(reference=pin.image, why=f"{where} pins no digest, so no image is read")
    info = seen.pinned
    if info is None:
        named = f"; its tag names {seen.tag_commit[:8]}" if seen.tag_commit else ""
        return PinnedPlan(
            reference=pin.image,
            why=f"not read: {seen.pinned_unread}{named}"
            if seen.pinned_unread
            else stopped
            if facts.error
            else "not read",
        )
    if facts.pinned_commit:
        why = None
    elif seen.commit_sought == "unfetched":
        why = "its upstream commit is not known: the upstream could not be fetched (the pass stops there: see below)"
    elif seen.commit_sought == "yes":
        why = (
            "its upstream commit is not known: neither its revision, its tag nor its wheel's version"
            " names a commit the upstream has"
        )
    else:
        why = "its upstream commit was not looked for (the pass stops before: see below)"
    return PinnedPlan(
        reference=pin.image,
        version=info.wheels[0].version if info.wheels else None,
        commit=facts.pinned_commit,
        why=why,
    )


def _bump(context: Context, seen: Observation, plan: ComponentPlan, reads: Reads) -> None:
    """The image it would pin, the pin edits and the title: exact when the image is found,
    else with the version, digest and sha256s a build tells written as placeholders. The
    edits come from `plan_bump`, whose refusals (a pin in another repository, a sha256 ARG
    the image holds several wheels for) the real pass meets only at the proposal, after
    building and publishing."""
    from ..core.proposal.text import ProposalFacts, title  # a proposal's wording: only where one is planned

    component, facts = context.component, seen.facts
    head = facts.head
    assert head is not None
    version: str | None
    sha256: Sha256s
    if facts.image is not None:
        info = reads.image(context.store, facts.image.digest)
        version = info.wheels[0].version if info.wheels else None
        reference, plan.image, sha256 = facts.image.ref, facts.image.ref, wheel_sha256s(info.wheels)
        said: dict[str, str] = {}
    else:
        template, repository = component.image.tag, pin_repository(component, seen.pins)
        known_tag = render_known(template, commit_values(head, component.name))
        stand_in = sample_tag(template, component=component.name, sha=head)  # the config's check: a valid tag
        version, sha256 = None, _AnyPythonTag(_STAND_IN_SHA256)
        plan.image = f"{repository}:{known_tag}@{DIGEST}"
        reference = f"{repository}:{stand_in}@{_STAND_IN_DIGEST}"
        said = {stand_in: known_tag, _STAND_IN_DIGEST: DIGEST, _STAND_IN_SHA256: SHA256}
    try:
        pinned = held_sha256s(seen.pinned.wheels) if seen.pinned is not None else None
        bump = plan_bump(component, seen.texts, reference, sha256, context.components, pinned)
    except (UsageError, VerificationError) as exc:
        plan.refuse(Kind.PROPOSE, kind_of(exc), exc.message)
    else:
        plan.edits = tuple(Edit(e.file, e.line, e.old, _said(e.new, said), e.what, e.python_tag) for e in bump.edits)
        plan.left_behind = bump.left_behind_said
        plan.tags_moved = bump.tags_moved
    plan.title = title(
        ProposalFacts(
            component=component.name,
            upstream="",
            old_commit=facts.pinned_commit,
            new_commit=head,
            version=version or "{version}",
            image=plan.image or "",
            wheels=(),
        )
    )


def _said(text: str, said: dict[str, str]) -> str:
    for stand_in, placeholder in said.items():
        text = text.replace(stand_in, placeholder)
    return text


class _AnyPythonTag(Mapping[str | None, str]):
    """A wheel sha256 for any python tag a pin names: the stand-in `plan_bump` writes
    before the wheels exist."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __getitem__(self, key: str | None) -> str:
        return self.value

    def __iter__(self) -> Iterator[str | None]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _after_build(context: Context, *, adopted: bool) -> str:
    """What the real pass checks only once it has the wheels, said once."""
    from ..core.trust.decide import checked_after_build  # only where a build or an adoption is planned

    component = context.component
    checks = [
        f"each wheel against the component's rules (distribution {component.wheel.distribution}, "
        "its version and commit, python tags, GPU archs, ROCm and CUDA libraries)"
    ]
    if component.consumer is not None:
        checks.append("against the consuming image")
    if component.wheel.smoke:
        checks.append(f"the smoke test `{component.wheel.smoke}`")
    attested = checked_after_build(component.trust)
    if attested is not None:
        checks.append(attested)
    when = "when its wheels are fetched" if adopted else "after the build"
    said = f"checked {when}: " + ", ".join(checks) + "; a wheel refused there is not published, and nothing is proposed"
    sha256_args = sorted({pin.sha256_arg for pin in component.pins if pin.sha256_arg})
    if sha256_args:  # the proposal's, once the image is there: several wheels for one sha256 ARG leave it unwritten
        said += (
            f"; checked before the proposal, the image published: one wheel in it for each sha256 ARG "
            f"({', '.join(sha256_args)}), else nothing is proposed"
        )
    return said


def _with_retry(why: str, facts: Facts, now: float, asks: Asks) -> str:
    """A recorded failure's message, with when the pass tries it again."""
    failure = live_failure(facts, now, asks)
    if failure is None or failure.message != why:
        return why
    if failure.refused:
        return (
            f"{why} (recorded: not built again, as the same commit gives the same wheel; a new upstream "
            "commit or a changed config is judged anew, `--retry-failed` tries now)"
        )
    return f"{why} (recorded: tried again after {_when(failure.retry_at)}, or now with `--retry-failed`)"


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))

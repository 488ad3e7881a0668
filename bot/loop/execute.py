"""Execute (docs/design.md §2): one small function per action of `core.decide.plan`, chosen by
`match` on its type. Each works from the component's observation and the outcome of the
actions before it in the plan, and returns its own `Outcome` (loop/results.py: the facts
as they stand after it, and what it learned that a later action says), or None when the
component's pass ends with it (a `Report`, a `Wait`). Every write the loop makes is made
here: builds, images, branches, pull requests, comments, and the state file.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, assert_never

from ..adapters import logs
from ..adapters.imageread import ImageInfo, extract_wheels
from ..adapters.imagestore import LayoutStore, RegistryRepository
from ..adapters.inspectpool import inspect_wheel
from ..adapters.platform import Platform
from ..adapters.provenance import (
    Attached,
    attach_provenance,
    attached_to,
    carries_provenance,
    proposal_link,
    signed_by,
    verification_of,
)
from ..adapters.publisher import SETTLE_SECONDS, publish
from ..adapters.smoke import SmokeResult, smoke_said, smoke_wheels
from ..adapters.statefile import StateFile
from ..core.checks.component import check_wheels, component_rules, summary
from ..core.checks.digest import rules_digest
from ..core.config.model import Config
from ..core.config.templates import TagValues, render_tag
from ..core.decide.backoff import config_digest
from ..core.decide.plan import (
    Action,
    AdoptImage,
    BuildSeen,
    BuildState,
    ClosePR,
    Comment,
    Facts,
    FetchArtifacts,
    ImageFound,
    PublishImage,
    RecordFailure,
    Report,
    StartBuild,
    Wait,
    WriteProposal,
    desired_state,
    write_key,
)
from ..core.decide.revision import names_commit
from ..core.errors import (
    BuildFailed,
    ConfigError,
    InputError,
    PermissionRefused,
    RefusedError,
    RuleRefused,
    VerificationError,
    WheelpinError,
    doing,
)
from ..core.image.oci import ANNOTATION_COMPONENT, ANNOTATION_RULES, REVISION, WheelEntry
from ..core.image.reach import Reach
from ..core.pins.bump import plan_bump
from ..core.pins.sha256 import wheel_sha256s
from ..core.proposal.assemble import assemble
from ..core.proposal.text import body, title
from ..core.proposal.upstreamcommit import Commit
from ..core.provenance.statement import BuildFacts
from ..core.redact import public_url
from ..core.trust.decide import Judgement, statement_downgrade
from .consumers import Consumers, libraries_found, new_to_image
from .context import Context, Memory, Reads
from .observation import Observation, pin_repository
from .results import ComponentResult, Outcome, Status
from .trustcheck import TrustCheck, Wheel

if TYPE_CHECKING:  # cryptography loads where a key is given
    from ..core.provenance.dsse import SigningKey

log = logs.get_logger("wheelpin.execute")


@dataclass
class Executor:
    config: Config
    where: str  # the repository's root or name: part of what a write is made of
    platform: Platform
    state: StateFile
    memory: Memory
    reads: Reads  # files of the base and images by digest, read once a pass with observe
    consumers: Consumers  # the consuming image of a component that names one
    settle: float = SETTLE_SECONDS  # seconds before a pushed tag is read back (another writer may race)
    local_commands: bool = True  # the config's commands (a smoke test) run here; never for a repository on GitHub
    trust: TrustCheck | None = None  # the wheels' attestations, for a component whose `trust` asks
    signing_key: SigningKey | None = None  # signs the provenance attached to each image published

    def execute(
        self, context: Context, seen: Observation, done: Outcome, action: Action, result: ComponentResult
    ) -> Outcome | None:
        """Run `action` of the plan made from `seen`, after the actions that left `done`."""
        match action:
            case Report():
                self.report(action, result)
                return None
            case Wait():
                self.wait(action, result)
                return None
            case Comment():
                return self.comment(done, action)
            case RecordFailure():
                return self.record_failure(context, done, action)
            case ClosePR():
                return self.close(done, action, result)
            case StartBuild():
                return self.build(context, done, result)
            case FetchArtifacts():
                return self.fetch(context, done, result)
            case AdoptImage():
                return self.adopt(context, seen, done, action)
            case PublishImage():
                return self.publish(context, seen, done, result)
            case WriteProposal():
                return self.propose(context, seen, done, result)
            case _:
                assert_never(action)

    # -- ending a pass --------------------------------------------------------------------

    def report(self, action: Report, result: ComponentResult) -> None:
        result.messages.append(action.why)
        result.status = Status.LEFT_ALONE if action.left_alone else Status.FAILED
        result.error_kind = None if action.left_alone else action.error_kind

    def wait(self, action: Wait, result: ComponentResult) -> None:
        result.messages.append(action.why)
        result.status = Status.WAITING

    # -- the state file and the pull request ------------------------------------------------

    def comment(self, done: Outcome, action: Comment) -> Outcome:
        self.platform.say_once(action.branch, key=action.key, text=action.text)
        return done

    def record_failure(self, context: Context, done: Outcome, action: RecordFailure) -> Outcome:
        assert action.commit is not None
        self._failed(context, done.facts, action.commit, action.what, action.message)
        return replace(done, facts=replace(done.facts, build=BuildSeen(asynchronous=context.builder.asynchronous)))

    def _failed(
        self, context: Context, facts: Facts, commit: str, what: str, message: str, *, reason: str = ""
    ) -> None:
        """Record a failed build or verification of `commit` under what it is judged under
        (its config, its consuming image), with `reason` (a refused wheel's problems, as the
        commit list says them); its builder forgets it, so the next try starts a new build."""
        judged_under = facts.judged_under or config_digest(context.component)
        self.state.record(context.name, commit, what, message, judged_under=judged_under, reason=reason)
        context.builder.forget(commit)

    def _built(self, context: Context, commit: str) -> None:
        """`commit`'s wheels are in hand (fetched from a build, or published): a failure
        recorded of an earlier build of it (a run lost, then `/wheelpin recheck` or the
        backoff's end built it again) is no longer true, so the commit list, the dashboard
        and the backoff forget it."""
        self.state.forget(context.name, commit)

    def _refused(self, context: Context, facts: Facts, head: str, why: str, problems: tuple[str, ...]) -> NoReturn:
        """The wheels of `head`'s build failed the checks: nothing is published. A build
        wheelpin made (or dispatched) is recorded as refused, so that commit is not built
        again. Wheels a maintainer gave instead (`--use-artifacts`, `/wheelpin build
        --from-run`) are no build of the commit's own: they are forgotten, nothing is
        recorded, and the commit is built as usual by the next pass."""
        given = context.builder.reused(head)
        if given is not None:
            context.builder.discard(head)
            raise VerificationError(
                f"the wheels taken as the build of {head[:8]} ({given}) were refused and "
                f"forgotten; {head[:8]} is built as usual at the next pass: {why}",
                problems=problems,
            )
        message = f"verification of {head[:8]} failed, nothing published: {why}"
        self._failed(context, facts, head, "verify", message, reason=why)
        raise VerificationError(message, problems=problems)

    def close(self, done: Outcome, action: ClosePR, result: ComponentResult) -> Outcome:
        self.platform.close(action.branch, expected=action.expected, reason=action.why)
        result.messages.append(f"closed {action.branch}: {action.why}")
        return replace(done, facts=replace(done.facts, proposal=None))

    # -- wheels and images ----------------------------------------------------------------

    def build(self, context: Context, done: Outcome, result: ComponentResult) -> Outcome:
        facts = done.facts
        head = _head(facts)
        try:
            result.messages.append(context.builder.start(head))
        except BuildFailed as exc:
            self._failed(context, facts, head, "build", exc.recorded)
            raise
        if context.builder.asynchronous:
            return done
        return replace(done, facts=replace(facts, build=context.builder.status(head)))

    def fetch(self, context: Context, done: Outcome, result: ComponentResult) -> Outcome:
        facts = done.facts
        head = _head(facts)
        try:
            wheels = context.builder.collect(head)
        except BuildFailed as exc:
            given = context.builder.reused(head)
            if given is not None:  # a run a maintainer named: forgotten, not recorded against the commit
                context.builder.discard(head)
                raise BuildFailed(
                    f"{given}: {exc.message}; it is forgotten, and {head[:8]} is built as usual at the next pass",
                    recorded=exc.recorded,
                ) from None
            self._failed(context, facts, head, "build", exc.recorded)
            raise
        self._built(context, head)
        result.messages.append(f"fetched {len(wheels)} wheel(s) of the build of {head[:8]}")
        return replace(
            done, facts=replace(facts, build=replace(facts.build, state=BuildState.READY)), wheels=tuple(wheels)
        )

    def adopt(self, context: Context, seen: Observation, done: Outcome, action: AdoptImage) -> Outcome:
        facts = done.facts
        image, head = action.image or facts.image, _head(facts)
        if image is None:
            raise WheelpinError(f"no image of {head[:8]} is under its tag to adopt")
        info, smoke = self._verify_adopted(context, seen, facts, image)
        self.memory.verified.add((context.name, image.digest))
        self.memory.adopted.add((context.name, image.digest))
        return replace(
            done,
            facts=replace(facts, image=replace(image, verified=True, adopted=True)),
            made_by=context.builder.describe(head),
            smoke=smoke,
            image_wheels=info.wheels,
            image_size=info.size,
        )

    def _verify_adopted(
        self, context: Context, seen: Observation, facts: Facts, image: ImageFound
    ) -> tuple[ImageInfo, SmokeResult | None]:
        """The wheels of an image someone else pushed, fetched and verified like a build
        (against the consuming image too) and smoke-tested, before they are deleted; refused
        like a build of its own (recorded: not fetched again each pass)."""
        head, component = _head(facts), context.component
        info = self.reads.image(context.store, image.digest)
        with tempfile.TemporaryDirectory(prefix="wheelpin-adopt-") as folder:
            wheels = extract_wheels(context.store, info, Path(folder))
            reports = [inspect_wheel(wheel) for wheel in wheels]
            problems = check_wheels(component, reports, component_rules(component, commit=head))
            problems = problems or self.consumers.problems(seen, reports)
            if problems:
                why = summary(problems, wheels=len(reports))
                message = f"{context.store.name}:{image.tag} is not a verified build of {head[:8]}: {why}"
                self._failed(context, facts, head, "verify", message, reason=why)
                raise VerificationError(message, problems=tuple(map(str, problems)))
            return info, self._smoke(context, facts, head, wheels)

    def publish(self, context: Context, seen: Observation, done: Outcome, result: ComponentResult) -> Outcome:
        component, facts = context.component, done.facts
        head = _head(facts)
        wheels = list(done.wheels) if done.wheels is not None else context.builder.collect(head)
        try:
            reports = [inspect_wheel(wheel) for wheel in wheels]
        except InputError as exc:  # a wheel that cannot be read is refused like one that fails a check
            self._refused(context, facts, head, exc.message, (exc.message,))
        problems = check_wheels(component, reports, component_rules(component, commit=head))
        problems = problems or self.consumers.problems(seen, reports)
        if problems:
            self._refused(context, facts, head, summary(problems, wheels=len(reports)), tuple(map(str, problems)))
        smoke = self._smoke(context, facts, head, wheels)
        judgement = self._judged(context, seen, [Wheel(report.filename, report.sha256) for report in reports])
        if judgement.refused:
            self._refused(context, facts, head, judgement.refused, (judgement.refused,))
        tag = render_tag(component.image.tag, TagValues(sha=head, component=component.name, version=reports[0].version))
        try:
            with doing(f"publishing {tag} to {context.store.name}"):
                published = publish(
                    context.store,
                    tag,
                    wheels,
                    reports,
                    source=public_url(context.upstream.upstream.repo),
                    revision=head,
                    component=component.name,
                    rules=rules_digest(component),
                    settle=self.settle,
                )
        except RefusedError as exc:
            self._failed(context, facts, head, "verify", exc.message)
            raise
        self._built(context, head)
        result.messages.append(f"{published.status} {published.ref}")
        self.memory.published[(component.name, head)] = (tag, published.digest)
        self.memory.verified.add((component.name, published.digest))
        made_by = context.builder.describe(head)  # before the build goes
        invocation = context.builder.invocation(head)
        context.builder.release(head)
        attached = self._attach(
            context,
            head,
            published.digest,
            tag,
            published.wheels,
            made_by=made_by,
            invocation=invocation,
            smoke=smoke,
            manifest_size=published.manifest_size,
        )
        image = ImageFound(tag, published.digest, f"{pin_repository(component, seen.pins)}:{tag}@{published.digest}")
        return Outcome(
            replace(facts, image=image),
            made_by=made_by,
            smoke=smoke,
            image_wheels=published.wheels,
            image_size=published.size,
            attached=attached,
        )

    def _smoke(self, context: Context, facts: Facts, head: str, wheels: list[Path]) -> SmokeResult | None:
        """`wheel.smoke` on the exact wheels, one fresh venv per python tag; a failure
        publishes nothing. On GitHub the build workflow runs it (a repository's command is
        never run on the bot's host)."""
        command = context.component.wheel.smoke
        if command is None:
            return None
        smoked = context.builder.smoke_seen(head)
        if smoked is None and not self.local_commands:
            smoked = SmokeResult(
                by_workflow=True,
                not_run=[
                    "smoke test: not run (wheelpin runs no repository command on its host; the build workflow should)"
                ],
            )
        if smoked is None:
            smoked = smoke_wheels(command, wheels)
        if smoked.failed:
            why = "; ".join(smoked.failed)
            message = f"smoke test of {head[:8]} failed, nothing published: " + why
            self._failed(context, facts, head, "verify", message, reason=why)
            raise VerificationError(message, problems=tuple(smoked.failed))
        return smoked

    # -- the proposal -----------------------------------------------------------------------

    def propose(self, context: Context, seen: Observation, done: Outcome, result: ComponentResult) -> Outcome:
        facts = done.facts
        try:
            self._write_proposal(context, seen, done, result)
        except (PermissionRefused, RuleRefused) as exc:
            self.state.record_refusal(write_key(facts, where=self.where), exc.message)
            if facts.proposal is not None:
                self._tell(facts.proposal.branch, exc)
            raise
        return done

    def _write_proposal(self, context: Context, seen: Observation, done: Outcome, result: ComponentResult) -> None:
        facts = done.facts
        component, head, image = context.component, _head(facts), facts.image
        assert image is not None
        info: ImageInfo | None = None
        if done.image_wheels is not None:
            wheels, image_size = done.image_wheels, done.image_size
        else:
            with doing(f"reading {image.ref} (to write its proposal)"):
                info = self.reads.image(context.store, image.digest)
            wheels, image_size = info.wheels, info.size
        bump = plan_bump(component, seen.texts, image.ref, wheel_sha256s(wheels), context.components)
        constraints = self.reads.file(facts.base, component.constraints_file) if component.constraints_file else None
        against: tuple[str, ...] = ()
        broken: tuple[str, ...] = ()  # what the wheel would break in the consuming image
        absent: tuple[str, ...] = ()  # what it would bring into it
        said = self._smoke_said(context, done.smoke)
        judgement = self._judged(context, seen, [Wheel(entry.file, entry.sha256) for entry in wheels], image.digest)
        if judgement.refused:  # an image published or adopted before: proposed only once trusted
            message = f"{image.ref} is not proposed: {judgement.refused}"
            self._failed(context, facts, head, "verify", message, reason=judgement.refused)
            raise VerificationError(message, problems=(judgement.refused,))
        attached = self._attached(context, done, head, image, info)
        kept = self._statement_kept(context, seen, image, attached)
        if kept.refused:
            message = f"{image.ref} is not proposed: {kept.refused}"
            self._failed(context, facts, head, "verify", message, reason=kept.refused)
            raise VerificationError(message, problems=(kept.refused,))
        said["more_verification"] = (*said.get("more_verification", ()), *judgement.verification)
        said["more_notes"] = (*said.get("more_notes", ()), *judgement.notes, *kept.notes)
        found_in_image = self.consumers.seen(seen, wheels)
        if found_in_image:  # what the image has installed is a constraint, as if typed by hand
            # pure-Python wheels are read against each platform of the image: true of each
            reports = [found for found, _ in found_in_image]
            constraints = "\n".join([constraints or "", *dict.fromkeys(c for f in reports for c in f.constraints)])
            dependents = dict.fromkeys(d for f in reports for d in f.dependents)
            broken = tuple(f"`{d.dependent}` needs `{d.requirement}`: {d.why}" for d in dependents)
            absent = new_to_image(list(dict.fromkeys(a for f in reports for a in f.absent)))
            against = ("\n\n".join(header for _, header in found_in_image), *broken, *absent)  # one paragraph each
            said["more_verification"] = (*said.get("more_verification", ()), libraries_found(wheels))
        since, from_tag = seen.since
        history = context.upstream.history(since, head, from_tag=from_tag)
        proposal = assemble(
            component,
            upstream=public_url(context.upstream.upstream.repo),
            old_commit=facts.pinned_commit,
            new_commit=head,
            image=image.ref,
            wheels=wheels,
            pinned=seen.pinned.wheels if seen.pinned else (),
            constraints_text=constraints,
            commits=self._with_refusals(context, facts, history.commits),
            history=history,
            bump=bump,
            state=desired_state(facts),
            check_refs=_check_refs(context, image),
            reach=_reach(context),
            provenance=self._provenance(context, done, head, image, len(wheels))
            + proposal_link(context.store.name, image.ref, attached, reach=_reach(context)),
            consumer=against,
            tags=(context.upstream.tag_of(facts.pinned_commit), context.upstream.tag_of(head)),
            pinned_image=str(seen.pins[0].ref) if seen.pins and seen.pins[0].ref else None,
            pinned_problem=seen.pin_problem,
            image_sizes=(image_size, seen.pinned.size if seen.pinned else None),
            **said,
        )
        expected = facts.proposal.head if facts.proposal else None
        self.platform.write_branch(
            context.branch,
            base=facts.base,
            files=bump.new_texts or {},
            message=title(proposal) + "\n\n" + body(proposal),
            expected=expected,
        )
        labels = component.labels if component.labels is not None else self.config.defaults.labels
        opened = self.platform.publish_proposal(
            context.branch,
            base=self.config.defaults.base_branch,
            title=title(proposal),
            body=body(proposal),
            labels=labels,
        )
        # a declined proposal's kept branch is written over, and a new pull request opened
        result.messages.append(
            f"{'opened' if opened or not expected else 'updated'} {context.branch}: {title(proposal)}"
        )
        # what the proposal's body is loud about, said by the pass too (the terminal, the dashboard)
        result.note(*proposal.notes)
        result.note(
            *(
                f"constraint conflict: `{c.requirement}` (the new wheel) vs `{c.constraint}` (the image)"
                + (
                    ""
                    if proposal.pinned_problem
                    else " — the pinned wheel had it too"
                    if c in proposal.known_conflicts
                    else " — new"
                )
                for c in proposal.diff.conflicts
            )
        )
        result.note(*(f"{line} (in the consuming image)" for line in broken), *absent)

    def _judged(self, context: Context, seen: Observation, wheels: list[Wheel], image: str | None = None) -> Judgement:
        """The `trust` decision for `wheels`: who built them, by their GitHub attestations."""
        trust = context.component.trust
        if not trust.checked:
            return Judgement()
        if self.trust is None:
            raise ConfigError(
                f"{context.name}: trust.attestations = {trust.attestations.value!r} "
                "needs GitHub's attestations API, which this pass cannot reach"
            )
        with doing(f"checking the attestations of {context.name}'s wheels"):
            return self.trust.judge(trust, seen.pinned, wheels, image=image)

    def _statement_kept(
        self, context: Context, seen: Observation, image: ImageFound, attached: list[Attached]
    ) -> Judgement:
        """No silent loss of wheelpin's own signed provenance: with the operator's signing key,
        a pinned image whose statement the key verifies is followed only by one that carries
        such a statement too (core/trust/decide.statement_downgrade)."""
        if self.signing_key is None or seen.pinned is None:
            return Judgement()
        public = self.signing_key.public_key()
        with doing(f"checking the signed provenance of {context.name}'s pinned image"):
            pinned_signed = signed_by(context.store, seen.pinned.digest, public)
        if not pinned_signed:
            return Judgement()
        if any(item.signed and item.status == "attached" for item in attached):
            new_signed = True  # signed now, with this key
        else:
            with doing(f"checking the signed provenance of {image.ref}"):
                new_signed = signed_by(context.store, image.digest, public)
        return statement_downgrade(
            context.component.trust, pinned_signed=pinned_signed, new_signed=new_signed, new=image.ref
        )

    def _smoke_said(self, context: Context, smoked: SmokeResult | None) -> dict[str, tuple[str, ...]]:
        if smoked is None:
            return {}
        command = context.component.wheel.smoke
        said: tuple[str, ...] = ()
        if smoked.by_workflow and smoked.passed:
            said = (f"smoke test passed in the build run: {', '.join(smoked.passed)}",)
        elif smoked.passed and command is not None:
            said = tuple(smoke_said(command, replace(smoked, not_run=[])))
        return {"more_verification": said, "more_notes": tuple(smoked.not_run)}

    def _provenance(self, context: Context, done: Outcome, head: str, image: ImageFound, wheels: int) -> str:
        """Who made the image: wheelpin from a build it names, or someone else (adopted)."""
        built = done.made_by if done.made_by is not None else context.builder.describe(head)
        count = f"{wheels} wheel{'s' if wheels != 1 else ''}"
        if not image.adopted:
            return f"built by {built or 'an earlier build'}; published by wheelpin, its {count} verified first"
        pusher = (
            f"pushed by {built}" if built and context.builder.adopts else "found under its tag, pushed by someone else"
        )
        return f"adopted: {pusher}; wheelpin fetched its {count} and verified them like a build of its own"

    def _attach(
        self,
        context: Context,
        head: str,
        digest: str,
        tag: str,
        wheels: Sequence[WheelEntry],
        *,
        made_by: str | None,
        invocation: str | None,
        smoke: SmokeResult | None,
        manifest_size: int | None = None,
    ) -> tuple[Attached, ...]:
        """Attach the provenance and SBOM of an image wheelpin published (adapters/provenance.py)."""
        component = context.component
        facts = BuildFacts(
            repository=context.store.name,
            digest=digest,
            tag=tag,
            wheels=tuple(wheels),
            source=public_url(context.upstream.upstream.repo),
            revision=head,
            component=component.name,
            rules=rules_digest(component),
            build=made_by,
            invocation=invocation,
            verification=verification_of(self._smoke_said(context, smoke).get("more_verification", ())),
        )
        with doing(f"attaching the provenance of {context.store.name}@{digest}"):
            attached, _ = attach_provenance(context.store, facts, self.signing_key, manifest_size=manifest_size)
        return tuple(attached)

    def _attached(
        self, context: Context, done: Outcome, head: str, image: ImageFound, info: ImageInfo | None
    ) -> list[Attached]:
        """The provenance and SBOM attached to the image (none: an adopted image). An image
        wheelpin's annotations say it published for this commit under these rules, which
        carries none (a pass stopped between the push and the attaching, or an older wheelpin
        published it), gets them now. `info` is the image as read when this plan did not
        publish or adopt it (None when it did)."""
        if done.attached is not None:  # attached by the publish of this plan
            return list(done.attached)
        with doing(f"listing what is attached to {image.ref}"):
            attached = attached_to(context.store, image.digest)
        ours = (
            info is not None
            and names_commit(info.annotations.get(REVISION), head)
            and info.annotations.get(ANNOTATION_COMPONENT) == context.name
            and info.annotations.get(ANNOTATION_RULES) == rules_digest(context.component)
            and not image.adopted
            and (context.name, image.digest) not in self.memory.adopted
        )
        if ours and info is not None and not carries_provenance(attached):
            attached = list(
                self._attach(
                    context,
                    head,
                    image.digest,
                    image.tag,
                    info.wheels,
                    made_by=done.made_by or context.builder.describe(head),
                    invocation=context.builder.invocation(head),
                    smoke=done.smoke,
                )
            )
        return attached

    def _with_refusals(self, context: Context, facts: Facts, commits: Sequence[Commit]) -> list[Commit]:
        """The commit list, each commit whose wheel was refused under today's config and consuming
        image marked with why, and each whose last build failed (under any config: it did).
        The commit proposed is never marked: its wheels are the ones the proposal pins."""
        judged_under, marked = facts.judged_under or config_digest(context.component), []
        for commit in commits:
            failure = None if commit.sha == facts.head else self.state.failure(context.name, commit.sha)
            if failure is None:
                marked.append(commit)
            elif not failure.refused:
                marked.append(replace(commit, failed=failure.message))
            elif failure.judged_under in (judged_under, ""):
                marked.append(replace(commit, refused=failure.reason or failure.message))
            else:
                marked.append(commit)
        return marked

    def _tell(self, branch: str, exc: WheelpinError) -> None:
        """Say on the proposal's pull request (once per reason) what someone must grant."""
        key = "refused-" + hashlib.sha256(exc.message.encode()).hexdigest()[:12]
        try:
            self.platform.say_once(branch, key=key, text=f"wheelpin cannot update this pull request: {exc.message}")
        except WheelpinError as again:
            log.warning("comment.failed", error=again.message)


def _head(facts: Facts) -> str:
    assert facts.head is not None
    return facts.head


def _reach(context: Context) -> Reach:
    """How the component's registry is spoken to, for the commands its proposal prints."""
    return context.store.reach if isinstance(context.store, RegistryRepository) else Reach()


def _check_refs(context: Context, image: ImageFound) -> tuple[str, ...]:
    if isinstance(context.store, LayoutStore):
        return (f"oci:{context.store.folder}:{image.tag}",)
    return (f"{context.component.image.repository}@{image.digest}",)

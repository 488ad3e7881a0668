"""Observe (docs/design.md §2): the world of one component read into one frozen
`Observation` (loop/observation.py): the `core.decide.plan.Facts` the planner decides
from, and what execute and the dry run work from. It reads and never writes: not the
platform, not a registry, not the state file, not an adapter's fields. It makes
no decision either; it only stops reading where the facts already found make more reading
useless (an error, a base that pins the head, a commit in its quiet period).

Each fact comes from the world itself where the world can say it: the head from the
upstream, the pinned commit from the pinned image's revision annotation, the proposal's
state from its marker, the image from the commit's tag. The state file adds only what
the world cannot tell cheaply: failures, refusals and the build runs followed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..adapters.imageread import ImageInfo
from ..adapters.platform import Platform
from ..adapters.statefile import StateFile
from ..adapters.upstream import UpstreamRepo
from ..core.checks.digest import rules_digest
from ..core.config.load import LoadedConfig
from ..core.config.templates import TagValues, commit_only, fields_of, render_tag, tag_pattern
from ..core.decide.backoff import config_digest
from ..core.decide.plan import BuildState, Facts, ImageFound, ProposalSeen, write_key
from ..core.decide.revision import commit_hints, is_full_commit, names_commit
from ..core.errors import ConfigError, NotFound, TransientError, WheelpinError, doing, kind_of
from ..core.image.oci import ANNOTATION_COMPONENT, ANNOTATION_RULES, REVISION
from ..core.pins.bump import PinState, read_pins
from ..core.proposal.marker import read_marker
from .context import Context, Memory, Reads, Stores
from .observation import PINNED_NOT_FOUND, CommitSought, Observation, pin_repository, pinned_problem


@dataclass
class _Read:
    """What observing one component has read so far: frozen into its `Observation` at the
    end, or when a read fails (a dry run says what was read before)."""

    texts: dict[str, str] = field(default_factory=dict)
    pins: tuple[PinState, ...] = ()
    pinned: ImageInfo | None = None
    pinned_missing: bool = False
    pinned_unread: str | None = None
    pinned_commit: str | None = None
    commit_sought: CommitSought = "no"  # Observation.commit_sought
    consumer: str | None = None
    consumer_unread: WheelpinError | None = None
    tag_commit: str | None = None  # Observation.tag_commit

    def observation(self, facts: Facts) -> Observation:
        return Observation(
            facts,
            MappingProxyType(dict(self.texts)),
            self.pins,
            self.pinned,
            self.pinned_missing,
            self.pinned_unread,
            self.consumer,
            self.consumer_unread,
            self.commit_sought,
            self.tag_commit,
        )

    @property
    def problem(self) -> str | None:
        return None if self.pinned is not None else pinned_problem(self.pins, self.pinned_unread)


class Observer:
    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        platform: Platform,
        registries: Stores,
        state: StateFile,
        memory: Memory,
        reads: Reads,
        where: str,
    ) -> None:
        self.loaded = loaded
        self.where = where  # the repository, as its refused writes are recorded (runner.py)
        self.config = loaded.config
        self.platform = platform
        self.registries = registries
        self.state = state
        self.memory = memory
        self.reads = reads

    def observe(self, context: Context, now: float) -> Observation:
        """What one component's world holds now; errors of reading are facts too."""
        name = context.name
        try:
            with doing("asking the upstream for its head (to find what to build)"):
                head = self._head(context.upstream)
        except WheelpinError as exc:
            return Observation(Facts(component=name, head=None, error=exc.message, error_kind=kind_of(exc)))
        read = _Read()
        try:
            return read.observation(self._observe(context, head, now, read))
        except WheelpinError as exc:
            return read.observation(  # with what was read before: the pinned image may have been
                Facts(  # read (from the digest cache) before the registry failed
                    component=name,
                    head=head,
                    error=exc.message,
                    error_kind=kind_of(exc),
                    # the pinned image's own failure, when it is what stopped the pass, is said once: as the error
                    pinned_problem=None if read.pinned_unread and read.pinned_unread in exc.message else read.problem,
                    pinned_commit=read.pinned_commit,
                )
            )

    def _observe(self, context: Context, head: str, now: float, read: _Read) -> Facts:
        component, name = context.component, context.name
        base_name = self.config.defaults.base_branch
        if base_name not in self.memory.bases:  # once per pass: every component starts from it
            self.memory.bases[base_name] = self.platform.resolve(f"refs/heads/{base_name}")
        base = self.memory.bases[base_name]
        if base is None:
            return Facts(
                component=name,
                head=head,
                error=f"{self.loaded.path}: its repository has no base branch {base_name} ([defaults].base_branch)",
            )
        read.texts = {pin.file: self.reads.file(base, pin.file) for pin in component.pins}
        read.pins = tuple(read_pins(component, read.texts))
        base_files = hashlib.sha256(json.dumps(read.texts, sort_keys=True).encode()).hexdigest()
        self._read_pinned(context, read)
        read.pinned_commit = self._pinned_commit(context, read, head)
        self._pinned_still_held(context, read)
        pinned_commit = read.pinned_commit
        read.tag_commit = self._tag_commit(context, read, head)
        read.commit_sought = "yes"
        # the base pins `head`, a descendant of it, or (following tags) a higher release:
        # a newest tag older than the pin is never proposed
        with doing(f"fetching {head[:8]} and {(pinned_commit or '')[:8]} to tell whether the base pins a descendant"):
            base_has_head = pinned_commit is not None and (
                pinned_commit == head
                or context.upstream.is_older_release(head, pinned_commit)
                or context.upstream.is_ancestor(head, pinned_commit)
            )
        proposal = self._proposal(context.branch, base)
        judged_under = self._judged_under(context, base, read)
        facts = Facts(
            component=name,
            head=head,
            base=base,
            base_files=base_files,
            pinned_commit=pinned_commit,
            base_has_head=base_has_head,
            proposal=proposal,
            judged_under=judged_under,
            pinned_problem=read.problem,
        )
        if base_has_head:
            return facts
        # a declined proposal's branch may be kept: asked whether or not the branch is there
        facts = replace(facts, skipped=head in self.platform.skipped_commits(context.branch))
        quiet = component.quiet_minutes if component.quiet_minutes is not None else self.config.defaults.quiet_minutes
        if quiet:
            committed_at = context.upstream.committed_at(head)
            facts = replace(facts, quiet_minutes=quiet, committed_at=committed_at)
            if now < committed_at + quiet * 60:
                return facts  # nothing else matters until it ends
        with doing(f"looking for the image of {head[:8]} in {context.store.name} (to know whether it is built)"):
            image = self._find_image(context, read, head, proposal)
        facts = replace(facts, failure=self.state.failure(name, head))
        if image is None:
            build = context.builder.status(head)
            if build.state == BuildState.SUCCEEDED and build.adopts:
                image = self._find_image(context, read, head, proposal)  # the run has just pushed it
            facts = replace(facts, build=build)
        if image is None:
            return facts
        problem = self._image_problem(context, head, image)
        if problem:
            return replace(facts, error=problem)
        if read.pins and all(p.ref is not None and p.ref.digest == image.digest for p in read.pins):
            return replace(facts, base_pins_image=True)  # its revision was unknown
        facts = replace(facts, image=image)
        return replace(facts, refusal=self.state.refusal(write_key(facts, where=self.where)))

    def _head(self, upstream: UpstreamRepo) -> str:
        """The upstream's head, listed once a pass for all the components that follow it."""
        key = id(upstream)  # the runner keeps one `UpstreamRepo` per upstream for the pass
        if key not in self.memory.heads:
            self.memory.heads[key] = upstream.head()
        return self.memory.heads[key]

    def _consumer_reference(self, context: Context, base: str) -> str | None:
        """The consuming image the config names, or the downstream's Dockerfile at `base` does."""
        consumer = context.component.consumer
        if consumer is None:
            return None
        if consumer.image is not None:
            return consumer.image
        file = consumer.file or context.component.pins[0].file
        from ..core.image.consumer import reference_in  # the consumer checks' module: loaded for a component with one

        try:
            return reference_in(consumer, self.reads.file(base, file), where=file)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _judged_under(self, context: Context, base: str, read: _Read) -> str:
        """What a wheel of the component is judged under: its config, and the consuming
        image it is checked against (a refusal for a library the base image lacked is
        judged again once the base moves)."""
        config = config_digest(context.component)
        try:
            read.consumer = reference = self._consumer_reference(context, base)
        except WheelpinError as exc:
            read.consumer_unread = exc  # raised when the image is needed
            return config
        return config if reference is None else config + "+" + hashlib.sha256(reference.encode()).hexdigest()[:8]

    def _read_pinned(self, context: Context, read: _Read) -> None:
        """The image the base pins, read to compare its wheels with the new ones'; left
        unread when it cannot be (`pinned_missing` when it is not there, which the proposal
        says; `pinned_unread` why, for a dry run)."""
        pin = read.pins[0] if read.pins else None
        ref = pin.ref if pin else None
        if pin is None or ref is None or ref.digest is None:
            return
        store = context.store if context.component.image.is_layout else self.registries.store(ref)
        try:
            with doing(f"reading the image pinned at {pin.file}:{pin.line} (to compare its wheels)"):
                try:
                    read.pinned = self.reads.image(store, ref.digest)
                except TransientError as exc:
                    read.pinned_unread = exc.message  # the pass stops here; a dry run says why on the pin's line too
                    raise
        except NotFound:
            read.pinned_missing = True
            read.pinned_unread = PINNED_NOT_FOUND
        except TransientError:
            raise
        except WheelpinError as exc:
            read.pinned_unread = exc.message  # a dry run says why; the proposal says "unknown"

    def _pinned_still_held(self, context: Context, read: _Read) -> None:
        """The pinned image read, its documents perhaps from the digest cache (what a digest
        names never changes): whether the registry still holds it can, so it is asked once
        each pass (`Reads.still_held`), and one deleted since is said as an empty cache
        would say it. Asked once its commit is known: a registry that does not answer stops
        the pass here, and a dry run still names what the image was built from."""
        pin = read.pins[0] if read.pins else None
        ref = pin.ref if pin else None
        if read.pinned is None or pin is None or ref is None or ref.digest is None:
            return
        store = context.store if context.component.image.is_layout else self.registries.store(ref)
        with doing(f"asking {store.name} whether it still holds the image pinned at {pin.file}:{pin.line}"):
            held = self.reads.still_held(store, ref.digest)
        if not held:
            read.pinned, read.pinned_commit = None, None
            read.pinned_missing, read.pinned_unread = True, PINNED_NOT_FOUND

    def _pinned_commit(self, context: Context, read: _Read, head: str) -> str | None:
        """The commit the base pins: wheelpin's revision annotation when it is a whole commit,
        else the first hint the image gives (core/decide/revision.py: that annotation
        abbreviated, as an older `image publish --revision` stored it, first) that names a
        commit upstream. An upstream that cannot be fetched to look stops the pass there
        (TransientError): its commit is then not known, rather than said to be absent."""
        info = read.pinned
        if info is None:
            return None
        revision = info.annotations.get(REVISION)
        if revision is not None and is_full_commit(revision):
            return revision
        ref = read.pins[0].ref if read.pins else None
        hints = commit_hints(
            annotations=info.annotations,
            labels=info.labels,
            tag=ref.tag if ref else None,
            template=context.component.image.tag,
            component=context.name,
            versions=[w.version for w in info.wheels],
        )
        for hint in hints:
            try:
                with doing(f"fetching {head[:8]} to find the commit the pinned image was built from"):
                    commit = context.upstream.expand(hint, near=head)
            except TransientError:
                read.commit_sought = "unfetched"  # a dry run says so on the pin's line
                raise
            if commit is not None:
                return commit
        return None

    def _tag_commit(self, context: Context, read: _Read, head: str) -> str | None:
        """The upstream commit the pin's tag names (`…-gd1003172`, core/decide/revision.py)
        when its image could not be read: where the proposal's commit list starts. Not
        what the base pins to the planner: a digest that names no image is replaced even
        when its tag names the head."""
        ref = read.pins[0].ref if read.pins else None
        if read.pinned is not None or read.pinned_unread is None or ref is None or ref.tag is None:
            return None
        hints = commit_hints(
            annotations={},
            labels={},
            tag=ref.tag,
            template=context.component.image.tag,
            component=context.name,
            versions=[],
        )
        for hint in hints:
            with doing(f"fetching {head[:8]} to find the commit the pinned tag names"):
                commit = context.upstream.expand(hint, near=head)
            if commit is not None:
                return commit
        return None

    def _proposal(self, branch: str, base: str) -> ProposalSeen | None:
        head = self.platform.resolve(f"refs/heads/{branch}")
        if head is None:
            return None
        commits = self.platform.branch_commits(branch, base)
        foreign = tuple(c.sha for c in commits if not self.platform.is_bot_commit(c))
        mine = [c for c in commits if self.platform.is_bot_commit(c)]
        state = read_marker(mine[-1].message) if mine else None
        return ProposalSeen(branch, head, state, foreign, open=self.platform.proposal_open(branch))

    def _found(
        self, context: Context, read: _Read, tag: str, digest: str, head: str, *, verified: bool = False
    ) -> ImageFound:
        """An image found under `head`'s tag: verified when checked before in this process,
        or when wheelpin's own annotations name this commit, component and the rules it is
        verified against now (core/checks/digest.rules_digest)."""
        if not verified and (context.name, digest) not in self.memory.verified:
            annotations = self.reads.image(context.store, digest).annotations
            verified = (
                names_commit(annotations.get(REVISION), head)
                and annotations.get(ANNOTATION_COMPONENT) == context.name
                and annotations.get(ANNOTATION_RULES) == rules_digest(context.component)
            )
        else:
            verified = True
        adopted = (context.name, digest) in self.memory.adopted
        return ImageFound(
            tag, digest, f"{pin_repository(context.component, read.pins)}:{tag}@{digest}", verified, adopted=adopted
        )

    def _find_image(self, context: Context, read: _Read, head: str, proposal: ProposalSeen | None) -> ImageFound | None:
        """The image of `head`, found from the commit alone (docs/design.md §2): the tag the
        open proposal names (one HEAD), the tag the template gives, or the repository's
        tags matched against the template with the version as the only wildcard."""
        component = context.component
        published = self.memory.published.get((component.name, head))
        if published is not None and context.store.tag_digest(published[0]) == published[1]:
            return self._found(context, read, *published, head)
        state = proposal.state if proposal else None
        if state and state.get("commit") == head and state.get("tag"):
            digest = context.store.tag_digest(str(state["tag"]))
            if digest is not None and digest == state.get("digest"):
                # verified when it was proposed
                return self._found(context, read, str(state["tag"]), digest, head, verified=True)
        if commit_only(component.image.tag):
            candidates = [render_tag(component.image.tag, TagValues(sha=head, component=component.name))]
        else:
            pattern = tag_pattern(component.image.tag, component=component.name, sha=head)
            candidates = sorted(t for t in context.store.list_tags() if pattern.match(t))
            if not {"sha", "sha8"} & set(fields_of(component.image.tag)):  # {version} alone
                candidates = [t for t in candidates if f"g{head[:8]}" in t]
        for tag in reversed(candidates):
            digest = context.store.tag_digest(tag)
            if digest is not None:
                return self._found(context, read, tag, digest, head)
        return None

    def _image_problem(self, context: Context, head: str, image: ImageFound) -> str | None:
        """An image under the commit's tag that is plainly not that commit's build: no
        wheel, a tag its wheel would not get, another revision."""
        if image.verified:
            return None
        info = self.reads.image(context.store, image.digest)
        component = context.component
        if not info.wheels:
            return _tag_taken(context, image.tag, f"no wheel, not the build of {head[:8]}", head)
        wheel = info.wheels[0]
        revision = info.annotations.get(REVISION)
        if revision is not None and not names_commit(revision, head):
            return _tag_taken(
                context, image.tag, f"{wheel.file}, built from {revision[:8]}, not the build of {head[:8]}", head
            )
        expected = render_tag(component.image.tag, TagValues(sha=head, component=component.name, version=wheel.version))
        if expected != image.tag:
            return _tag_taken(
                context, image.tag, f"{wheel.file}, whose version {wheel.version} takes the tag {expected}", head
            )
        return None


def _tag_taken(context: Context, tag: str, held: str, head: str) -> str:
    """The sentence for the tag `head`'s build would take holding `held` instead (what it
    holds and how that is not the build): why nothing is built over it, and the two ways on."""
    return (
        f"{context.store.name}:{tag} holds {held}, and wheelpin never overwrites a tag with other content: "
        f"delete that tag if it is stale, or change {context.name}'s image.tag so that the build of "
        f"{head[:8]} gets another tag"
    )

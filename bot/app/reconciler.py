"""The loop of docs/design.md §1 for one repository: observe → plan → act, per component,
until the plan is empty. Components are independent: one failing does not stop the
others. The planner is `core.plan`; this module only observes and executes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from ..adapters.actions import ActionsBuilder
from ..adapters.builders import COMPLETE, build_folder, built_wheels, run_local_build
from ..adapters.imageread import ImageInfo, extract_wheels, read_image
from ..adapters.imagestore import ImageStore, LayoutStore
from ..adapters.platform import Platform
from ..adapters.publisher import publish
from ..adapters.statefile import StateFile
from ..adapters.upstream import UpstreamRepo
from ..core.config import Component, Config
from ..core.configfile import LoadedConfig
from ..core.errors import PermissionRefused, RefusedError, RuleRefused, TransientError, WheelpinError, kind_of
from ..core.imageref import ImageRef
from ..core.inspect import inspect_wheel
from ..core.pins import PinState, plan_bump, read_pins
from ..core.plan import (BUILD, CLOSE, FETCH, PROPOSE, PUBLISH, REPORT, WAIT, Action, ImageFound,
                         Observed, ProposalSeen, desired_state, plan)
from ..core.proposal import ProposalFacts, body, read_marker, title
from ..core.redact import public_url
from ..core.requirements import RequirementsDiff, diff_requirements, find_conflicts
from ..core.templates import TagValues, commit_only, fields_of, render, render_tag, tag_pattern
from ..core.verify import component_rules, python_tags_of, verify_wheels
from .wiring import Registries

log = structlog.get_logger("wheelpin.reconcile")
MAX_STEPS = 8
DISPATCH_GRACE = 600.0  # seconds a noted dispatch is waited for before it counts as lost


@dataclass
class ComponentResult:
    name: str
    status: str = "nothing"  # nothing | done | failed | waiting | left-alone | planned
    head: str | None = None
    actions: list[Action] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    error_kind: str | None = None  # when failed: config | verification | refused | transient | … | reported
    pinned: str | None = None  # the upstream commit the base pins today
    image: str | None = None  # the image of `head`, when there is one
    proposal: str | None = None  # the bot's branch, when it exists
    build: str = ""  # where the build of `head` stands
    retry_after: float | None = None  # when failed for a reason that says how long it lasts (a rate limit)

    def to_json(self) -> dict[str, Any]:
        return {"component": self.name, "status": self.status, "head": self.head,
                "actions": [a.to_json() for a in self.actions], "messages": self.messages,
                "error_kind": self.error_kind, "pinned": self.pinned, "image": self.image,
                "proposal": self.proposal, "build": self.build}

    def seen(self, observed: Observed) -> None:
        self.head = observed.head
        self.pinned = observed.pinned_commit
        self.image = observed.image.ref if observed.image else None
        self.proposal = observed.proposal.branch if observed.proposal else None
        self.build = (observed.failure or observed.run_detail or
                      ("built" if observed.built else "image found" if observed.image else ""))


@dataclass
class PassResult:
    components: list[ComponentResult]
    dry_run: bool
    requests: dict[str, int] = field(default_factory=dict)  # outside requests the pass made

    @property
    def failed(self) -> bool:
        return any(c.status == "failed" for c in self.components)

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "failed": self.failed, "requests": self.requests,
                "components": [c.to_json() for c in self.components]}


@dataclass
class _Context:
    component: Component
    upstream: UpstreamRepo
    store: ImageStore
    branch: str
    pins: list[PinState] = field(default_factory=list)
    pinned_info: ImageInfo | None = None
    texts: dict[str, str] = field(default_factory=dict)


def rules_of(component: Component) -> str:
    """A digest of everything a component's config says: a failure under other rules is
    judged again."""
    return hashlib.sha256(component.model_dump_json().encode()).hexdigest()[:16]


class Reconciler:
    def __init__(self, loaded: LoadedConfig, *, platform: Platform, registries: Registries,
                 cache: Path, retry_failed: bool = False, crash_after: int | None = None,
                 actions: ActionsBuilder | None = None, local_builds: bool = True) -> None:
        self.actions = actions
        self.local_builds = local_builds  # never on GitHub: a config's command is the repository's code
        self.loaded = loaded
        self.config: Config = loaded.config
        self.platform = platform
        self.registries = registries
        self.cache = cache
        self.state = StateFile(cache / "state.sqlite")
        self.retry_failed = retry_failed
        self.crash_after = crash_after
        self.executed = 0
        self._verified: set[tuple[str, str]] = set()  # (component, digest) checked this process
        self._stores: dict[str, ImageStore] = {}
        self._published: dict[tuple[str, str], tuple[str, str]] = {}  # tag lists may lag a push
        self._files: dict[tuple[str, str], str] = {}
        self._bases: dict[str, str | None] = {}
        self._heads: dict[tuple[str, str | None, str | None], tuple[str, dict[str, str]]] = {}  # head, tags
        self._calls: dict[str, int] = {"git_ls_remote": 0, "git_fetch": 0}
        self._rebase: set[str] = set()  # `/wheelpin rebase`: rewrite the branch once, foreign commits or not
        self._recheck: set[str] = set()  # `/wheelpin recheck`: failures of the head retried, images verified again

    # -- wiring ---------------------------------------------------------------------------

    def _store(self, component: Component) -> ImageStore:
        if component.image.repository not in self._stores:
            if component.image.is_layout:
                folder = Path(component.image.repository[4:])
                store: ImageStore = LayoutStore(folder if folder.is_absolute() else (self.loaded.root / folder).resolve())
            else:
                store = self.registries.store(ImageRef.parse(component.image.repository))
            self._stores[component.image.repository] = store
        return self._stores[component.image.repository]

    def _context(self, component: Component) -> _Context:
        upstream = UpstreamRepo(component.upstream, cache=self.cache, root=self.loaded.root)
        self._upstreams.append(upstream)
        return _Context(component, upstream, self._store(component),
                        self.config.defaults.branch_prefix + component.name)

    def _head(self, upstream: UpstreamRepo) -> str:
        key = (upstream.url, upstream.upstream.branch, upstream.upstream.tags)
        if key not in self._heads:
            self._heads[key] = (upstream.head(), upstream.tags)
            self._calls["git_ls_remote"] += 1
        head, upstream.tags = self._heads[key]
        return head

    # -- a pass ---------------------------------------------------------------------------

    def run(self, *, dry_run: bool = False, only: str | None = None, rebase: bool = False,
            recheck: bool = False) -> PassResult:
        """One pass over the components (or `only` one). `rebase` rewrites the proposal on
        the current base even if someone else pushed to it; `recheck` retries the head's
        recorded failures and verifies found images again."""
        names = {c.name for c in self.config.components if only is None or c.name == only}
        self._rebase = set(names) if rebase else set()
        self._recheck = set(names) if recheck else set()
        if recheck:
            self._verified = {(name, digest) for name, digest in self._verified if name not in names}
        try:
            with self.state.unsaved() if dry_run else nullcontext():
                if recheck or self.retry_failed:
                    self.state.forget_refusals()
                return self._run(dry_run=dry_run, only=only)
        finally:
            self._rebase, self._recheck = set(), set()

    def skip(self, component: Component, *, by: str) -> str:
        """`/wheelpin skip`: close the component's proposal unmerged, so that its commit is
        never proposed again (a newer upstream commit gets a new proposal)."""
        self.platform.begin_pass()
        branch = self.config.defaults.branch_prefix + component.name
        head = self.platform.resolve(f"refs/heads/{branch}")
        if head is None:
            return f"{component.name}: no proposal to skip"
        self.platform.close(branch, expected=head, reason=f"@{by} asked to skip this commit; wheelpin will "
                            "propose the next upstream commit instead")
        return f"{component.name}: skipped at the request of @{by}"

    def _run(self, *, dry_run: bool, only: str | None) -> PassResult:
        self.platform.begin_pass()
        self._bases = {}
        self._heads = {}  # one ls-remote per upstream and pass
        self._files = {}
        self._calls = {"git_ls_remote": 0, "git_fetch": 0}
        self._upstreams: list[UpstreamRepo] = []
        stores_before = {id(s): (s.traffic.requests, s.traffic.bytes_uploaded) for s in self._stores.values()}
        http = getattr(self.platform, "http", None)
        github_before = (http.traffic.counted, http.traffic.free) if http is not None else (0, 0)
        writes_before = self.platform.writes
        results = []
        for component in self.config.components:
            if only is None or component.name == only:
                results.append(self.reconcile(component, dry_run=dry_run))
        self._calls["git_fetch"] = sum(upstream.calls.fetches for upstream in self._upstreams)
        registry = uploaded = 0
        for store in self._stores.values():
            asked, sent = stores_before.get(id(store), (0, 0))
            registry += store.traffic.requests - asked
            uploaded += store.traffic.bytes_uploaded - sent
        requests = {**self._calls, "registry": registry, "registry_bytes_uploaded": uploaded,
                    "branch_writes": self.platform.writes - writes_before}
        if http is not None:
            requests["github_counted"] = http.traffic.counted - github_before[0]
            requests["github_free"] = http.traffic.free - github_before[1]
        return PassResult(results, dry_run, requests)

    def reconcile(self, component: Component, *, dry_run: bool) -> ComponentResult:
        with structlog.contextvars.bound_contextvars(component=component.name):
            try:
                return self._reconcile(component, dry_run=dry_run)
            except WheelpinError as exc:
                return ComponentResult(component.name, "failed", messages=[exc.message], error_kind=kind_of(exc),
                                       retry_after=exc.retry_after if isinstance(exc, TransientError) else None)
            except Exception as exc:  # a bug must not stop the other components
                log.error("component.crashed", exc_info=True)
                return ComponentResult(component.name, "failed", error_kind="internal",
                                       messages=[f"internal error ({type(exc).__name__}: {exc})"])
            finally:
                structlog.contextvars.unbind_contextvars("commit")

    def _reconcile(self, component: Component, *, dry_run: bool) -> ComponentResult:
        result = ComponentResult(component.name)
        context = self._context(component)
        bound = log.bind(component=component.name)
        for _step in range(MAX_STEPS):
            observed = self.observe(context)
            result.seen(observed)
            structlog.contextvars.bind_contextvars(commit=observed.head)
            actions = self._unless_refused(component, observed, plan(observed))
            if not actions:
                if result.status not in ("failed",):
                    result.status = "done" if result.actions else "nothing"
                return result
            if dry_run:
                result.actions += actions
                result.status = "planned"
                return result
            action = actions[0]
            bound.info("action", kind=action.kind)
            result.actions.append(action)
            try:
                terminal = self.execute(context, observed, action, result)
            except WheelpinError as exc:
                result.status = "failed"
                result.error_kind = kind_of(exc)
                result.messages.append(exc.message)
                if isinstance(exc, TransientError):
                    result.retry_after = exc.retry_after
                bound.warning("action.failed", kind=action.kind, error=exc.message, error_kind=result.error_kind)
                if isinstance(exc, (PermissionRefused, RuleRefused)) and action.kind == PROPOSE:
                    self.state.record_refusal(self._write_key(component, observed), exc.message)
                    if observed.proposal is not None:
                        self._tell(observed.proposal.branch, exc)
                return result
            if action.kind == PROPOSE:
                self._rebase.discard(component.name)
            self.executed += 1
            if self.crash_after is not None and self.executed >= self.crash_after:
                os._exit(70)  # a test hook: the process is killed between two actions
            if terminal:
                return result
        result.status = "failed"
        result.messages.append(f"no steady state after {MAX_STEPS} steps")
        return result

    def _failed(self, component: Component, head: str, kind: str, message: str) -> None:
        """Record a failed build or verification of `head`, under the component's rules."""
        self.state.record(component.name, head, kind, message, rules=rules_of(component))

    def _write_key(self, component: Component, observed: Observed) -> str:
        """What a proposal write is made of: the same key is the same write to the same
        branch tip on the same base, which GitHub refuses the same way."""
        proposal = observed.proposal
        facts = {"where": str(self.loaded.root), "component": rules_of(component),
                 "want": desired_state(observed), "base": observed.base,
                 "branch": proposal.head if proposal else None}
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()

    def _unless_refused(self, component: Component, observed: Observed, actions: list[Action]) -> list[Action]:
        """A proposal write GitHub refused (a rule, a missing permission) is not made again
        while nothing it depends on changed, until its backoff ends (an hour, doubled up to
        a day), permissions are granted, or a human asks (`/wheelpin recheck`, --retry-failed)."""
        if not actions or actions[0].kind != PROPOSE or self.retry_failed:
            return actions
        refused = self.state.refusal(self._write_key(component, observed))
        if refused is None or refused.retry_at <= time.time():
            return actions
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(refused.retry_at))
        return [Action(REPORT, observed.component, observed.head,
                       f"{refused.message} (not tried again before {when}, unless the base or upstream "
                       "moves, permissions are granted, or `/wheelpin recheck` asks)")]

    # -- observe --------------------------------------------------------------------------

    def observe(self, context: _Context) -> Observed:
        component = context.component
        name = component.name
        try:
            head = self._head(context.upstream)
        except WheelpinError as exc:
            return Observed(component=name, head=None, error=exc.message)
        base_name = self.config.defaults.base_branch
        if base_name not in self._bases:  # once per pass: every component starts from it
            self._bases[base_name] = self.platform.resolve(f"refs/heads/{base_name}")
        base = self._bases[base_name]
        if base is None:
            return Observed(component=name, head=head, error=f"{self.loaded.root}: no base branch {base_name}")
        try:
            context.texts = {pin.file: self._read(base, pin.file) for pin in component.pins}
            context.pins = read_pins(component, context.texts)
        except WheelpinError as exc:
            return Observed(component=name, head=head, error=exc.message)
        base_files = hashlib.sha256(json.dumps(context.texts, sort_keys=True).encode()).hexdigest()
        try:
            context.pinned_info = self._pinned_info(context)
        except WheelpinError as exc:
            return Observed(component=name, head=head, error=exc.message)
        pinned_commit = (context.pinned_info.annotations.get("org.opencontainers.image.revision")
                         if context.pinned_info else None)
        # the base pins `head`, a descendant of it, or (following tags) a higher release:
        # a newest tag older than the pin is never proposed
        base_has_head = pinned_commit is not None and (
            pinned_commit == head or context.upstream.is_older_release(head, pinned_commit)
            or context.upstream.is_ancestor(head, pinned_commit))
        proposal = self._proposal(context.branch, base)
        if proposal is not None and name in self._rebase:  # rewritten from the base, whoever pushed
            proposal = ProposalSeen(proposal.branch, proposal.head, None)
        common: dict[str, Any] = dict(component=name, head=head, pinned_commit=pinned_commit,
                                      base_has_head=base_has_head, base=base, base_files=base_files,
                                      proposal=proposal)
        if base_has_head:
            return Observed(**common)
        if proposal is None:  # only then can a declined proposal matter
            try:
                common["skipped"] = head in self.platform.skipped_commits(context.branch)
            except WheelpinError as exc:
                return Observed(**common, error=exc.message)
        quiet = component.quiet_minutes if component.quiet_minutes is not None else self.config.defaults.quiet_minutes
        if quiet:
            try:
                age = time.time() - context.upstream.committed_at(head)
            except WheelpinError as exc:
                return Observed(**common, error=exc.message)
            if age < quiet * 60:
                return Observed(**common, waiting=f"in its quiet period ({int(age // 60)} of {quiet} minutes)")
        try:
            image = self._find_image(context, head, proposal)
            problem = self._check_found(context, head, image) if image else None
        except WheelpinError as exc:
            return Observed(**common, error=exc.message)
        if problem:
            return Observed(**common, error=problem)
        if image and context.pins and all(p.ref is not None and p.ref.digest == image.digest for p in context.pins):
            return Observed(**{**common, "base_has_head": True})  # its revision was unknown
        recheck = name in self._recheck
        self._recheck.discard(name)  # once: the build it starts is followed like any other
        failure = None
        recorded = self.state.failure(name, head)
        # a failure under other rules (the config changed since) is judged again now
        if recorded is not None and recorded.rules and recorded.rules != rules_of(component):
            recorded = None
        # a run followed now was started after the last failure (a failure drops its run)
        if recorded is not None and self.state.run_of(name, head) is not None:
            recorded = None
        if recorded is not None and not self.retry_failed and not recheck and recorded.retry_at > time.time():
            failure = recorded.message
        built = built_wheels(self.cache, name, head) is not None
        workflow = component.build.workflow is not None
        run, run_detail = None, ""
        if workflow and image is None and not built and failure is None:
            try:
                run, run_detail = self._run_state(component, head)
                if run == "success" and component.build.publishes_image:
                    image = self._find_image(context, head, proposal)  # the run has just pushed it
                    problem = self._check_found(context, head, image) if image else None
                    if problem:
                        return Observed(**common, error=problem)
            except WheelpinError as exc:
                return Observed(**common, error=exc.message)
        return Observed(**common, image=image, built=built, failure=failure, workflow=workflow,
                        run=run, run_detail=run_detail, adopts=component.build.publishes_image)

    def _run_state(self, component: Component, head: str) -> tuple[str | None, str]:
        """Where the Actions build of `head` stands: None (not started), running, success, failure."""
        run_id = self.state.run_of(component.name, head)
        if run_id is None:
            return None, ""
        if self.actions is None:
            raise WheelpinError(f"{component.name}: builds on GitHub Actions need the GitHub platform")
        seen = self.actions.run(run_id)
        if not seen.done:
            return "running", f"build run {seen.url} is {seen.status}"
        if seen.conclusion == "success":
            return "success", f"build run {seen.url} succeeded"
        message = f"build run {seen.url} of {head[:8]} ended: {seen.conclusion}"
        self._failed(component, head, "build", message)
        self.state.drop_run(component.name, head)  # after the backoff (or a recheck), a new run
        return "failure", message

    def _read(self, base: str, path: str) -> str:
        key = (base, path)  # a commit's files never change: read each once
        if key not in self._files:
            text = self.platform.read_file(base, path)
            if text is None:
                raise WheelpinError(f"{path} does not exist on the base branch")
            self._files[key] = text
        return self._files[key]

    def _pinned_info(self, context: _Context) -> ImageInfo | None:
        ref = context.pins[0].ref if context.pins else None
        if ref is None or ref.digest is None:
            return None
        store = context.store if context.component.image.is_layout else self.registries.store(ref)
        try:
            return read_image(store, ref.digest)
        except TransientError:
            raise
        except WheelpinError:
            return None  # a pinned image we cannot read: the proposal says "unknown"

    def _proposal(self, branch: str, base: str) -> ProposalSeen | None:
        head = self.platform.resolve(f"refs/heads/{branch}")
        if head is None:
            return None
        commits = self.platform.branch_commits(branch, base)
        foreign = tuple(c.sha for c in commits if not self.platform.is_bot_commit(c))
        mine = [c for c in commits if self.platform.is_bot_commit(c)]
        state = read_marker(mine[-1].message) if mine else None
        return ProposalSeen(branch, head, state, foreign)

    def _pin_repository(self, context: _Context) -> str:
        if context.component.image.is_layout and context.pins and context.pins[0].ref:
            return context.pins[0].ref.repository
        return context.component.image.repository

    def _find_image(self, context: _Context, head: str, proposal: ProposalSeen | None) -> ImageFound | None:
        """The image of `head`, found from the commit alone (docs/design.md §2): the tag the
        open proposal names (one HEAD), the tag the template gives, or the repository's
        tags matched against the template with the version as the only wildcard."""
        component = context.component
        published = self._published.get((component.name, head))
        if published is not None and context.store.tag_digest(published[0]) == published[1]:
            return ImageFound(published[0], published[1],
                              f"{self._pin_repository(context)}:{published[0]}@{published[1]}")
        state = proposal.state if proposal else None
        if state and state.get("commit") == head and state.get("tag"):
            digest = context.store.tag_digest(str(state["tag"]))
            if digest is not None and digest == state.get("digest"):
                self._verified.add((component.name, digest))  # verified when it was proposed
                return ImageFound(str(state["tag"]), digest,
                                  f"{self._pin_repository(context)}:{state['tag']}@{digest}")
        if commit_only(component.image.tag):
            tag = render_tag(component.image.tag, TagValues(sha=head, component=component.name))
            candidates = [tag]
        else:
            pattern = tag_pattern(component.image.tag, component=component.name, sha=head)
            candidates = sorted(t for t in context.store.list_tags() if pattern.match(t))
            if not {"sha", "sha8"} & set(fields_of(component.image.tag)):  # {version} alone
                candidates = [t for t in candidates if f"g{head[:8]}" in t]
        for tag in reversed(candidates):
            digest = context.store.tag_digest(tag)
            if digest is not None:
                return ImageFound(tag, digest, f"{self._pin_repository(context)}:{tag}@{digest}")
        return None

    def _check_found(self, context: _Context, head: str, image: ImageFound) -> str | None:
        """An image found under the commit's tag is proposed only if it is that commit's
        verified build: its own (annotated by wheelpin with this commit), or adopted —
        pushed by another workflow, its wheels fetched and verified like a build."""
        if (context.component.name, image.digest) in self._verified:
            return None
        component = context.component
        info = read_image(context.store, image.digest)
        if not info.wheels:
            return f"{context.store.name}:{image.tag} holds no wheel; it is not a build of {head[:8]}"
        expected = render_tag(component.image.tag, TagValues(sha=head, component=component.name,
                                                             version=info.wheels[0].version))
        revision = info.annotations.get("org.opencontainers.image.revision")
        if expected != image.tag or (revision is not None and revision != head):
            return (f"{context.store.name}:{image.tag} holds {info.wheels[0].file} "
                    f"(revision {(revision or 'unknown')[:8]}), not the build of {head[:8]}; "
                    "wheelpin never overwrites a tag with other content")
        ours = revision == head and info.annotations.get("io.wheelpin.component") == component.name
        if not ours:
            with tempfile.TemporaryDirectory(prefix="wheelpin-adopt-") as folder:
                wheels = extract_wheels(context.store, info, Path(folder))
                reports = [inspect_wheel(wheel) for wheel in wheels]
                problems = verify_wheels(component, reports, component_rules(component, commit=head))
            if problems:
                return f"{context.store.name}:{image.tag} is not a verified build of {head[:8]}: " + "; ".join(problems)
        self._verified.add((component.name, image.digest))
        return None

    # -- act ------------------------------------------------------------------------------

    def execute(self, context: _Context, observed: Observed, action: Action, result: ComponentResult) -> bool:
        """Run one action; True when the pass of this component ends with it."""
        component = context.component
        head = observed.head
        assert head is not None or action.kind == REPORT
        if action.kind == REPORT:
            result.messages.append(action.detail)
            result.status = "left-alone" if "left alone" in action.detail else "failed"
            result.error_kind = None if result.status == "left-alone" else "reported"
            if observed.proposal is not None and observed.proposal.foreign:
                self.platform.say_once(observed.proposal.branch, key=f"foreign-{observed.proposal.head}",
                                       text=f"wheelpin leaves this branch alone: {action.detail}. Delete the "
                                       "branch (or drop those commits) to let wheelpin propose again.")
            return True
        if action.kind == WAIT:
            result.messages.append(action.detail)
            result.status = "waiting"
            return True
        assert head is not None
        if action.kind == BUILD and component.build.workflow is not None:
            if self.actions is None:
                raise WheelpinError(f"{component.name}: builds on GitHub Actions need the GitHub platform")
            values = {"sha": head, "sha8": head[:8], "component": component.name}
            inputs = {key: render(value, values) for key, value in component.build.inputs.items()}
            return self._dispatch(component, head, inputs, result)
        if action.kind == FETCH:
            assert self.actions is not None
            run_id = self.state.run_of(component.name, head)
            assert run_id is not None
            out = build_folder(self.cache, component.name, head) / "out"
            shutil.rmtree(out, ignore_errors=True)
            wheels = self.actions.download(run_id, out, ended_at=self.actions.run(run_id).ended_at)
            if not wheels:
                self._failed(component, head, "build", f"build run {run_id} left no wheel in its artifacts")
                self.state.drop_run(component.name, head)
                raise WheelpinError(f"build run {run_id} of {head[:8]} left no wheel in its artifacts")
            (out / COMPLETE).write_text(head + "\n")
            result.messages.append(f"fetched {len(wheels)} wheel(s) from run {run_id}")
            return False
        if action.kind == BUILD:
            if not self.local_builds:
                raise WheelpinError(f"{component.name}: build.command is not run for a repository on GitHub "
                                    "(it would run the repository's code on the bot's host); use build.workflow")
            if component.build.command is None:
                raise WheelpinError(f"{component.name}: the local platform runs build.command; "
                                    "this component builds on GitHub Actions")
            built = run_local_build(component, head, upstream=context.upstream, cache=self.cache)
            if not built.ok:
                self._failed(component, head, "build", built.message)
                raise WheelpinError(f"{built.message} (log: {built.log})")
            result.messages.append(built.message)
            return False
        if action.kind == PUBLISH:
            return self._publish(context, head, result)
        if action.kind == PROPOSE:
            self._propose(context, observed, result)
            return False
        if action.kind == CLOSE:
            assert observed.proposal is not None
            self.platform.close(observed.proposal.branch, expected=observed.proposal.head, reason=action.detail)
            result.messages.append(f"closed {observed.proposal.branch}: {action.detail}")
            return False
        raise AssertionError(action.kind)

    def _tell(self, branch: str, exc: WheelpinError) -> None:
        """Say on the proposal's pull request (once per reason) what someone must grant."""
        key = "refused-" + hashlib.sha256(exc.message.encode()).hexdigest()[:12]
        try:
            self.platform.say_once(branch, key=key, text=f"wheelpin cannot update this pull request: {exc.message}")
        except WheelpinError as again:
            log.warning("comment.failed", error=again.message)

    def _dispatch(self, component: Component, head: str, inputs: dict[str, str], result: ComponentResult) -> bool:
        """Dispatch the build of `head` on Actions once. A dispatch is noted before it is
        sent; a pass killed after sending it finds that run (by the commit in its title, or
        as the bot's oldest unclaimed run since the note) and follows it instead."""
        assert self.actions is not None and component.build.workflow is not None
        workflow = component.build.workflow
        pending = self.state.dispatch_of(component.name, head)
        claimed = self.state.claimed_runs()
        existing = self.actions.find_run(workflow, head, since=pending, claimed=claimed)
        if existing is not None and existing.done and existing.conclusion != "success":
            existing = None  # a failed run is retried with a new one, not followed again
        if existing is None and pending is not None and time.time() - pending < DISPATCH_GRACE:
            raise TransientError(f"{component.name}: the run dispatched for {head[:8]} is not listed yet; "
                                 "waiting for it rather than dispatching again", retry_after=15.0)
        if existing is not None:
            run_id: int | None = existing.id
        else:
            since = self.state.record_dispatch(component.name, head)
            run_id = self.actions.dispatch(workflow, commit=head, inputs=inputs, since=since, claimed=claimed,
                                           ref=component.build.ref or self.config.defaults.base_branch)
        if run_id is None:
            raise TransientError(f"{component.name}: the dispatched run of {head[:8]} is not listed yet",
                                 retry_after=15.0)
        self.state.record_run(component.name, head, run_id)
        result.messages.append(f"dispatched {workflow} for {head[:8]} (run {run_id})")
        return False

    def _publish(self, context: _Context, head: str, result: ComponentResult) -> bool:
        component = context.component
        wheels = built_wheels(self.cache, component.name, head) or []
        reports = [inspect_wheel(wheel) for wheel in wheels]
        problems = verify_wheels(component, reports, component_rules(component, commit=head))
        if problems:
            message = f"verification of {head[:8]} failed, nothing published: " + "; ".join(problems)
            self._failed(component, head, "verify", message)
            raise WheelpinError(message)
        tag = render_tag(component.image.tag, TagValues(sha=head, component=component.name,
                                                        version=reports[0].version))
        try:
            published = publish(context.store, tag, wheels, reports, source=public_url(context.upstream.upstream.repo),
                                revision=head, component=component.name)
        except RefusedError as exc:
            self._failed(component, head, "verify", exc.message)
            raise
        result.messages.append(f"{published.status} {published.ref}")
        self._published[(component.name, head)] = (tag, published.digest)
        self._verified.add((component.name, published.digest))
        # the image holds the wheels now: the build folder would only fill the cache
        shutil.rmtree(build_folder(self.cache, component.name, head), ignore_errors=True)
        return False

    def _propose(self, context: _Context, observed: Observed, result: ComponentResult) -> None:
        component = context.component
        assert observed.image is not None and observed.head is not None
        info = read_image(context.store, observed.image.digest)
        sha256: dict[str | None, str] = {}
        for wheel in info.wheels:
            sha256.update({tag: wheel.sha256 for tag in python_tags_of(wheel.file)})
        if len(info.wheels) == 1:
            sha256[None] = info.wheels[0].sha256
        bump = plan_bump(component, context.texts, observed.image.ref, sha256)
        old_requires = [r for w in (context.pinned_info.wheels if context.pinned_info else ()) for r in w.requires_dist]
        new_requires = [r for w in info.wheels for r in w.requires_dist]
        constraints = list(component.constraints)
        if component.constraints_file:
            constraints += _constraint_lines(self._read(observed.base, component.constraints_file))
        diff = diff_requirements(old_requires, new_requires, old_source="pinned", new_source="new")
        diff = RequirementsDiff(diff.added, diff.removed, diff.changed,
                                tuple(find_conflicts(new_requires, constraints, source="new")))
        commits = context.upstream.commits_between(observed.pinned_commit, observed.head)
        reports_line = [f"distribution {component.wheel.distribution}",
                        f"version carries g{observed.head[:8]}" if component.wheel.version_carries_commit
                        else "version carries no commit; the tag does"]
        if component.wheel.archs:
            reports_line.append("HIP code for " + ", ".join(component.wheel.archs) + " in every GPU library")
        if component.wheel.rocm:
            reports_line.append("no CUDA library or CUDA device code")
        reports_line += [f"needs {glob}" for glob in component.wheel.require_needed]
        facts = ProposalFacts(
            component=component.name, upstream=public_url(context.upstream.upstream.repo),
            old_commit=observed.pinned_commit, new_commit=observed.head,
            version=info.wheels[0].version if info.wheels else "?", image=observed.image.ref,
            wheels=info.wheels, commits=tuple(commits), diff=diff, verification=tuple(reports_line),
            files=tuple(sorted(bump.new_texts)), state=desired_state(observed),
            check_refs=self._check_refs(context, observed.image))
        message = title(facts) + "\n\n" + body(facts)
        files = bump.new_texts or {}
        expected = observed.proposal.head if observed.proposal else None
        self.platform.write_branch(context.branch, base=observed.base, files=files, message=message,
                                   expected=expected)
        labels = component.labels if component.labels is not None else self.config.defaults.labels
        self.platform.publish_proposal(context.branch, base=self.config.defaults.base_branch,
                                       title=title(facts), body=body(facts), labels=labels)
        result.messages.append(f"{'updated' if expected else 'opened'} {context.branch}: {title(facts)}")


    def _check_refs(self, context: _Context, image: ImageFound) -> tuple[str, ...]:
        if isinstance(context.store, LayoutStore):
            return (f"oci:{context.store.folder}:{image.tag}",)
        return (f"{context.component.image.repository}@{image.digest}",)


def _constraint_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            lines.append(line)
    return lines

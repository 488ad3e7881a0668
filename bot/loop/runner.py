"""The runner (docs/design.md §1): for each component of one repository, observe → plan →
execute until the plan is empty. Each action works from the observation its plan was made
from and the outcome of the action before it (loop/results.py `Outcome`), the only ways
one step tells another anything. A plan is run up to its end, a `Report`, or a `Wait`
(a wait foreseen after other actions, such as a build just dispatched, is checked
first); then the world is observed again, so a step that went otherwise than foreseen
is planned anew. Components are independent: one failing does not stop the others. A dry run
prints the first plan of each component and writes nothing, the state file included.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..adapters import logs
from ..adapters.buildcache import discard_build, note_provenance, seed_build
from ..adapters.imagestore import ImageStore, LayoutStore, layout_folder
from ..adapters.platform import Platform
from ..adapters.statefile import open_state
from ..adapters.upstream import UpstreamRepo
from ..core.config.load import LoadedConfig
from ..core.config.model import ActionsBuild, Component, Config
from ..core.decide.backoff import retry_said
from ..core.decide.plan import Asks, Facts, Report, Wait, WriteProposal, desired_state, live_failure, plan
from ..core.decide.revision import names_commit
from ..core.errors import (
    BuildFailed,
    ConfigError,
    InputError,
    TransientError,
    VerificationError,
    WheelpinError,
    kind_of,
)
from ..core.image.reference import ImageRef
from .builders.api import builder_for
from .builders.base import Builder, BuildSite
from .context import Context, Memory, Reads, Stores
from .observe import Observer
from .preview import preview
from .results import ComponentResult, Outcome, PassResult, Status

if TYPE_CHECKING:  # GitHub's modules load only when a repository is on GitHub
    from ..adapters.github.actions import ActionsClient
    from ..adapters.github.attestations import AttestationsReader
    from ..adapters.registrywire import Traffic
    from ..core.provenance.dsse import SigningKey
    from .execute import Executor
    from .prune import Pruner

log = logs.get_logger("wheelpin.reconcile")
MAX_STEPS = 8


class Reconciler:
    # Called after each action a pass runs, with how many this process ran: tests inject
    # a crash here (tests/fixtures/crash.py) to kill the process between two actions.
    after_action: ClassVar[Callable[[int], None] | None] = None

    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        platform: Platform,
        registries: Stores,
        cache: Path,
        retry_failed: bool = False,
        actions: ActionsClient | None = None,
        local_commands: bool = True,
        builder_for: Callable[[Component, UpstreamRepo], Builder] | None = None,
        settle: float | None = None,
        database_url: str | None = None,
        state_scope: str = "",
        state_formerly: Sequence[str] = (),
        attestations: Callable[[], AttestationsReader] | None = None,
        signing_key: SigningKey | None = None,
    ) -> None:
        self.loaded = loaded
        self.config: Config = loaded.config
        self.platform = platform
        self.registries = registries
        self.cache = cache
        self.actions = actions
        self.attestations = attestations  # GitHub's attestations API, for a component whose `trust` asks
        self.local_commands = local_commands  # never on GitHub: a config's command is the repository's code
        self.retry_failed = retry_failed
        self.builder_for = builder_for or self._builder  # tests give an in-memory one (tests/fixtures/fakes.py)
        # the SQLite file, or PostgreSQL; a repository's components apart from another's
        self.state = open_state(cache, database_url, scope=state_scope, formerly=state_formerly)
        # what a refused write is recorded against: the state's scope where one is given (a
        # repository on GitHub is scoped by its id, which a rename or a transfer keeps)
        self.where = state_scope or str(loaded.root)
        self.memory = Memory()
        self.reads = Reads(platform)
        self.observer = Observer(
            loaded,
            platform=platform,
            registries=registries,
            state=self.state,
            memory=self.memory,
            reads=self.reads,
            where=self.where,
        )
        self.settle = settle  # None: the publisher's own (tests give 0)
        self.signing_key = signing_key  # signs the provenance of the images published (None: unsigned)
        self._executor: Executor | None = None
        self._pruner: Pruner | None = None
        self.executed = 0
        self._stores: dict[str, ImageStore] = {}
        self._upstreams: dict[str, UpstreamRepo] = {}  # this pass's, one per upstream followed

    # -- wiring ---------------------------------------------------------------------------

    @property
    def executor(self) -> Executor:
        """What carries out a plan's actions, with its reader of consuming images: made at a
        pass's first action. Verifying, publishing and assembling a proposal are most of the
        loop's modules, and a pass that finds everything current needs none of them."""
        if self._executor is None:
            from .consumers import Consumers
            from .execute import Executor
            from .trustcheck import TrustCheck

            consumers = Consumers(self.registries, self.cache)
            trust = TrustCheck(self.attestations, self.cache) if self.attestations is not None else None
            self._executor = Executor(
                self.config,
                self.where,
                self.platform,
                self.state,
                self.memory,
                self.reads,
                consumers,
                local_commands=self.local_commands,
                trust=trust,
                signing_key=self.signing_key,
                **({} if self.settle is None else {"settle": self.settle}),
            )
        return self._executor

    def _store(self, component: Component) -> ImageStore:
        if component.image.repository not in self._stores:
            if component.image.is_layout:
                store: ImageStore = LayoutStore(layout_folder(component.image.repository, self.loaded.root))
            else:
                store = self.registries.store(ImageRef.parse(component.image.repository))
            self._stores[component.image.repository] = store
        return self._stores[component.image.repository]

    def _builder(self, component: Component, upstream: UpstreamRepo) -> Builder:
        return builder_for(
            component,
            BuildSite(
                self.cache,
                upstream,
                self.state,
                self.config.defaults.base_branch,
                local_commands=self.local_commands,
                actions=self.actions,
            ),
        )

    def _context(self, component: Component) -> Context:
        """The parts of one component for this pass; the components following the same
        upstream share its `UpstreamRepo` (its head is listed once a pass)."""
        key = component.upstream.model_dump_json()
        if key not in self._upstreams:
            self._upstreams[key] = UpstreamRepo(component.upstream, cache=self.cache, root=self.loaded.root)
        upstream = self._upstreams[key]
        return Context(
            component,
            upstream,
            self._store(component),
            self.builder_for(component, upstream),
            self.config.defaults.branch_prefix + component.name,
            tuple(self.config.components),
        )

    # -- a pass ---------------------------------------------------------------------------

    def run(
        self,
        *,
        dry_run: bool = False,
        only: str | Collection[str] | None = None,
        rebase: bool = False,
        recheck: bool = False,
    ) -> PassResult:
        """One pass over the components (or only those named). `rebase` rewrites the proposal on
        the current base even if someone else pushed to it; `recheck` retries the head's
        recorded failures and refusals, and verifies found images again."""
        chosen = {only} if isinstance(only, str) else None if only is None else set(only)
        names = {c.name for c in self.config.components if chosen is None or c.name in chosen}
        if recheck:
            self.memory.forget_verified(names)
        asks = Asks(retry=recheck or self.retry_failed, rebase=rebase)
        try:
            with self.state.unsaved() if dry_run else nullcontext():
                if recheck or self.retry_failed:
                    self.state.forget_refusals()
                return self._run([c for c in self.config.components if c.name in names], dry_run=dry_run, asks=asks)
        finally:
            self.state.release()  # PostgreSQL's connection back to the pool between passes

    def skip(self, component: Component, *, by: str) -> str:
        """`/wheelpin skip`: close the component's proposal unmerged, so that its commit is
        never proposed again (a newer upstream commit gets a new proposal)."""
        self.platform.begin_pass()
        branch = self.config.defaults.branch_prefix + component.name
        head = self.platform.resolve(f"refs/heads/{branch}")
        if head is None:
            return f"{component.name}: no proposal to skip"
        self.platform.close(
            branch,
            expected=head,
            reason=f"@{by} asked to skip this commit; wheelpin will propose the next upstream commit instead",
        )
        return f"{component.name}: skipped at the request of @{by}"

    def reuse(self, component: Component, *, commit: str, folder: Path) -> str:
        """Wheels built elsewhere (`reconcile --use-artifacts DIR --commit SHA`), taken as the
        build of `commit`, which must be the upstream head: the next pass verifies them as
        any build and publishes and proposes them. Its recorded failure is forgotten."""
        wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
        if not wheels:
            raise InputError(f"{folder}: no .whl file to use as the build of {commit[:8]}")
        context = self._context(component)
        head = context.upstream.head()
        if not names_commit(commit, head):
            raise InputError(
                f"{commit} is not the head of {component.upstream.repo} ({head[:12]}): wheelpin "
                "publishes and proposes the head only"
            )
        seed_build(
            self.cache,
            component.name,
            head,
            wheels,
            provenance=f"wheels a maintainer gave (`--use-artifacts {folder}`), not rebuilt",
        )
        self.state.forget(component.name, head)
        return f"{component.name}: {len(wheels)} wheel(s) from {folder} taken as the build of {head[:8]}"

    def reuse_run(self, component: Component, *, run_id: int) -> str:
        """`/wheelpin build --from-run N`: Actions run N's artifacts become the build of the
        upstream head, followed like a run wheelpin dispatched; the next pass fetches,
        verifies, publishes and proposes them. Its recorded failure is forgotten."""
        build = component.build
        if not isinstance(build, ActionsBuild):
            raise ConfigError(
                f"{component.name} builds with build.command, not on GitHub Actions; locally, "
                "`wheelpin reconcile --use-artifacts DIR --commit SHA` takes wheels built elsewhere"
            )
        if build.publishes_image:
            raise ConfigError(
                f"{component.name}'s workflow pushes its image itself (build.publishes_image = true), so wheelpin "
                f"publishes no run's artifacts: run {build.workflow} for the upstream head so it pushes "
                "the image under its tag, and wheelpin adopts it at its next pass (or set build.publishes_image = "
                "false to let wheelpin publish the workflow's artifacts)"
            )
        if self.actions is None:
            raise ConfigError(f"{component.name}: a run's artifacts are read on the GitHub platform only")
        run = self.actions.run(run_id)
        if run.done and run.conclusion != "success":
            raise InputError(f"run {run_id} ended: {run.conclusion}, so its artifacts are no build")
        if run.done and (expired := self.actions.expired(run_id)) is not None:
            raise expired  # nothing left to take: not followed, nothing recorded
        context = self._context(component)
        head = context.upstream.head()
        self._nothing_to_take(context, head)
        # a title that names a commit (a `run-name` carrying the inputs) must name the head:
        # the one check there is for a version that carries no commit (Mooncake's)
        named = set(re.findall(r"\b[0-9a-f]{40}\b", run.title))
        if named and head not in named:
            raise InputError(
                f"run {run_id} built {sorted(named)[0][:12]} (its title says), not the head "
                f"{head[:12]} of {component.upstream.repo}"
            )
        discard_build(self.cache, component.name, head)
        note_provenance(
            self.cache,
            component.name,
            head,
            f"run {run_id} of {build.workflow}, named by `/wheelpin build --from-run {run_id}`",
        )
        self.state.record_run(component.name, head, run_id)
        self.state.forget(component.name, head)
        return f"{component.name}: run {run_id} followed as the build of {head[:8]}"

    def _nothing_to_take(self, context: Context, head: str) -> None:
        """InputError when the head needs no build: the base pins it, or its image is
        published and its proposal already says so (a command that would change nothing)."""
        self._new_pass()
        facts = self.observer.observe(context, time.time()).facts
        if facts.base_has_head or facts.base_pins_image:
            raise InputError(f"nothing to take: the base already pins {head[:8]}, the upstream head")
        image, proposal = facts.image, facts.proposal
        if image is not None and proposal is not None and proposal.state == desired_state(facts):
            raise InputError(
                f"nothing to take: {head[:8]}, the upstream head, is already published as "
                f"{image.ref} and proposed on {proposal.branch}"
            )

    def _run(self, components: list[Component], *, dry_run: bool, asks: Asks) -> PassResult:
        self._new_pass()
        stores_before = {id(t): (t.requests, t.bytes_uploaded) for t in self._traffics()}
        http = getattr(self.platform, "http", None)
        github_before = (http.traffic.counted, http.traffic.free) if http is not None else (0, 0)
        writes_before = self.platform.writes
        results = [self.reconcile(component, dry_run=dry_run, asks=asks) for component in components]
        registry = uploaded = 0
        for traffic in self._traffics():
            asked, sent = stores_before.get(id(traffic), (0, 0))
            registry += traffic.requests - asked
            uploaded += traffic.bytes_uploaded - sent
        requests = {
            "git_ls_remote": sum(upstream.calls.ls_remote for upstream in self._upstreams.values()),
            "git_fetch": sum(upstream.calls.fetches for upstream in self._upstreams.values()),
            "registry": registry,
            "registry_bytes_uploaded": uploaded,
            "branch_writes": self.platform.writes - writes_before,
        }
        if http is not None:
            requests["github_counted"] = http.traffic.counted - github_before[0]
            requests["github_free"] = http.traffic.free - github_before[1]
        return PassResult(results, dry_run, requests)

    def _new_pass(self) -> None:
        """What a pass reads is read anew: the platform's, the upstreams', each file and image."""
        self.platform.begin_pass()
        self.memory.new_pass()
        self.reads.new_pass()
        self._upstreams = {}
        if self._executor is not None:
            self._executor.consumers.new_pass()

    def _traffics(self) -> list[Traffic]:
        """What this thread's requests cost, each counter once: every registry client the pass
        spoke through (a pinned or consuming image on another host too, a store of another
        repository of the same host not twice) and the components' image layout folders."""
        counters = [*self.registries.traffics(), *(s.traffic for s in self._stores.values())]
        return list({id(counter): counter for counter in counters}.values())

    def reconcile(self, component: Component, *, dry_run: bool, asks: Asks = Asks()) -> ComponentResult:
        with logs.bound(component=component.name):
            result = ComponentResult(component.name)
            started = time.time()
            try:
                self._reconcile(self._context(component), result, dry_run=dry_run, asks=asks)
            except WheelpinError as exc:
                result.fail(kind_of(exc), exc.message, exc.retry_after if isinstance(exc, TransientError) else None)
                if isinstance(exc, VerificationError):
                    result.problems = list(exc.problems)
                if isinstance(exc, (BuildFailed, VerificationError)) and result.head is not None:
                    failure = self.state.failure(component.name, result.head)
                    if failure is not None and failure.at >= started:  # recorded by this pass: it backs off
                        result.retry = retry_said(failure.retry_at, time.time())
            except Exception as exc:  # a bug must not stop the other components
                log.error("component.crashed", exc_info=True)
                result.fail("internal", f"internal error ({type(exc).__name__}: {exc})")
            return result

    def _reconcile(self, context: Context, result: ComponentResult, *, dry_run: bool, asks: Asks) -> None:
        bound = log.bind(component=context.name)
        for _step in range(MAX_STEPS):
            now = time.time()
            seen = self.observer.observe(context, now)
            facts = seen.facts
            result.seen(facts, live_failure(facts, now, asks))
            logs.bind(commit=facts.head)
            actions = plan(facts, now, asks)
            failure = live_failure(facts, now, asks)
            if actions and isinstance(actions[0], Report) and failure is not None and actions[0].why == failure.message:
                result.retry = retry_said(failure.retry_at, now)  # a recorded failure, backing off
            if dry_run:
                result.plan = preview(
                    context, seen, actions, now=now, asks=asks, reads=self.reads, stores=self.registries
                )
                result.error_kind = result.plan.error_kind
            if not actions:
                result.status = Status.DONE if result.actions else Status.NOTHING
                if not dry_run and self.pruner.due(context, now):
                    self._prune(context, facts, now, result)
                return
            if dry_run:
                result.actions += actions
                result.status = Status.PLANNED
                return
            done = Outcome(facts)
            for index, action in enumerate(actions):
                if index and isinstance(action, Wait):
                    break  # a wait foreseen after other actions is checked by observing again
                bound.info("action", kind=action.kind.value)
                result.actions.append(action)
                result.failed_at = action  # until it is done: whatever it raises, it was tried and not done
                try:
                    after = self.executor.execute(context, seen, done, action, result)
                except WheelpinError as exc:
                    # info: the pass's result says it (the terminal, --json, the dashboard), once
                    bound.info("action.failed", kind=action.kind.value, error=exc.message, error_kind=kind_of(exc))
                    raise
                result.failed_at = None
                self.executed += 1
                if Reconciler.after_action is not None:
                    Reconciler.after_action(self.executed)
                if after is None:
                    return
                done = after
                if isinstance(action, WriteProposal):  # written from the base once: a rebase is done
                    asks = Asks(retry=asks.retry, rebase=False)
            asks = Asks(retry=False, rebase=asks.rebase)  # a retry asked starts one build, then it is followed
        result.fail(None, f"no steady state after {MAX_STEPS} steps")

    @property
    def pruner(self) -> Pruner:
        """Made at a pass's first pruning: a dry run never prunes, nor loads its modules."""
        if self._pruner is None:
            from .prune import Pruner

            self._pruner = Pruner(self.config, self.platform, self.state, self.memory, self.reads)
        return self._pruner

    def _prune(self, context: Context, facts: Facts, now: float, result: ComponentResult) -> None:
        """Superseded images deleted (loop/prune.py); a failure here is said, and leaves the
        component's state as it is: the images it would delete wait for the next time."""
        try:
            pruned = self.pruner.prune(context, facts, now)
        except WheelpinError as exc:
            log.info("image.prune_failed", error=exc.message, error_kind=kind_of(exc))
            result.notes.append(f"image cleanup failed: {exc.message}")
            return
        result.pruned = pruned.tags
        result.notes += pruned.notes
        if pruned.tags:
            result.messages.append(
                f"deleted {len(pruned.tags)} superseded image tag(s) no branch pins: " + ", ".join(pruned.tags)
            )

"""The `Builder` seam (docs/design.md §1.2): where the wheels of an upstream commit are
made. The loop asks a builder where a build stands (`status`), starts one (`start`),
brings its wheels into the build cache (`collect`), lets them go once an image holds
them (`release`), and forgets a failed one once it is recorded (`forget`); it never
knows how. Two builders:

- `CommandBuilder`: `build.command` run here, in a checkout of the commit (never for a
  repository on GitHub: it would run the repository's code on the bot's host).
- `WorkflowBuilder`: `workflow_dispatch` of the downstream's wheel workflow on GitHub
  Actions, followed across passes through the run id noted in the state file, its
  artifacts fetched when it succeeds.

A build that failed raises `BuildFailed`; the loop records it, and the backoff of
`core/backoff.py` decides when that commit is built again.
"""

from __future__ import annotations

import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..adapters.smoke import SmokeResult
from ..adapters.builders import (COMPLETE, build_folder, build_provenance, built_wheels, discard_build,
                                 local_build, run_local_build)
from ..adapters.statefile import StateFile
from ..adapters.upstream import UpstreamRepo
from ..core.config import Component
from ..core.errors import BuildFailed, TransientError, WheelpinError
from ..core.plan import BuildSeen, BuildState
from ..core.templates import commit_values, render

if TYPE_CHECKING:  # GitHub's modules load only when a build runs on Actions
    from ..adapters.github.actions import ActionsBuilder

DISPATCH_GRACE = 600.0  # seconds a noted dispatch is waited for before it counts as lost


@dataclass(frozen=True)
class BuildPreview:
    """What starting the build of a commit would do, said before anything runs (a dry run's
    plan, docs/dry-run.md): the command and the folder it runs in, or the workflow and its
    inputs; and why `start` would refuse, when it would."""

    runs: str  # the command with its placeholders filled, or the workflow
    where: str  # the clean checkout it runs in, or where the workflow runs
    inputs: dict[str, str] = field(default_factory=dict)  # a workflow's inputs, filled
    refusal: str | None = None


class Builder(Protocol):
    asynchronous: bool  # a build outlives the pass: it is waited for
    adopts: bool  # the build pushes the image itself

    def status(self, commit: str) -> BuildSeen: ...

    def start(self, commit: str) -> str: ...

    def preview(self, commit: str) -> BuildPreview:
        """What `start(commit)` would run, and where, without running it."""

    def collect(self, commit: str) -> list[Path]: ...

    def release(self, commit: str) -> None: ...

    def forget(self, commit: str) -> None: ...

    def reused(self, commit: str) -> str | None:
        """Where the wheels of `commit` came from when a maintainer gave them instead of a
        build (`reconcile --use-artifacts`, `/wheelpin build --from-run`); None for a build."""

    def discard(self, commit: str) -> None:
        """Forget the wheels given as the build of `commit` (refused): the next pass builds it."""

    def describe(self, commit: str) -> str | None:
        """Who made the build of `commit`, for the proposal (None: nothing is known)."""

    def smoke_seen(self, commit: str) -> SmokeResult | None:
        """The smoke test the build itself ran (a workflow's smoke job); None: wheelpin runs it."""


class _Cached:
    """Wheels a build left in the build cache, marked complete only when all are there."""

    def __init__(self, component: Component, cache: Path) -> None:
        self.component = component
        self.cache = cache

    def wheels(self, commit: str) -> list[Path] | None:
        return built_wheels(self.cache, self.component.name, commit)

    def release(self, commit: str) -> None:
        """The image holds the wheels now: the build folder would only fill the cache."""
        shutil.rmtree(build_folder(self.cache, self.component.name, commit), ignore_errors=True)

    def forget(self, commit: str) -> None:
        """The build of `commit` failed and was recorded: the next try starts anew."""

    def reused(self, commit: str) -> str | None:
        """Where wheels a maintainer pointed wheelpin at came from (`reconcile --use-artifacts`,
        `/wheelpin build --from-run`)."""
        return build_provenance(self.cache, self.component.name, commit)

    def discard(self, commit: str) -> None:
        discard_build(self.cache, self.component.name, commit)


class CommandBuilder(_Cached):
    asynchronous = False
    adopts = False

    def __init__(self, component: Component, *, cache: Path, upstream: UpstreamRepo, allowed: bool) -> None:
        super().__init__(component, cache)
        self.upstream = upstream
        self.allowed = allowed

    def status(self, commit: str) -> BuildSeen:
        return BuildSeen(BuildState.READY if self.wheels(commit) is not None else BuildState.NONE)

    def _refusal(self) -> str | None:
        name = self.component.name
        if not self.allowed:
            return (f"{name}: build.command is not run for a repository on GitHub "
                    "(it would run the repository's code on the bot's host); use build.workflow")
        if self.component.build.command is None:
            return f"{name}: the local platform runs build.command; this component builds on GitHub Actions"
        return None

    def preview(self, commit: str) -> BuildPreview:
        refusal = self._refusal()
        if self.component.build.command is None:
            return BuildPreview(runs=f"workflow {self.component.build.workflow}", where="GitHub Actions",
                                refusal=refusal)
        planned = local_build(self.component, commit, self.cache)
        return BuildPreview(runs=planned.said, where=f"a clean checkout of {commit[:8]} at {planned.checkout}",
                            refusal=refusal)

    def start(self, commit: str) -> str:
        refusal = self._refusal()
        if refusal is not None:
            raise WheelpinError(refusal)
        built = run_local_build(self.component, commit, upstream=self.upstream, cache=self.cache)
        if not built.ok:
            raise BuildFailed(f"{built.message} (log: {built.log})", recorded=built.message)
        return built.message

    def collect(self, commit: str) -> list[Path]:
        return self.wheels(commit) or []

    def smoke_seen(self, commit: str) -> SmokeResult | None:
        return None  # `wheel.smoke` is run here, by wheelpin

    def describe(self, commit: str) -> str | None:
        return self.reused(commit) or f"`build.command` in a clean checkout of `{commit[:8]}` on {socket.gethostname()}"


class WorkflowBuilder(_Cached):
    asynchronous = True

    def __init__(self, component: Component, *, cache: Path, actions: ActionsBuilder | None, state: StateFile,
                 base_branch: str) -> None:
        super().__init__(component, cache)
        self.actions = actions
        self.state = state
        self.base_branch = base_branch
        self.adopts = component.build.publishes_image

    def describe(self, commit: str) -> str | None:
        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None or self.actions is None:
            return self.reused(commit)
        named = f", named by `/wheelpin build --from-run {run_id}`" if self.reused(commit) else ""
        try:
            return f"run {self.actions.run(run_id).url} of {self.component.build.workflow}{named}"
        except WheelpinError:
            return f"run {run_id} of {self.component.build.workflow}{named}"

    def smoke_seen(self, commit: str) -> SmokeResult | None:
        """The run's jobs named like `smoke`: passed when all succeeded. A run with none, or
        a build that was no run, is said, never passed in silence."""
        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None or self.actions is None:
            return SmokeResult(by_workflow=True, not_run=["smoke test: the build was no run of the workflow, "
                                                          "so no smoke job was seen"])
        smoke = [(name, conclusion) for name, conclusion in self.actions.jobs(run_id) if "smoke" in name.lower()]
        if not smoke:
            return SmokeResult(by_workflow=True, not_run=[f"smoke test: run {run_id} has no job named like smoke, "
                                                          "so the wheels were not smoke-tested"])
        return SmokeResult(passed=[name for name, conclusion in smoke if conclusion == "success"],
                           failed=[f"job {name!r} of run {run_id}: {conclusion or 'not finished'}"
                                   for name, conclusion in smoke if conclusion != "success"], by_workflow=True)

    def forget(self, commit: str) -> None:
        """The run followed for `commit` ended badly: the next try dispatches a new one."""
        self.state.drop_run(self.component.name, commit)

    def discard(self, commit: str) -> None:
        """A run a maintainer named was refused: neither it nor its wheels are followed again."""
        super().discard(commit)
        self.state.drop_run(self.component.name, commit)

    def _actions(self) -> ActionsBuilder:
        if self.actions is None:
            raise WheelpinError(self._no_actions())
        return self.actions

    def _no_actions(self) -> str:
        return f"{self.component.name}: builds on GitHub Actions need the GitHub platform"

    def _inputs(self, commit: str) -> dict[str, str]:
        values = commit_values(commit, self.component.name)
        return {key: render(value, values) for key, value in self.component.build.inputs.items()}

    def preview(self, commit: str) -> BuildPreview:
        ref = self.component.build.ref or self.base_branch
        return BuildPreview(runs=f"workflow {self.component.build.workflow}", where=f"GitHub Actions, from {ref}",
                            inputs=self._inputs(commit), refusal=None if self.actions is not None else self._no_actions())

    def status(self, commit: str) -> BuildSeen:
        seen = BuildSeen(asynchronous=True, adopts=self.adopts)
        if self.wheels(commit) is not None:
            return BuildSeen(BuildState.READY, asynchronous=True, adopts=self.adopts)
        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None:
            return seen
        run = self._actions().run(run_id)
        if not run.done:
            state, detail = BuildState.RUNNING, f"build run {run.url} is {run.status}"
        elif run.conclusion == "success":
            state, detail = BuildState.SUCCEEDED, f"build run {run.url} succeeded"
        else:
            state, detail = BuildState.FAILED, f"build run {run.url} of {commit[:8]} ended: {run.conclusion}"
        return BuildSeen(state, detail, asynchronous=True, adopts=self.adopts, followed=True)

    def start(self, commit: str) -> str:
        """Dispatch the build of `commit` once. A dispatch is noted before it is sent; a
        pass killed after sending it finds that run (by the commit in its title, or as the
        bot's oldest unclaimed run since the note) and follows it instead."""
        actions, name = self._actions(), self.component.name
        workflow = self.component.build.workflow
        assert workflow is not None
        pending = self.state.dispatch_of(name, commit)
        claimed = self.state.claimed_runs()
        existing = actions.find_run(workflow, commit, since=pending, claimed=claimed)
        if existing is not None and existing.done and existing.conclusion != "success":
            existing = None  # a failed run is retried with a new one, not followed again
        if existing is None and pending is not None and time.time() - pending < DISPATCH_GRACE:
            raise TransientError(f"{name}: the run dispatched for {commit[:8]} is not listed yet; "
                                 "waiting for it rather than dispatching again", retry_after=15.0)
        if existing is not None:
            run_id: int | None = existing.id
        else:
            inputs = self._inputs(commit)
            since = self.state.record_dispatch(name, commit)
            try:
                run_id = actions.dispatch(workflow, commit=commit, inputs=inputs, since=since, claimed=claimed,
                                          ref=self.component.build.ref or self.base_branch)
            except TransientError:
                raise  # it may have landed: the note makes the next pass look for its run first
            except WheelpinError:
                self.state.drop_dispatch(name, commit)  # refused: no run was made, none is waited for
                raise
        if run_id is None:
            raise TransientError(f"{name}: the dispatched run of {commit[:8]} is not listed yet", retry_after=15.0)
        self.state.record_run(name, commit, run_id)
        return f"dispatched {workflow} for {commit[:8]} (run {run_id})"

    def collect(self, commit: str) -> list[Path]:
        """The run's wheels, fetched from its artifacts into the build cache once."""
        wheels = self.wheels(commit)
        if wheels is not None:
            return wheels
        actions, name = self._actions(), self.component.name
        run_id = self.state.run_of(name, commit)
        assert run_id is not None
        out = build_folder(self.cache, name, commit) / "out"
        shutil.rmtree(out, ignore_errors=True)
        fetched = actions.download(run_id, out, ended_at=actions.run(run_id).ended_at)
        if not fetched:
            raise BuildFailed(f"build run {run_id} of {commit[:8]} left no wheel in its artifacts",
                              recorded=f"build run {run_id} left no wheel in its artifacts")
        (out / COMPLETE).write_text(commit + "\n")
        return fetched

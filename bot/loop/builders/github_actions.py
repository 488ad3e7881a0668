"""The `github-actions` build kind (`build = { workflow = "…" }`): `workflow_dispatch` of
the downstream's wheel workflow on GitHub Actions through the Actions API client
(adapters/github/actions.py), followed across passes through the run id noted in the
state file, its artifacts fetched when it succeeds. A workflow with `publishes_image`
pushes the image itself: wheelpin adopts it, verified."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...adapters.buildcache import COMPLETE, build_folder
from ...adapters.statefile import StateFile
from ...core.config.model import ActionsBuild, Component
from ...core.config.templates import commit_values, render
from ...core.decide.plan import BuildSeen, BuildState
from ...core.errors import BuildFailed, TransientError, WheelpinError
from .base import Builder, BuildPreview, BuildSite, CachedBuilds

if TYPE_CHECKING:  # GitHub's modules load only when a build runs on Actions
    from ...adapters.github.actions import ActionsClient, ArtifactsExpired, RunSeen
    from ...adapters.smoke import SmokeResult

DISPATCH_GRACE = 600.0  # seconds a noted dispatch is waited for before it counts as lost
WHERE = "on GitHub Actions"  # where its builds run, as the plan says it


class WorkflowBuilder(CachedBuilds):
    asynchronous = True

    def __init__(
        self,
        component: Component,
        build: ActionsBuild,
        *,
        cache: Path,
        actions: ActionsClient | None,
        state: StateFile,
        base_branch: str,
    ) -> None:
        super().__init__(component, cache)
        self.build = build
        self.actions = actions
        self.state = state
        self.base_branch = base_branch
        self.adopts = build.publishes_image
        self._described: dict[int, RunSeen] = {}  # runs read for what is said of a build: once a pass
        self._lapsed: dict[str, str] = {}  # commit → why its finished run is no longer followed
        self._listed: dict[int, list[Any]] = {}  # a run's artifacts, listed by `status`, taken by `collect`

    def describe(self, commit: str) -> str | None:
        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None or self.actions is None:
            return self.reused(commit)
        named = f", named by `/wheelpin build --from-run {run_id}`" if self.reused(commit) else ""
        try:
            return f"run {self._run(run_id).url} of {self.build.workflow}{named}"
        except WheelpinError:
            return f"run {run_id} of {self.build.workflow}{named}"

    def invocation(self, commit: str) -> str | None:
        """The attempt of the run that built `commit` (a re-run is another attempt of one run)."""
        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None or self.actions is None:
            return None
        try:
            return self._run(run_id).invocation
        except WheelpinError:
            return None

    def _run(self, run_id: int) -> RunSeen:
        """Run `run_id` as GitHub says it, read once for the proposal and the statement both."""
        if run_id not in self._described:
            self._described[run_id] = self._actions().run(run_id)
        return self._described[run_id]

    def smoke_seen(self, commit: str) -> SmokeResult | None:
        """The run's jobs named like `smoke`: passed when all succeeded. A run with none, or
        a build that was no run, is said, never passed in silence."""
        from ...adapters.smoke import SmokeResult  # what a build's smoke test said: read once it is judged

        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None or self.actions is None:
            return SmokeResult(
                by_workflow=True, not_run=["smoke test: the build was no run of the workflow, so no smoke job was seen"]
            )
        smoke = [(name, conclusion) for name, conclusion in self.actions.jobs(run_id) if "smoke" in name.lower()]
        if not smoke:
            return SmokeResult(
                by_workflow=True,
                not_run=[f"smoke test: run {run_id} has no job named like smoke, so the wheels were not smoke-tested"],
            )
        return SmokeResult(
            passed=[name for name, conclusion in smoke if conclusion == "success"],
            failed=[
                f"job {name!r} of run {run_id}: {conclusion or 'not finished'}"
                for name, conclusion in smoke
                if conclusion != "success"
            ],
            by_workflow=True,
        )

    def forget(self, commit: str) -> None:
        """The run followed for `commit` ended badly: the next try dispatches a new one."""
        self.state.drop_run(self.component.name, commit)

    def discard(self, commit: str) -> None:
        """A run a maintainer named was refused: neither it nor its wheels are followed again."""
        super().discard(commit)
        self.state.drop_run(self.component.name, commit)

    def _actions(self) -> ActionsClient:
        if self.actions is None:
            raise WheelpinError(self._no_actions())
        return self.actions

    def _no_actions(self) -> str:
        return f"{self.component.name}: builds on GitHub Actions need the GitHub platform"

    def _inputs(self, commit: str) -> dict[str, str]:
        values = commit_values(commit, self.component.name)
        return {key: render(value, values) for key, value in self.build.inputs.items()}

    def preview(self, commit: str) -> BuildPreview:
        ref = self.build.ref or self.base_branch
        return BuildPreview(
            runs=f"workflow {self.build.workflow}",
            where=f"GitHub Actions, from {ref}",
            inputs=self._inputs(commit),
            refusal=None if self.actions is not None else self._no_actions(),
        )

    def status(self, commit: str) -> BuildSeen:
        seen = BuildSeen(asynchronous=True, adopts=self.adopts, where=WHERE)
        if self.wheels(commit) is not None:
            return BuildSeen(BuildState.READY, asynchronous=True, adopts=self.adopts, where=WHERE)
        run_id = self.state.run_of(self.component.name, commit)
        if run_id is None:
            return seen
        actions = self._actions()
        run = actions.run(run_id)
        if not run.done:
            state, detail = BuildState.RUNNING, f"build run {run.url} is {run.status}"
        elif run.conclusion == "success" and not self.adopts and (gone := self._expired(run_id)):
            # its wheels may be gone with them: not followed, so the plan and the pass both
            # start a new build (`start` does not follow such a run either), rather than
            # planning a fetch that fails
            self._lapsed[commit] = gone.message
            return seen
        elif run.conclusion == "success":
            state, detail = BuildState.SUCCEEDED, f"build run {run.url} succeeded"
        else:
            state, detail = BuildState.FAILED, f"build run {run.url} of {commit[:8]} ended: {run.conclusion}"
        return BuildSeen(state, detail, asynchronous=True, adopts=self.adopts, followed=True, where=WHERE)

    def _expired(self, run_id: int) -> ArtifactsExpired | None:
        """Why the finished run's artifacts (any of them) can no longer be taken, or None;
        listed once a pass, and the fetch that follows takes that listing."""
        actions = self._actions()
        self._listed[run_id] = actions.artifacts(run_id)
        return actions.expired(run_id, every=False, listed=self._listed[run_id])

    def start(self, commit: str) -> str:
        """Dispatch the build of `commit` once. A dispatch is noted before it is sent; a
        pass killed after sending it finds that run (by the commit in its title, or as the
        bot's oldest unclaimed run since the note) and follows it instead."""
        actions, name = self._actions(), self.component.name
        workflow = self.build.workflow
        if commit in self._lapsed:  # nor what named that run (`/wheelpin build --from-run`)
            self.discard(commit)
        pending = self.state.dispatch_of(name, commit)
        claimed = self.state.claimed_runs()
        existing = actions.find_run(workflow, commit, since=pending, claimed=claimed)
        if existing is not None and existing.done and existing.conclusion != "success":
            existing = None  # a failed run is retried with a new one, not followed again
        elif existing is not None and existing.done and actions.expired(existing.id, every=False) is not None:
            existing = None  # nor is one whose artifacts (some of them) expired: its wheels may be gone
        if existing is None and pending is not None and time.time() - pending < DISPATCH_GRACE:
            raise TransientError(
                f"{name}: the run dispatched for {commit[:8]} is not listed yet; "
                "waiting for it rather than dispatching again",
                retry_after=15.0,
            )
        if existing is not None:
            run_id: int | None = existing.id
        else:
            inputs = self._inputs(commit)
            since = self.state.record_dispatch(name, commit)
            try:
                run_id = actions.dispatch(
                    workflow,
                    commit=commit,
                    inputs=inputs,
                    since=since,
                    claimed=claimed,
                    ref=self.build.ref or self.base_branch,
                )
            except TransientError:
                raise  # it may have landed: the note makes the next pass look for its run first
            except WheelpinError:
                self.state.drop_dispatch(name, commit)  # refused: no run was made, none is waited for
                raise
        if run_id is None:
            raise TransientError(f"{name}: the dispatched run of {commit[:8]} is not listed yet", retry_after=15.0)
        self.state.record_run(name, commit, run_id)
        lapsed = self._lapsed.pop(commit, None)
        return f"{lapsed + '; ' if lapsed else ''}dispatched {workflow} for {commit[:8]} (run {run_id})"

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
        from ...adapters.github.actions import ArtifactsExpired  # loaded already: `actions` is its client

        try:
            listed = self._listed.pop(run_id, None)
            fetched = actions.download(run_id, out, ended_at=actions.run(run_id).ended_at, listed=listed)
        except ArtifactsExpired as exc:
            # no build failed: its wheels are gone, so the next pass builds the commit anew, with no backoff
            self.discard(commit)
            raise ArtifactsExpired(f"{exc.message}; {commit[:8]} is built again at the next pass") from None
        if not fetched:
            raise BuildFailed(
                f"build run {run_id} of {commit[:8]} left no wheel in its artifacts",
                recorded=f"build run {run_id} left no wheel in its artifacts",
            )
        (out / COMPLETE).write_text(commit + "\n")
        return fetched


def make(component: Component, site: BuildSite) -> Builder:
    assert isinstance(component.build, ActionsBuild)
    return WorkflowBuilder(
        component,
        component.build,
        cache=site.cache,
        actions=site.actions,
        state=site.state,
        base_branch=site.base_branch,
    )

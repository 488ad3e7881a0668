"""The `Builder` seam (docs/design.md §1.2): the one interface every build kind meets.

The loop asks a builder where the build of a commit stands (`status`), starts one
(`start`), says beforehand what starting it would run (`preview`, a dry run's plan),
brings its wheels into the build cache (`collect`), lets them go once an image holds them
(`release`), and forgets a failed one once it is recorded (`forget`); it never knows how.
A build that failed raises `BuildFailed`; the loop records it, and the backoff of
`core/decide/backoff.py` decides when that commit is built again.

`BuildSite` is what a kind's factory (`api.py`) is given besides the component;
`CachedBuilds` is the part every kind shares: the wheels it leaves in the build cache
(adapters/buildcache.py).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...adapters.buildcache import build_folder, build_provenance, built_wheels, discard_build
from ...adapters.statefile import StateFile
from ...adapters.upstream import UpstreamRepo
from ...core.config.model import Component
from ...core.decide.plan import BuildSeen

if TYPE_CHECKING:  # GitHub's modules load only when a build runs on Actions
    from ...adapters.github.actions import ActionsClient
    from ...adapters.smoke import SmokeResult


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

    def status(self, commit: str) -> BuildSeen:
        """Where the build of `commit` stands, and where a build of this kind runs (`where`,
        said by the plan: "on GitHub Actions")."""

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

    def invocation(self, commit: str) -> str | None:
        """The CI run attempt that made the build of `commit`, as the provenance statement's
        `runDetails.metadata.invocationId` names it; None for a build that was no such run."""

    def smoke_seen(self, commit: str) -> SmokeResult | None:
        """The smoke test the build itself ran (a workflow's smoke job); None: wheelpin runs it."""


@dataclass(frozen=True)
class BuildSite:
    """What a build kind's factory is given besides the component: where builds are kept
    and followed, and what of the platform a kind may need."""

    cache: Path  # the build cache (adapters/buildcache.py)
    upstream: UpstreamRepo  # the component's upstream, checked out for a local build
    state: StateFile  # where an asynchronous build is followed across passes
    base_branch: str  # the downstream's base branch (a workflow is dispatched on it by default)
    local_commands: bool = True  # a repository's command may run on this host (never on GitHub)
    actions: ActionsClient | None = None  # GitHub's Actions API, on the GitHub platform


class CachedBuilds:
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

    def invocation(self, commit: str) -> str | None:
        """A build in a clean checkout here, or wheels a maintainer gave: no CI run's attempt."""
        return None

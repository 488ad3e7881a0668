"""The `command` build kind (`build = { command = "…" }`): `build.command` run here, in a
clean checkout of the commit, sandboxed (adapters/localbuild.py), within the pass. Never
for a repository on GitHub: it would run the repository's code on the bot's host."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING

from ...adapters.upstream import UpstreamRepo
from ...core.config.model import CommandBuild, Component
from ...core.decide.plan import BuildSeen, BuildState
from ...core.errors import BuildFailed, WheelpinError
from .base import Builder, BuildPreview, BuildSite, CachedBuilds

if TYPE_CHECKING:  # the build itself (the sandbox, the smoke test) loads only where one is planned or run
    from ...adapters.smoke import SmokeResult


class CommandBuilder(CachedBuilds):
    asynchronous = False
    adopts = False

    def __init__(self, component: Component, *, cache: Path, upstream: UpstreamRepo, local_commands: bool) -> None:
        super().__init__(component, cache)
        self.upstream = upstream
        self.local_commands = local_commands

    def status(self, commit: str) -> BuildSeen:
        return BuildSeen(BuildState.READY if self.wheels(commit) is not None else BuildState.NONE)

    def _refusal(self) -> str | None:
        if not self.local_commands:
            return (
                f"{self.component.name}: build.command is not run for a repository on GitHub "
                "(it would run the repository's code on the bot's host); use build.workflow"
            )
        return None

    def preview(self, commit: str) -> BuildPreview:
        from ...adapters.localbuild import local_build

        planned = local_build(self.component, commit, self.cache)
        return BuildPreview(
            runs=planned.said, where=f"a clean checkout of {commit[:8]} at {planned.checkout}", refusal=self._refusal()
        )

    def start(self, commit: str) -> str:
        refusal = self._refusal()
        if refusal is not None:
            raise WheelpinError(refusal)
        from ...adapters.localbuild import run_local_build

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


def make(component: Component, site: BuildSite) -> Builder:
    assert isinstance(component.build, CommandBuild)
    return CommandBuilder(component, cache=site.cache, upstream=site.upstream, local_commands=site.local_commands)

"""`wheelpin reconcile`: one pass (or a loop of passes) over a repository's components."""

from __future__ import annotations

import time
from pathlib import Path

from ..adapters.localplatform import LocalPlatform
from ..app.githubrepo import GitHubAccess, github_reconciler
from ..app.reconciler import PassResult, Reconciler
from ..app.settings import Settings
from ..app.wiring import Registries
from ..core.config import interval_minutes
from ..core.errors import UsageError
from .output import emit_json, emit_text
from .repo import load


def pass_text(result: PassResult) -> str:
    lines = []
    for component in result.components:
        head = f" at {component.head[:8]}" if component.head else ""
        lines.append(f"{component.name}: {component.status}{head}")
        for action in component.actions:
            lines.append(f"  {'would ' if result.dry_run else ''}{action.kind} {action.detail}".rstrip()
                         + (f" (then {', '.join(action.then)})" if action.then else ""))
        lines += [f"  - {message}" for message in component.messages]
    return "\n".join(lines)


def make_reconciler(*, repo: Path, config: Path | None, settings: Settings, retry_failed: bool) -> Reconciler:
    loaded = load(config=config, repo=repo)
    defaults = loaded.config.defaults
    platform = LocalPlatform(repo, author=defaults.author, branch_prefix=defaults.branch_prefix,
                             signoff=defaults.signoff)
    return Reconciler(loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir,
                      retry_failed=retry_failed, crash_after=settings.crash_after_actions)


def reconcile_command(*, repo: Path | None, config: Path | None, platform: str, once: bool,
                      dry_run: bool, as_json: bool, retry_failed: bool, component: str | None,
                      settings: Settings, github_repo: str | None = None) -> int:
    if platform == "github":
        if github_repo is None:
            raise UsageError("--platform github needs --github-repo OWNER/NAME")
        reconciler = github_reconciler(access=GitHubAccess.from_settings(settings), repository=github_repo,
                                       settings=settings, retry_failed=retry_failed)
    else:
        folder = repo or Path.cwd()
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such repository folder")
        reconciler = make_reconciler(repo=folder, config=config, settings=settings, retry_failed=retry_failed)
    if component is not None and reconciler.config.get(component) is None:
        raise UsageError(f"{reconciler.loaded.path}: no component {component!r}")
    interval = interval_minutes(reconciler.config.defaults.schedule) or 30
    while True:
        result = reconciler.run(dry_run=dry_run, only=component)
        if as_json:
            emit_json(result.to_json(), compact=not (once or dry_run))
        else:
            emit_text(pass_text(result))
        if once or dry_run:
            return 1 if result.failed else 0
        time.sleep(interval * 60)

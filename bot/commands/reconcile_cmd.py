"""`wheelpin reconcile`: one pass (or a loop of passes) over a repository's components."""

from __future__ import annotations

import datetime
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from ..adapters.localplatform import LocalPlatform
from ..app.githubrepo import GitHubAccess, github_reconciler
from ..app.reconciler import PassResult, Reconciler
from ..app.settings import Settings
from ..app.wiring import Registries
from ..app.schedule import next_pass, schedules_of
from ..core.errors import UsageError, WheelpinError
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
        access = GitHubAccess.from_settings(settings)

        def make() -> Reconciler:
            return github_reconciler(access=access, repository=github_repo, settings=settings,
                                     retry_failed=retry_failed)
    else:
        folder = repo or Path.cwd()
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such repository folder")

        def make() -> Reconciler:
            return make_reconciler(repo=folder, config=config, settings=settings, retry_failed=retry_failed)
    reconciler = make()  # a config that cannot be used at the start is said now, and nothing runs
    if component is not None and reconciler.config.get(component) is None:
        raise UsageError(f"{reconciler.loaded.path}: no component {component!r}")

    def show(result: PassResult) -> None:
        if as_json:
            emit_json(result.to_json(), compact=not (once or dry_run))
        else:
            emit_text(pass_text(result))

    if once or dry_run:
        result = reconciler.run(dry_run=dry_run, only=component)
        show(result)
        return 1 if result.failed else 0
    return loop(reconciler, make, only=component, show=show)


def loop(first: Reconciler, make: Callable[[], Reconciler], *, only: str | None,
         show: Callable[[PassResult], None]) -> int:
    """Pass, then sleep until the soonest component schedule is due, and pass again with
    the config read anew (a config that became unusable is said, and the last good one
    kept). SIGHUP wakes it for a pass now; SIGTERM or SIGINT lets a running pass finish
    and then exits 0 (a second one stops at once; the next start repairs)."""
    stop, wake = threading.Event(), threading.Event()

    def on_stop(_number: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise SystemExit(130)
        stop.set()
        wake.set()

    def on_wake(_number: int, _frame: FrameType | None) -> None:
        wake.set()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_wake)
    reconciler = first
    while True:
        show(reconciler.run(dry_run=False, only=only))
        if stop.is_set():
            break
        now = datetime.datetime.now(datetime.UTC)
        due = next_pass(schedules_of(reconciler.config, only), now)
        say(f"next pass at {due:%Y-%m-%d %H:%M:%S} UTC (SIGHUP: now)")
        wake.wait(max(0.0, (due - now).total_seconds()))
        wake.clear()
        if stop.is_set():
            break
        try:
            reconciler = make()
        except WheelpinError as exc:
            say(f"{exc}; passing with the config read before")
    say("stopped")
    return 0


def say(line: str) -> None:
    sys.stderr.write(f"wheelpin: {line}\n")
    sys.stderr.flush()

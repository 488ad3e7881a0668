"""`wheelpin reconcile`: one pass (or a loop of passes) over a repository's components."""

from __future__ import annotations

import datetime
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from ..adapters import logs
from ..app.settings import Settings
from ..core.decide.plan import Report, Wait
from ..core.errors import UsageError, WheelpinError
from ..loop.results import PassResult
from ..loop.runner import Reconciler
from .output import emit_json, emit_text
from .plantext import plan_text
from .platforms.api import downstream_of
from .platforms.base import Where
from .summary import append_summary


def pass_text(result: PassResult) -> str:
    if result.dry_run:
        return plan_text(result)
    lines = []
    for component in result.components:
        head = f" at {component.head[:8]}" if component.head else ""
        lines.append(f"{component.name}: {component.status}{head}")
        for action in component.actions:
            if isinstance(action, (Report, Wait)):
                continue  # its why is the component's message, said below: once
            lines.append(f"  {component.action_said(action)}")
        lines += [f"  - {message}" for message in component.messages]
        lines += [f"  ! {note}" for note in component.notes]
        if component.retry:
            lines.append(f"  - {component.retry}")
    return "\n".join(lines)


def reconcile_command(
    *,
    repo: Path | None,
    config: Path | None,
    platform: str,
    once: bool,
    dry_run: bool,
    as_json: bool,
    retry_failed: bool,
    components: Sequence[str],
    settings: Settings,
    github_repo: str | None = None,
    use_artifacts: Path | None = None,
    commit: str | None = None,
    summary: Path | None = None,
) -> int:
    if (use_artifacts is None) != (commit is None):
        raise UsageError("--use-artifacts DIR and --commit SHA go together")
    downstream = downstream_of(
        platform, Where(settings, repo=repo, config=config, github_repo=github_repo, retry_failed=retry_failed)
    )
    make, config_text = downstream.reconciler, downstream.config_text
    reconciler = make()  # a config that cannot be used at the start is said now, and nothing runs
    unknown = reconciler.config.unknown_components(list(components))
    if unknown:
        raise UsageError(f"{reconciler.loaded.path}: {unknown}")
    only: list[str] | None = list(components) or None
    where = downstream.where

    def show(result: PassResult) -> None:
        if as_json:
            emit_json(result.to_json(), compact=not (once or dry_run))
        else:
            emit_text(pass_text(result))
        if summary is not None:
            append_summary(summary, result, where=where)

    if use_artifacts is not None and commit is not None:
        names = [c.name for c in reconciler.config.components]
        if len(components) > 1 or (not components and len(names) != 1):
            raise UsageError(f"--use-artifacts needs one --component (one of {', '.join(names)})")
        target = reconciler.config.get(components[0] if components else names[0])
        assert target is not None
        if dry_run:
            raise UsageError("--use-artifacts takes the wheels into the build cache: it has no --dry-run")
        logs.get_logger("wheelpin.reconcile").info(
            "reconcile.reuse", said=reconciler.reuse(target, commit=commit, folder=use_artifacts)
        )
        only, once = [target.name], True
    if once or dry_run:
        result = reconciler.run(dry_run=dry_run, only=only)
        show(result)
        return exit_code(result)
    return loop(reconciler, make, config_text, only=only, show=show)


def exit_code(result: PassResult) -> int:
    """One pass's exit code, as `wheelpin reconcile --help` lists them (PassResult.exit_code)."""
    return result.exit_code


class _Signals:
    """What the signal handlers saw. They only set these flags (no lock, no I/O: a handler
    runs between any two bytecodes of the main thread); the loop polls them."""

    def __init__(self) -> None:
        self.stop = False
        self.wake = False
        self._before = {
            signal.SIGTERM: signal.signal(signal.SIGTERM, self._on_stop),
            signal.SIGINT: signal.signal(signal.SIGINT, self._on_stop),
            signal.SIGHUP: signal.signal(signal.SIGHUP, self._on_wake),
        }

    def restore(self) -> None:
        for number, handler in self._before.items():
            signal.signal(number, handler)

    def _on_stop(self, _number: int, _frame: FrameType | None) -> None:
        if self.stop:
            raise SystemExit(130)  # asked twice: now (the next start repairs)
        self.stop = True

    def _on_wake(self, _number: int, _frame: FrameType | None) -> None:
        self.wake = True

    def sleep_until(self, due: datetime.datetime) -> None:
        while not (self.stop or self.wake):
            left = (due - datetime.datetime.now(datetime.UTC)).total_seconds()
            if left <= 0:
                break
            time.sleep(min(left, 0.2))
        self.wake = False


def loop(
    first: Reconciler,
    make: Callable[[], Reconciler],
    config_text: Callable[[], str],
    *,
    only: Sequence[str] | None,
    show: Callable[[PassResult], None],
) -> int:
    """Pass, then sleep until the soonest component schedule is due, and pass again. The
    config is read anew before each pass: a changed one makes a new reconciler, an
    unchanged one keeps it (its caches: images already verified are not fetched again),
    one that became unusable is said and the last good one kept. SIGHUP wakes it for a
    pass now; SIGTERM or SIGINT lets a running pass finish, starts no other, and exits 0
    (a second one stops at once; the next start repairs)."""
    signals = _Signals()
    try:
        return _passes(signals, first, make, config_text, only=only, show=show)
    finally:
        signals.restore()


def _passes(
    signals: _Signals,
    first: Reconciler,
    make: Callable[[], Reconciler],
    config_text: Callable[[], str],
    *,
    only: Sequence[str] | None,
    show: Callable[[PassResult], None],
) -> int:
    from ..app.schedule import next_pass, said, schedules_of  # cron: for the loop, not one pass

    reconciler = first
    known = _read(config_text)
    while not signals.stop:
        show(reconciler.run(dry_run=False, only=only))
        if signals.stop:
            break
        now = datetime.datetime.now(datetime.UTC)
        due = next_pass(schedules_of(reconciler.config, only), now, reconciler.config.defaults.timezone)
        say(f"next pass at {said(due, reconciler.config.defaults.timezone)} (SIGHUP: now)")
        signals.sleep_until(due)
        if signals.stop:
            break
        text = _read(config_text)
        if text is not None and text != known:
            try:
                reconciler, known = make(), text
            except WheelpinError as exc:
                say(f"{exc}; passing with the config read before")
            except Exception as exc:  # a config no check foresaw must not end the loop
                say(
                    f"the new config cannot be used (internal error: {type(exc).__name__}: {exc}); "
                    "passing with the config read before"
                )
    say("stopped")
    return 0


def _read(config_text: Callable[[], str]) -> str | None:
    try:
        return config_text()
    except (WheelpinError, OSError, ValueError) as exc:  # ValueError: not UTF-8
        say(f"{getattr(exc, 'message', exc)}; passing with the config read before")
        return None


def say(line: str) -> None:
    sys.stderr.write(f"wheelpin: {line}\n")
    sys.stderr.flush()

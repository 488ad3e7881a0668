"""The dashboard of a watched repository (docs/design.md §3 "Dashboard"): one row per
component from its last pass, written to the one dashboard issue only when its text
changed. A dashboard GitHub refuses for good (issues turned off, an archived repository,
no `issues: write`) is said once per refresh of the watch list (hourly: a change since is
found) and left alone meanwhile, never retried in a loop."""

from __future__ import annotations

import time
from dataclasses import replace

from ..adapters import logs
from ..core.errors import PermissionRefused, RuleRefused
from ..loop.results import ComponentResult, Status
from .conversation import Conversation, IssuesDisabled, Row
from .watchlist import Watched

log = logs.get_logger("wheelpin.serve")


def record(watched: Watched, result: ComponentResult) -> None:
    """The component's row after a pass; the last error is kept until the next one, or
    until a pass succeeds (a wait or a branch left alone says nothing of it)."""
    if watched.shared is not None and result.name not in watched.rows:  # another replica's last pass
        watched.rows.update(watched.shared.rows(watched.repository, [result.name]))
    previous = watched.rows.get(result.name, Row(result.name))
    failed = result.status == Status.FAILED
    succeeded = result.status in (Status.DONE, Status.NOTHING)  # the last error is over
    message = result.messages[-1] if result.messages else None
    row = watched.rows[result.name] = Row(
        result.name,
        pinned=result.pinned,
        head=result.head,
        build=result.build,
        image=result.image,
        proposal=result.proposal,
        status=_status(result, message),
        last_error=message if failed else None if succeeded else previous.last_error,
        last_error_at=time.time() if failed else None if succeeded else previous.last_error_at,
        notes=tuple(result.notes) or (previous.notes if previous.head == result.head else ()),
    )
    if watched.shared is not None:  # every replica's passes on the one dashboard
        watched.shared.save_row(watched.repository, row)


def _status(result: ComponentResult, message: str | None) -> str:
    """The row's status: a failed pass names the action it failed at (tried, not done: a
    publish that failed may have pushed its tag), whose error is the row's last error."""
    if result.status == Status.FAILED:
        return f"failed at {result.failed_at.kind.value}" if result.failed_at is not None else "failed"
    return result.status.value + (f": {message}" if message else "")


def update(watched: Watched, conversation: Conversation) -> bool:
    """Bring the dashboard issue up to date; True when done (or nothing to do)."""
    if (watched.reconciler is None and watched.config_error is None) or watched.dashboard_off:
        return True
    links = conversation.open_proposals()
    if watched.shared is not None:  # the rows of every replica's passes
        names = [c.name for c in watched.reconciler.config.components] if watched.reconciler else []
        watched.rows = watched.shared.rows(watched.repository, names, only=watched.reconciler is not None)
    rows = [
        replace(row, proposal=links.get(row.proposal, row.proposal) if row.proposal else None)
        for row in watched.rows.values()
    ]
    body = conversation.dashboard_text(rows, repository=watched.repository, config_error=watched.config_error)
    if body == watched.dashboard_body:
        return True
    try:
        number = conversation.keep_dashboard(body, known=watched.dashboard_number)
    except (IssuesDisabled, RuleRefused, PermissionRefused) as exc:
        # issues off, an archived repository, no `issues: write`: said once, not retried in a
        # loop; the hourly refresh of the watch list tries again
        watched.dashboard_off = True
        log.warning("dashboard.off", error=exc.message)
        return True
    watched.dashboard_body, watched.dashboard_number = body, number
    log.info("dashboard.updated", issue=number)
    return True

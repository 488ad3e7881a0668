"""GitHub's dependency dashboard issue of a repository: one Markdown table, one row per
component (the service's rows, app/conversation.py), cut to GitHub's body cap. Pure: the
service keeps the rows, GitHubConversation keeps the one issue (found by its label and
the marker below), sansio.py knows a command given there by the marker."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from ...app.conversation import Row
from ...core.proposal.text import MAX_BODY

MARKER = "<!-- wheelpin: dashboard -->"
TITLE = "wheelpin dependency dashboard"
LABEL = "wheelpin-dashboard"
MAX_CELL = 300


def _cell(text: str | None) -> str:
    if not text:
        return "—"
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= MAX_CELL else flat[: MAX_CELL - 1] + "…"


def _commit(sha: str | None) -> str:
    return f"`{sha[:8]}`" if sha else "—"


def _when(at: float | None) -> str:
    if at is None:
        return ""
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime(" (%Y-%m-%d %H:%M UTC)")


def render(rows: Sequence[Row], *, repository: str, config_error: str | None = None, limit: int = MAX_BODY) -> str:
    """The issue's body. It changes only when a row does, so an unchanged dashboard costs no
    write. Rows that would take it past `limit` characters are left out, and it says so."""
    head = [MARKER, "", f"What wheelpin watches in `{repository}`, as of its last pass of each component.", ""]
    if config_error:
        head += [f"> **The config cannot be used:** {_cell(config_error)}", ""]
    table = [
        "| component | pinned | upstream head | build | image | proposal | status | last error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines = [_row(row) for row in sorted(rows, key=lambda r: r.component)]
    foot = [
        "",
        "Comment `/wheelpin rebase`, `/wheelpin recheck` or `/wheelpin skip` on a wheelpin pull request "
        "to act on it (write access needed). This issue is kept by wheelpin; edits are overwritten.",
    ]
    room = limit - len("\n".join(head + table + foot)) - 200  # 200: the note on what was left out
    shown = 0
    while shown < len(lines) and room - len(lines[shown]) - 1 >= 0:
        room -= len(lines[shown]) + 1
        shown += 1
    body = head + (table + lines[:shown] if lines else ["No component is configured."])
    if shown < len(lines):
        body += [
            "",
            f"({len(lines) - shown} more component(s) left out: GitHub caps an issue body at {MAX_BODY} characters.)",
        ]
    return ("\n".join(body + foot) + "\n")[:limit]


def _row(row: Row) -> str:
    image = f"`{_cell(row.image)}`" if row.image else "—"
    error = _cell(row.last_error) + _when(row.last_error_at) if row.last_error else "—"
    status = _cell(row.status) + "".join(f" ⚠️ **{_cell(note)}**" for note in row.notes)
    return (
        f"| {_cell(row.component)} | {_commit(row.pinned)} | {_commit(row.head)} | {_cell(row.build)} | "
        f"{image} | {_cell(row.proposal)} | {status} | {error} |"
    )

"""The state file: an earlier wheelpin's file still opens, and counts its failures per
rules (what both engines keep is tested in test_state_engines.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.adapters.statefile import StateFile


def test_a_state_file_without_rules_or_reasons_opens_and_counts_per_rules(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "create table failures (component text, commit_sha text, kind text, message text,"
        " attempts integer, at real, primary key (component, commit_sha))"
    )
    db.execute("insert into failures values ('c', 'x', 'build', 'old', 3, 0)")
    db.commit()
    db.close()
    state = StateFile(path)
    old = state.failure("c", "x")
    assert old is not None and old.judged_under == "" and old.attempts == 3 and old.reason == ""
    assert state.record("c", "x", "build", "new", judged_under="r1").attempts == 1  # under another: afresh
    assert state.record("c", "x", "build", "again", judged_under="r1").attempts == 2

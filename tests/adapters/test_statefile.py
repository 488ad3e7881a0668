"""The state file: an earlier wheelpin's file still opens, failures count per rules, and
refused writes back off from an hour to a day."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.adapters.statefile import StateFile
from bot.core.backoff import MAX_BACKOFF, REFUSAL_BACKOFF


def test_a_state_file_without_rules_opens_and_counts_per_rules(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    db = sqlite3.connect(path)
    db.execute("create table failures (component text, commit_sha text, kind text, message text,"
               " attempts integer, at real, primary key (component, commit_sha))")
    db.execute("insert into failures values ('c', 'x', 'build', 'old', 3, 0)")
    db.commit()
    db.close()
    state = StateFile(path)
    old = state.failure("c", "x")
    assert old is not None and old.rules == "" and old.attempts == 3
    assert state.record("c", "x", "build", "new", rules="r1").attempts == 1  # other rules: counted afresh
    assert state.record("c", "x", "build", "again", rules="r1").attempts == 2


def test_refusals_back_off_and_are_forgotten(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "state.sqlite")
    first = state.record_refusal("k", "no")
    assert first.retry_at - first.at == REFUSAL_BACKOFF
    for _ in range(10):
        last = state.record_refusal("k", "no")
    assert last.retry_at - last.at == MAX_BACKOFF
    state.forget_refusals()
    assert state.refusal("k") is None

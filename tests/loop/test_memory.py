"""The process's memory of builds (loop/context.py) stays bounded in a long-running service."""

from __future__ import annotations

from bot.adapters.smoke import SmokeResult
from bot.loop.context import Memory


def test_what_a_proposal_says_of_its_build_is_kept_for_the_latest_commit_only() -> None:
    memory = Memory()
    for number in range(1000):
        commit = f"{number:040x}"
        memory.note_build("lmcache", commit, smoke=SmokeResult(passed=["cp312"]))
        memory.note_build("lmcache", commit, made_by=f"run {number}")
        memory.note_build("mooncake", commit, made_by="a command")
    last = f"{999:040x}"
    assert memory.made_by == {("lmcache", last): "run 999", ("mooncake", last): "a command"}
    assert list(memory.smoke) == [("lmcache", last)]

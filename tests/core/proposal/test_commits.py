"""The commit policy of core/proposal/commits.py: sign-off and the co-author trailer read by git itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.core.config.model import Author
from bot.core.errors import RefusedError
from bot.core.proposal.commits import check_bot_branch, co_authored, signed_off

ME = Author(name="ROCm Bot", email="bot@example.com")


def trailers(message: str, tmp_path: Path) -> str:
    """What `git interpret-trailers --parse` (git's own trailer grammar) reads in `message`."""
    return subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message,
        text=True,
        capture_output=True,
        check=True,
        cwd=tmp_path,
    ).stdout


@pytest.mark.parametrize("signoff", [False, True])
def test_co_author_is_one_trailer_block_git_reads(signoff: bool, tmp_path: Path) -> None:
    message = "Bump atom\n\nBody line.\n"
    if signoff:
        message = signed_off(message, ME)
    once = co_authored(message, ME)
    assert co_authored(once, ME) == once  # never written twice
    parsed = trailers(once, tmp_path)
    assert "Co-authored-by: ROCm Bot <bot@example.com>" in parsed
    assert ("Signed-off-by: ROCm Bot <bot@example.com>" in parsed) == signoff
    assert once.startswith("Bump atom\n\nBody line.\n")


def test_only_plain_branches_under_the_prefix() -> None:
    check_bot_branch("wheelpin/atom", "wheelpin/")
    for branch in ("main", "refs/heads/wheelpin/atom", "wheelpinx"):
        with pytest.raises(RefusedError):
            check_bot_branch(branch, "wheelpin/")

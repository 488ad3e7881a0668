"""The platform seam (docs/design.md §2, Renovate's `platform`): where proposals live.

Idempotent verbs the reconciler needs of a downstream repository, and the commit they
read back. `LocalPlatform` (a local git checkout, proposals as branches) and
`GitHubPlatform` (draft pull requests) implement it; commands/platforms/api.py names
them for `--platform`, and the platform contract test holds every entry there to the
same behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class BranchCommit:
    """One commit of a proposal's branch, as the platform reads it back."""

    sha: str
    author_email: str
    message: str


class Platform(Protocol):
    writes: int

    def begin_pass(self) -> None:
        """A pass starts: drop whatever was remembered of the last one."""

    def resolve(self, ref: str) -> str | None:
        """The commit a ref names, or None."""

    def read_file(self, commit: str, path: str) -> str | None:
        """A file's text at a commit, or None when it has no such file."""

    def branch_heads(self) -> dict[str, str]:
        """Every branch of the repository → its commit (`refs/heads/…` names)."""

    def branch_commits(self, branch: str, base: str) -> list[BranchCommit]:
        """The commits on `branch` that `base` lacks, oldest first (a proposal's history)."""

    def is_bot_commit(self, commit: BranchCommit) -> bool:
        """Whether the bot made this commit (its identity, and its state marker)."""

    def write_branch(
        self, branch: str, *, base: str, files: Mapping[str, str], message: str, expected: str | None
    ) -> str:
        """Ensure the proposal: `branch` = one bot commit on `base` with `files` and
        `message` (title + body); compare-and-swap on `expected`. Returns the commit."""

    def publish_proposal(self, branch: str, *, base: str, title: str, body: str, labels: Sequence[str]) -> bool:
        """Ensure the proposal's base, title, body and labels (a draft pull request on GitHub).
        True when that opened a new one (beside a declined one's kept branch too); False when
        it brought one up to date, or where the branch itself is the proposal (locally)."""

    def proposal_open(self, branch: str) -> bool:
        """Whether `branch` (which exists) carries a proposal open for review: on GitHub an
        open pull request (a declined one's kept branch has none, and writing it opens a new
        one); locally the branch itself is the proposal."""

    def skipped_commits(self, branch: str) -> set[str]:
        """Commits whose proposal a human declined (closed without merging, its branch kept or
        deleted; on GitHub, one an open pull request carries again is not): skip those, not
        later ones."""

    def say_once(self, branch: str, *, key: str, text: str) -> None:
        """Tell the proposal's readers something, once per `key` (a pull request comment)."""

    def close(self, branch: str, *, expected: str, reason: str) -> None:
        """Close the proposal with a reason."""

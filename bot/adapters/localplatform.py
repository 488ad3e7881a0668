"""The local platform: the downstream repository is a local git checkout, and a
proposal is the branch `wheelpin/<component>` holding one bot commit on the base, whose
message carries the title and body (with the hidden state marker).

Only plumbing is used (a private index file, hash-object, commit-tree, update-ref), so
the user's working tree, index and current branch are never touched. Branches move by
compare-and-swap (`git update-ref REF NEW OLD`): a branch that moved under us is left
alone. Commits carry the bot's own identity, never the user's git config.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.config.model import BRANCH_PREFIX, Author
from ..core.errors import InputError, RefusedError, UsageError
from ..core.proposal.commits import carries_marker, check_bot_branch, signed_off
from .filemodes import folders_and_path, mode_to_write
from .git import ZERO, GitError, git, git_bytes
from .platform import BranchCommit


class LocalPlatform:
    def __init__(
        self, repo: Path, *, author: Author, branch_prefix: str = BRANCH_PREFIX, signoff: bool = False
    ) -> None:
        if not (repo / ".git").exists() and not (repo / "HEAD").exists():
            raise UsageError(f"{repo}: not a git repository")
        self.repo = repo
        self.author = author
        self.prefix = branch_prefix
        self.signoff = signoff
        self.writes = 0

    def _git(self, *args: str, **kwargs: object) -> str:
        return git(args, cwd=self.repo, **kwargs)  # type: ignore[arg-type]

    def resolve(self, ref: str) -> str | None:
        out = git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=self.repo, check=False)
        return out.strip() or None

    def read_file(self, commit: str, path: str) -> str | None:
        data = git_bytes(["cat-file", "blob", f"{commit}:{path}"], cwd=self.repo)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path} at {commit[:8]} is not UTF-8 text (byte {exc.start})") from None

    def branch_heads(self) -> dict[str, str]:
        out = self._git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
        return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())

    def branch_commits(self, branch: str, base: str) -> list[BranchCommit]:
        """The commits on `branch` that `base` does not have, oldest first."""
        out = self._git("log", "--reverse", "--format=%H%x1f%ae%x1f%B%x1e", f"{base}..refs/heads/{branch}")
        commits = []
        for record in out.split("\x1e"):
            if record.strip():
                sha, email, message = record.strip("\n").split("\x1f", 2)
                commits.append(BranchCommit(sha, email, message))
        return commits

    def is_bot_commit(self, commit: BranchCommit) -> bool:
        return commit.author_email == self.author.email and carries_marker(commit.message)

    def _check_branch(self, branch: str) -> None:
        check_bot_branch(branch, self.prefix)

    def write_branch(
        self, branch: str, *, base: str, files: Mapping[str, str], message: str, expected: str | None
    ) -> str:
        """Point `branch` at one new commit on `base` holding `files`; CAS on `expected`."""
        self._check_branch(branch)
        identity = {
            "GIT_AUTHOR_NAME": self.author.name,
            "GIT_AUTHOR_EMAIL": self.author.email,
            "GIT_COMMITTER_NAME": self.author.name,
            "GIT_COMMITTER_EMAIL": self.author.email,
        }
        if self.signoff:
            message = signed_off(message, self.author)
        with tempfile.TemporaryDirectory(prefix="wheelpin-index-") as folder:
            index = {"GIT_INDEX_FILE": os.path.join(folder, "index")}
            git(["read-tree", base], cwd=self.repo, env=index)
            kept = {path: mode_to_write(path, self._base_modes(base, path), base=base) for path in files}
            for path, text in sorted(files.items()):
                blob = git(["hash-object", "-w", "--stdin"], cwd=self.repo, input=text.encode()).strip()
                git(["update-index", "--add", "--cacheinfo", f"{kept[path]},{blob},{path}"], cwd=self.repo, env=index)
            tree = git(["write-tree"], cwd=self.repo, env=index).strip()
        commit = git(["commit-tree", tree, "-p", base, "-F", "-"], cwd=self.repo, input=message, env=identity).strip()
        try:
            git(
                ["update-ref", "-m", "wheelpin: propose", f"refs/heads/{branch}", commit, expected or ZERO],
                cwd=self.repo,
            )
        except GitError:
            raise RefusedError(f"{branch} moved while wheelpin was writing it; left alone") from None
        self.writes += 1
        return commit

    def _base_modes(self, base: str, path: str) -> dict[str, str]:
        """The mode at `base` of `path` and of each folder above it (ls-tree names a folder
        itself, not its entries, when given its path)."""
        listed = git(["ls-tree", "-z", base, "--", *folders_and_path(path)], cwd=self.repo)
        return {line.split("\t", 1)[1]: line.split(" ", 1)[0] for line in listed.split("\0") if "\t" in line}

    def begin_pass(self) -> None:
        """Nothing to prepare: every look is a local git command."""

    def proposal_open(self, branch: str) -> bool:
        """The branch is the proposal: there, it is open."""
        return True

    def skipped_commits(self, branch: str) -> set[str]:
        """A human skips a commit locally by deleting the bot's branch and keeping a note:
        `git update-ref refs/wheelpin/skip/<component>/<commit> <any commit>`."""
        name = branch.removeprefix(self.prefix)
        out = git(["for-each-ref", "--format=%(refname)", f"refs/wheelpin/skip/{name}/"], cwd=self.repo)
        return {line.rsplit("/", 1)[1] for line in out.splitlines() if line.strip()}

    def say_once(self, branch: str, *, key: str, text: str) -> None:
        """Nothing to comment on locally: the pass's report says it."""

    def publish_proposal(self, branch: str, *, base: str, title: str, body: str, labels: Sequence[str]) -> bool:
        """Nothing more to do here: the branch's commit message is the title and body."""
        self._check_branch(branch)
        return False

    def close(self, branch: str, *, expected: str, reason: str) -> None:
        """Retire a proposal: the branch goes, `refs/wheelpin/closed/…` keeps it and why."""
        self._check_branch(branch)
        tree = self._git("rev-parse", f"{expected}^{{tree}}").strip()
        identity = {
            "GIT_AUTHOR_NAME": self.author.name,
            "GIT_AUTHOR_EMAIL": self.author.email,
            "GIT_COMMITTER_NAME": self.author.name,
            "GIT_COMMITTER_EMAIL": self.author.email,
        }
        record = git(
            ["commit-tree", tree, "-p", expected, "-F", "-"],
            cwd=self.repo,
            input=f"wheelpin: closed {branch}\n\n{reason}\n",
            env=identity,
        ).strip()
        name = branch.removeprefix(self.prefix)
        git(["update-ref", f"refs/wheelpin/closed/{name}", record], cwd=self.repo)
        try:
            git(["update-ref", "-d", f"refs/heads/{branch}", expected], cwd=self.repo)
        except GitError:
            raise RefusedError(f"{branch} moved while wheelpin was closing it; left alone") from None
        self.writes += 1

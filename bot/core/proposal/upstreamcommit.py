"""Upstream commits as a proposal and a dry run list them (adapters/upstream.py reads them,
the proposal's text and the plan's write them): kept apart from the text so that reading
the upstream does not load how a proposal is written. Pure."""

from __future__ import annotations

from dataclasses import dataclass

# The commits of a pinned history that left the branch a sentence names; the rest are counted.
LEFT_NAMED = 5


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    refused: str | None = None  # why wheelpin refused this commit's wheel, if it did
    failed: str | None = None  # why its build failed, when the last try of it did


@dataclass(frozen=True)
class Divergence:
    """The commit the list starts from is not in the new commit's history: a branch
    force-pushed or reset under it, or (following tags) a release on another line."""

    fork: str | None  # the newest commit the two histories share; None: they share none (or not known)
    left: tuple[Commit, ...]  # the older commit's history not in the new one's, newest first (bounded)
    # False: the upstream has no such older commit (git's "not our ref"), and the mirror
    # kept none: where the two histories part is not known, and the list is the new commit alone
    upstream_has: bool = True


@dataclass(frozen=True)
class History:
    """The commits from the one pinned (`since`) to the new one, newest first, and how the
    two are related. `since` is None when the pinned commit is not known (the list is the
    new commit alone); `from_tag` when it is the commit the pinned image's tag names, its
    image not read; `branch` the branch followed (None: release tags)."""

    since: str | None
    commits: tuple[Commit, ...]
    branch: str | None = None
    from_tag: bool = False
    divergence: Divergence | None = None

    @property
    def head_only(self) -> bool:
        """The list is the new commit alone, for want of the pinned one: no order to say."""
        return self.since is None or (self.divergence is not None and not self.divergence.upstream_has)

    def said(self) -> str:
        """What the list is, after its count (`3 commits` …)."""
        if self.since is None:
            return "the head only (the pinned commit is not known)"
        count = _count(len(self.commits))
        if self.divergence is not None and not self.divergence.upstream_has:
            return f"the head only ({self._pinned()} is not in the upstream: where the two histories part is not known)"
        if self.divergence is not None:
            where = (
                f"since {self.divergence.fork[:8]}, the newest commit the two share"
                if self.divergence.fork
                else "the two share no history"
            )
            return f"{count} not in the history of {self._pinned()} ({where})"
        if self.from_tag:
            return f"{count} after {self._pinned()}"
        return f"{count} after the pinned one"

    def warning(self, new: str) -> str | None:
        """The sentence a reviewer must not miss when the pinned commit is not in the new
        one's history; None when it is (or is not known)."""
        if self.divergence is None or self.since is None:
            return None
        left = self.divergence.left
        named = ", ".join(f"{c.sha[:8]} ({c.subject})" for c in left[:LEFT_NAMED])
        more = f" and {len(left) - LEFT_NAMED} more" if len(left) > LEFT_NAMED else ""
        pinned = self._pinned()
        # only what is known: a commit the head's history lacks may have left a rewritten
        # branch, or never been on it (an image built from another branch, by `image publish
        # --revision` or before `upstream.branch` changed); the mirror holds no branches to tell
        if not self.divergence.upstream_has:
            return (
                f"{pinned} is not in the upstream at all: its history was rewritten (force-pushed or reset), "
                "or the image was built from a branch deleted since or from another repository"
            )
        if self.branch is not None:
            said = (
                f"{pinned} is not on {self.branch}: {self.branch} was rewritten (force-pushed or reset), "
                "or the image was built from another branch"
            )
            gone = "are not on it" if len(left) != 1 else "is not on it"
        else:
            said = f"{pinned} is not in the history of {new[:8]}: the release is on another line"
            gone = "are not in it" if len(left) != 1 else "is not in it"
        if left:
            said += f"; {_count(len(left))} of the pinned history {gone}: {named}{more}"
        return said

    def _pinned(self) -> str:
        assert self.since is not None
        if self.from_tag:
            return f"{self.since[:8]} (named by the pinned image's tag)"
        return f"the pinned commit {self.since[:8]}"


def _count(number: int) -> str:
    return f"{number} commit{'s' if number != 1 else ''}"

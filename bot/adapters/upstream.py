"""Observing an upstream (docs/design.md §1.1): `git ls-remote` for the head of a branch or the
newest matching tag (any git URL, local paths included, no API quota), and a mirror in
the cache folder for the few commits a pass needs (committer date, commit list, builds).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..core.config.hostreach import host_path
from ..core.config.model import Upstream
from ..core.decide.revision import names_commit
from ..core.errors import ConfigError, TransientError
from ..core.proposal.upstreamcommit import Commit, Divergence, History
from ..core.redact import public_url
from ..core.versioning.tags import ANY_RELEASE, TagPattern, is_older, newest, release_of, tag_on
from . import cachebound
from .git import GitError, git, git_ok


@dataclass
class UpstreamCalls:
    ls_remote: int = 0
    fetches: int = 0


class LsRemoteFailed(TransientError):
    """`git ls-remote` of the upstream failed: it did not answer, or refused."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{public_url(url)}: git ls-remote failed ({reason})")
        self.url = public_url(url)
        self.reason = reason


# What git says when the remote answers that it has no object by the id asked for:
# upload-pack's "not our ref <id>" (git's upload-pack.c, receive_needs and check_non_tip),
# printed as "fatal: remote error: upload-pack: not our ref …" when it comes over the
# protocol (git://, ssh, smart HTTP, file://) and "fatal: git upload-pack: not our ref …"
# from a local upload-pack's own stderr. Not among them: "couldn't find remote ref" and
# "no such remote ref", said of ref names (only whole ids are fetched here), and "Server
# does not allow request for unadvertised object", which a protocol v0 client says before
# asking, of a commit the server may well hold (any one not at a ref's tip).
NOT_OUR_REF = "upload-pack: not our ref"


class CommitNotUpstream(TransientError):
    """The upstream answered that it has no commit by this id, one its listing does not
    name either (its history rewritten, a branch deleted, then collected). An answer, not
    an outside failure, where a pinned commit is asked after (`is_ancestor`, `history`);
    transient to any other caller. A commit the listing names and the upstream does not
    give (its object lost, a push in between) is a plain TransientError."""

    def __init__(self, message: str, commit: str) -> None:
        super().__init__(message)
        self.commit = commit


class UpstreamRefMissing(TransientError):
    """The upstream answered, without the branch followed or any tag the pattern matches
    (transient to the pass: a branch may come back; `config validate --online` says it)."""


def _local(repo: str) -> bool:
    """A folder on this machine named by its path, not a URL (an scp-like `[user@]host:path`
    is one git reaches over ssh: core/config/hostreach.py tells them apart)."""
    return host_path(repo) == repo


def upstream_url(repo: str, root: Path) -> str:
    """What git fetches for `upstream.repo`: a relative local path starts at the config's
    repository `root` (so `config validate` looks where the pass fetches)."""
    if _local(repo) and not Path(repo).is_absolute():
        return str((root / repo).resolve())
    return repo


def host_folder(repo: str, root: Path) -> Path | None:
    """The folder on this host `upstream.repo` names (a path, a relative one starting at the
    config's repository `root`, or file://); None for a URL git reaches another machine by."""
    path = host_path(repo)
    if path is None:
        return None
    return Path(upstream_url(path, root))


def folder_problem(repo: str, root: Path) -> str | None:
    """Why the folder on this host `upstream.repo` names cannot be fetched from: it does not
    exist, or git finds no repository in it (itself, not a folder above: `git ls-remote`
    looks nowhere else); None for a repository, and for a URL of another machine. Only
    for a config read from this host: one read from GitHub names no host path unless the
    operator allows it, and its folders are the operator's business (core/config/hostreach.py)."""
    folder = host_folder(repo, root)
    if folder is None:
        return None
    where = (
        "give the path of the upstream's git repository (a relative one starts at the config's repository) or its URL"
    )
    if not folder.is_dir():
        return (
            f"the folder {folder} does not exist: {where}"
            if not folder.exists()
            else f"{folder} is not a folder: {where}"
        )
    try:
        git(["rev-parse", "--git-dir"], cwd=folder, env={"GIT_CEILING_DIRECTORIES": str(folder.parent)}, timeout=60)
    except GitError:
        return f"the folder {folder} is not a git repository: {where}"
    return None


def default_branch(url: str) -> str | None:
    """The branch an upstream's HEAD names (`git ls-remote --symref URL HEAD`), as a clone
    would check out; None when it cannot be asked or names none."""
    try:
        out = git(["ls-remote", "--symref", "--end-of-options", url, "HEAD"], timeout=60)
    except (GitError, TransientError):
        return None
    for line in out.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line.removeprefix("ref: refs/heads/").removesuffix("\tHEAD")
    return None


class UpstreamRepo:
    def __init__(self, upstream: Upstream, *, cache: Path, root: Path) -> None:
        self.upstream = upstream
        url = upstream_url(upstream.repo, root)
        self.url = url
        self.mirror = cache / "upstream" / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".git")
        self.calls = UpstreamCalls()
        self.tags: dict[str, str] = {}  # every tag → its commit, as the last listing gave them
        self.listed: set[str] = set()  # the commits the last listing named (the branch head, or every tag's)

    def head(self) -> str:
        """The commit to follow: the branch head, or the commit of the newest matching tag.
        LsRemoteFailed when the upstream does not answer (within the 120 s each listing
        has), UpstreamRefMissing when it answers without the branch or a matching tag."""
        self.calls.ls_remote += 1
        if _local(self.url) and not Path(self.url).exists():  # not an outside failure: no retry will help
            raise ConfigError(f"upstream.repo {self.upstream.repo}: no such folder ({self.url})")
        try:
            if self.upstream.branch is not None:
                out = git(["ls-remote", "--heads", self.url, f"refs/heads/{self.upstream.branch}"], timeout=120)
                for line in out.splitlines():
                    sha, ref = line.split("\t")
                    if ref == f"refs/heads/{self.upstream.branch}":
                        self.listed = {sha}
                        return sha
                raise UpstreamRefMissing(f"{public_url(self.url)}: no branch {self.upstream.branch}")
            out = git(["ls-remote", "--tags", self.url], timeout=120)
        except GitError as exc:
            raise LsRemoteFailed(self.url, exc.stderr.strip()[:200]) from None
        except UpstreamRefMissing:
            raise
        except TransientError as exc:  # git's timeout names no URL
            raise LsRemoteFailed(self.url, exc.message) from None
        pattern = TagPattern.parse(self.upstream.tags or "*")
        every: dict[str, str] = {}
        for line in out.splitlines():
            sha, ref = line.split("\t")
            name = ref.removeprefix("refs/tags/")
            peeled = name.endswith("^{}")  # an annotated tag's commit
            name = name.removesuffix("^{}")
            if peeled or name not in every:
                every[name] = sha
        self.tags = every
        self.listed = set(every.values())
        tags = {name: sha for name, sha in every.items() if pattern.version_of(name) is not None}
        chosen = newest(tags, pattern, self.upstream.versioning)
        if chosen is None:
            if tags:  # some match, and the versioning refuses every version they carry
                kind = f"{self.upstream.versioning} " if self.upstream.versioning else ""
                raise UpstreamRefMissing(
                    f"{public_url(self.url)}: no tag matching {self.upstream.tags} carries a {kind}version"
                )
            raise UpstreamRefMissing(f"{public_url(self.url)}: no tag matches {self.upstream.tags}")
        return tags[chosen]

    def is_older_release(self, commit: str, than: str) -> bool:
        """True when, following tags, `commit` carries a lower version than commit `than`
        (the one pinned): proposing it would be a downgrade. False when either carries no
        matching tag (ancestry decides then) or on a branch."""
        if self.upstream.tags is None or not self.tags:
            return False
        pattern = TagPattern.parse(self.upstream.tags)
        versioning = self.upstream.versioning
        mine = release_of(commit, self.tags, pattern, versioning)
        # the pin may carry a release tag the pattern does not match (pinned by hand): `v0.6.0`
        # is still newer than `v0.5.10-rocm`
        theirs = release_of(than, self.tags, pattern, versioning) or release_of(
            than, self.tags, ANY_RELEASE, versioning
        )
        return mine is not None and theirs is not None and is_older(mine, theirs, versioning)

    def tag_of(self, commit: str | None) -> str | None:
        """The release tag on `commit` when the component follows tags (the pattern's, else
        any that reads as a release: a pin may carry one the pattern does not match)."""
        if commit is None or self.upstream.tags is None or not self.tags:
            return None
        versioning = self.upstream.versioning
        return tag_on(commit, self.tags, TagPattern.parse(self.upstream.tags), versioning) or tag_on(
            commit, self.tags, ANY_RELEASE, versioning
        )

    def _ensure_mirror(self) -> None:
        bounded = cachebound.bounded(self.mirror.parent)
        if bounded is not None:  # held from the cache's bound until the pass ends
            bounded.use(self.mirror)
        if not (self.mirror / "HEAD").exists():
            self.mirror.parent.mkdir(parents=True, exist_ok=True)
            git(["init", "--bare", "--quiet", str(self.mirror)])

    def fetch(self, commit: str, *, depth: int | None = None) -> None:
        """Have `commit` in the mirror: only it with `depth=1` (for its date), else with its
        history (for commit lists, ancestry and builds; a shallow mirror is deepened). Asked
        of git each time, not remembered: another worker sharing the mirror may make it
        shallow again meanwhile (a depth-1 fetch marks its commit shallow)."""
        self._ensure_mirror()
        present = git(["cat-file", "-t", commit], cwd=self.mirror, check=False).strip() == "commit"
        shallow = (self.mirror / "shallow").exists()
        if present and (depth is not None or not shallow):
            return
        self.calls.fetches += 1
        extra = [f"--depth={depth}"] if depth else (["--unshallow"] if shallow else [])
        args = ["fetch", "--quiet", "--no-tags", *extra, self.url, commit]
        try:
            git(args, cwd=self.mirror, timeout=1800)
        except GitError as exc:
            said = f"{public_url(self.url)}: fetching {commit[:8]} failed ({exc.stderr.strip()[:200]})"
            if NOT_OUR_REF in exc.stderr and commit not in self.listed:
                raise CommitNotUpstream(said, commit) from None
            raise TransientError(said) from None

    def committed_at(self, commit: str) -> int:
        self.fetch(commit, depth=1)
        return int(git(["show", "-s", "--format=%ct", commit], cwd=self.mirror).strip())

    def commits_between(self, old: str | None, new: str, *, limit: int = 500) -> list[Commit]:
        """Commits after `old` up to `new`, newest first (just `new` when `old` is unknown or
        git cannot list the range); TransientError when either cannot be fetched, rather
        than a list of one that a proposal would say is all that came after the pin."""
        self.fetch(new)
        if old is not None:
            self.fetch(old)
            try:
                out = git(["log", f"--max-count={limit}", "--format=%H%x09%s", f"{old}..{new}"], cwd=self.mirror)
                return [Commit(*line.split("\t", 1)) for line in out.splitlines() if "\t" in line]
            except GitError:
                pass
        out = git(["log", "-1", "--format=%H%x09%s", new], cwd=self.mirror)
        return [Commit(*line.split("\t", 1)) for line in out.splitlines() if "\t" in line]

    def history(self, old: str | None, new: str, *, from_tag: bool = False, limit: int = 500) -> History:
        """The commits after `old` up to `new` (commits_between), and whether `old` is still
        in `new`'s history: when it is not (a branch force-pushed or reset, a release on
        another line), the newest commit the two share and `old`'s own commits `new` does
        not hold; when the upstream has no `old` at all (and the mirror has not kept it),
        `new` alone, as where the two part is not known. TransientError when either cannot
        be fetched."""
        branch = self.upstream.branch
        try:
            commits = tuple(self.commits_between(old, new, limit=limit))
        except CommitNotUpstream as exc:
            if old is None or exc.commit != old:
                raise
            alone = tuple(self.commits_between(None, new, limit=limit))
            return History(old, alone, branch, from_tag, Divergence(None, (), upstream_has=False))
        if old is None or old == new or self.is_ancestor(old, new):
            return History(old, commits, branch, from_tag)
        fork = git(["merge-base", old, new], cwd=self.mirror, check=False).strip() or None
        out = git(["log", f"--max-count={limit}", "--format=%H%x09%s", f"{new}..{old}"], cwd=self.mirror)
        left = tuple(Commit(*line.split("\t", 1)) for line in out.splitlines() if "\t" in line)
        return History(old, commits, branch, from_tag, Divergence(fork, left))

    def expand(self, hint: str, *, near: str) -> str | None:
        """The full commit an abbreviated (or full) `hint` names among the commits the mirror
        holds once `near` and its history are fetched, or None when it names none, or
        more than one. TransientError when the upstream cannot be fetched: an outside
        failure, never said as a commit it does not have."""
        if names_commit(hint, near):
            return near  # the head itself: nothing to fetch
        self.fetch(near)
        out = git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{hint}^{{commit}}"], cwd=self.mirror, check=False
        ).strip()
        return out if len(out) == 40 and out.startswith(hint) else None  # ambiguous: git says nothing

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether `older` is an ancestor of `newer` in the upstream's history; False when
        the upstream answers that it has no such commit as either, unlisted (and the mirror
        has not kept it): `older` is then in none of its histories, and a `newer` it has not
        is no descendant it holds. TransientError when either cannot be fetched: not
        knowing is no "no" (the pass would take a pin on a descendant of the head for one
        behind it, and propose going back)."""
        try:
            self.fetch(newer)
            self.fetch(older)
        except CommitNotUpstream:
            return False
        return git_ok(["merge-base", "--is-ancestor", older, newer], cwd=self.mirror)

    def checkout(self, commit: str, folder: Path) -> Path:
        """A clean checkout of `commit` in `folder` (a fresh worktree of the mirror)."""
        self.fetch(commit)
        if folder.exists():
            git(["worktree", "remove", "--force", str(folder)], cwd=self.mirror, check=False)
            shutil.rmtree(folder, ignore_errors=True)
        git(["worktree", "prune"], cwd=self.mirror, check=False)
        folder.parent.mkdir(parents=True, exist_ok=True)
        git(["worktree", "add", "--force", "--detach", str(folder), commit], cwd=self.mirror)
        return folder

    def remove_checkout(self, folder: Path) -> None:
        git(["worktree", "remove", "--force", str(folder)], cwd=self.mirror, check=False)
        shutil.rmtree(folder, ignore_errors=True)

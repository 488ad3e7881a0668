"""Observing upstreams with real git repositories: branch heads, the newest matching tag,
commit dates for the quiet period, commit lists, clean checkouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.adapters.git import git
from bot.adapters.upstream import CommitNotUpstream, UpstreamRepo
from bot.core.config.model import Upstream
from bot.core.errors import TransientError

WHO = {
    "GIT_AUTHOR_NAME": "d",
    "GIT_AUTHOR_EMAIL": "d@example.org",
    "GIT_COMMITTER_NAME": "d",
    "GIT_COMMITTER_EMAIL": "d@example.org",
}


def commit(repo: Path, message: str, date: str | None = None) -> str:
    (repo / "f.txt").write_text(message)
    git(["add", "-A"], cwd=repo)
    env = {**WHO, **({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {})}
    git(["commit", "--quiet", "-m", message], cwd=repo, env=env)
    return git(["rev-parse", "HEAD"], cwd=repo).strip()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "up"
    path.mkdir()
    git(["init", "--quiet", "-b", "dev"], cwd=path)
    return path


def upstream(repo: Path, tmp_path: Path, **kwargs: str) -> UpstreamRepo:
    return UpstreamRepo(Upstream(repo=f"file://{repo}", **kwargs), cache=tmp_path / "cache", root=tmp_path)  # type: ignore[arg-type]


def test_branch_head(repo: Path, tmp_path: Path) -> None:
    first = commit(repo, "one")
    assert upstream(repo, tmp_path, branch="dev").head() == first
    with pytest.raises(TransientError, match="no branch main"):
        upstream(repo, tmp_path, branch="main").head()


def test_newest_matching_tag_by_version(repo: Path, tmp_path: Path) -> None:
    commits = {}
    for tag in ("v0.2.0", "v0.10.0", "v0.9.1"):
        commits[tag] = commit(repo, tag)
        git(["tag", "-a", "-m", tag, tag], cwd=repo, env=WHO)  # annotated: ls-remote peels it
    commit(repo, "later")
    git(["tag", "nightly"], cwd=repo)
    assert upstream(repo, tmp_path, tags="v*").head() == commits["v0.10.0"]
    with pytest.raises(TransientError, match="no tag matches"):
        upstream(repo, tmp_path, tags="release-*").head()


@pytest.mark.parametrize("pattern", ["v*-rocm", "v{version}-rocm", "v{version}-roc?"])
def test_rocm_release_tags_in_version_order_not_string_order(repo: Path, tmp_path: Path, pattern: str) -> None:
    """LMCache tags its ROCm builds `v0.5.3-rocm`: `0.5.10-rocm` is no PEP 440 version, and
    string order put v0.5.9-rocm above v0.5.10-rocm (a downgrade proposed)."""
    commits = {}
    for tag in ("v0.5.3-rocm", "v0.5.10-rocm", "v0.5.9-rocm", "v0.6.0"):
        commits[tag] = commit(repo, tag)
        git(["tag", tag], cwd=repo)
    observed = upstream(repo, tmp_path, tags=pattern)
    assert observed.head() == commits["v0.5.10-rocm"]
    assert observed.is_older_release(commits["v0.5.9-rocm"], commits["v0.5.10-rocm"])
    assert not observed.is_older_release(commits["v0.5.10-rocm"], commits["v0.5.9-rocm"])
    assert not observed.is_older_release(commits["v0.5.10-rocm"], commit(repo, "untagged"))
    assert observed.is_older_release(commits["v0.5.10-rocm"], commits["v0.6.0"])  # pinned by hand


def test_a_backport_tagged_later_is_not_the_newest(repo: Path, tmp_path: Path) -> None:
    """v0.5.10 released on main; then a fix on the 0.4 line is tagged v0.4.7, later."""
    base = commit(repo, "base", date="2026-01-01T00:00:00Z")
    main = commit(repo, "v0.5.10", date="2026-02-01T00:00:00Z")
    git(["tag", "-a", "-m", "r", "v0.5.10"], cwd=repo, env={**WHO, "GIT_COMMITTER_DATE": "2026-02-01T00:00:00Z"})
    git(["checkout", "--quiet", "-b", "release-0.4", base], cwd=repo)
    backport = commit(repo, "v0.4.7", date="2026-03-01T00:00:00Z")
    git(["tag", "-a", "-m", "r", "v0.4.7"], cwd=repo, env={**WHO, "GIT_COMMITTER_DATE": "2026-03-01T00:00:00Z"})
    observed = upstream(repo, tmp_path, tags="v{version}")
    assert observed.head() == main
    assert observed.is_older_release(backport, main)  # never proposed over a 0.5.10 pin


def test_commit_date_fetches_one_commit(repo: Path, tmp_path: Path) -> None:
    old = commit(repo, "old", date="2026-01-01T00:00:00Z")
    new = commit(repo, "new")
    observed = upstream(repo, tmp_path, branch="dev")
    assert observed.committed_at(old) == 1767225600
    assert observed.committed_at(new) > observed.committed_at(old)
    commits = observed.commits_between(old, new)
    assert [c.subject for c in commits] == ["new"]
    assert observed.is_ancestor(old, new) and not observed.is_ancestor(new, old)


def test_clean_checkout(repo: Path, tmp_path: Path) -> None:
    first = commit(repo, "one")
    observed = upstream(repo, tmp_path, branch="dev")
    folder = observed.checkout(first, tmp_path / "co")
    (folder / "junk").write_text("left by a build")
    again = observed.checkout(first, tmp_path / "co")
    assert not (again / "junk").exists() and (again / "f.txt").read_text() == "one"
    observed.remove_checkout(again)
    assert not again.exists()


@pytest.mark.parametrize(
    "repo",
    [
        "deploy@git.example.org:rocm/lmcache.git",
        "git@github.com:LMCache/LMCache.git",
        "github.com:LMCache/LMCache.git",
        "https://github.com/o/r",
    ],
)
def test_an_upstream_git_reaches_over_the_network_is_fetched_as_written(repo: str, tmp_path: Path) -> None:
    """An scp-like `[user@]host:path`, of any user or none, is ssh to git (git-clone(1), "GIT
    URLS"): fetched as written, never taken for a folder under the config's repository."""
    from bot.adapters.upstream import upstream_url

    assert upstream_url(repo, tmp_path) == repo
    assert upstream_url("../upstream", tmp_path / "downstream") == str(tmp_path / "upstream")


def test_a_history_rewritten_under_the_pinned_commit_is_told_from_a_successor(repo: Path, tmp_path: Path) -> None:
    """dev reset under the pinned commit and moved on: the new head is no successor. The
    mirror holds the pinned commit from when it was fetched (its build), as a pass's does."""
    base = commit(repo, "base")
    pinned = commit(repo, "dev3")
    observed = upstream(repo, tmp_path, branch="dev")
    after = observed.history(base, pinned)
    assert [c.subject for c in after.commits] == ["dev3"] and after.divergence is None
    git(["reset", "--quiet", "--hard", base], cwd=repo)
    head = commit(repo, "rewritten")
    rewritten = observed.history(pinned, head)
    assert [c.subject for c in rewritten.commits] == ["rewritten"]
    assert rewritten.divergence is not None and rewritten.divergence.fork == base
    assert [c.sha for c in rewritten.divergence.left] == [pinned] and rewritten.branch == "dev"
    git(["checkout", "--quiet", "--orphan", "other"], cwd=repo)
    alone = commit(repo, "no history in common")
    unrelated = observed.history(pinned, alone)
    assert unrelated.divergence is not None and unrelated.divergence.fork is None
    assert [c.subject for c in unrelated.divergence.left] == ["dev3", "base"]


def test_a_pinned_commit_the_upstream_has_not_is_an_answer_and_an_unreachable_upstream_is_not(
    repo: Path, tmp_path: Path
) -> None:
    """A bare upstream over file:// that reset dev and collected the pinned commit, fetched
    into an empty mirror: upload-pack answers "not our ref", so the commit is in no history
    it holds (no ancestor, the head alone listed), not an outside failure. An upstream that
    is not there to ask still is one (TransientError): never said as an absent commit."""
    base = commit(repo, "base")
    pinned = commit(repo, "dev3")
    bare = tmp_path / "up.git"
    git(["clone", "--quiet", "--bare", str(repo), str(bare)])
    git(["reset", "--quiet", "--hard", base], cwd=repo)
    head = commit(repo, "rewritten")
    git(["push", "--quiet", "--force", str(bare), "dev:dev"], cwd=repo)
    git(["reflog", "expire", "--expire=now", "--all"], cwd=bare)
    git(["gc", "--quiet", "--prune=now"], cwd=bare)
    observed = upstream(bare, tmp_path, branch="dev")
    assert observed.head() == head
    assert observed.is_ancestor(pinned, head) is False and observed.is_ancestor(head, pinned) is False
    history = observed.history(pinned, head)
    assert [c.subject for c in history.commits] == ["rewritten"] and history.head_only
    assert history.divergence is not None and not history.divergence.upstream_has
    with pytest.raises(TransientError, match="not our ref"):  # transient where no caller expects it
        observed.fetch(pinned)

    unreachable = upstream(tmp_path / "gone.git", tmp_path / "other", branch="dev")
    with pytest.raises(TransientError) as failed:
        unreachable.is_ancestor(pinned, head)
    assert not isinstance(failed.value, CommitNotUpstream), failed.value.message

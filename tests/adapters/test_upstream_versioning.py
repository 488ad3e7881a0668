"""`upstream.versioning` on a real git upstream: the newest tag by the versioning named,
a tag whose version it refuses never followed, and without one the order of before
(PEP 440 where every version is one, else loose)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bot.adapters.git import git, git_ok
from bot.adapters.upstream import UpstreamRepo
from bot.core.config.model import Upstream
from bot.core.errors import TransientError
from bot.core.versioning import VERSIONINGS, Versioning
from tests.adapters.test_upstream import WHO, commit


def tagged(tmp_path: Path, tags: list[str]) -> tuple[Path, dict[str, str]]:
    """A real upstream with one commit per tag, tagged in the order given."""
    repo = tmp_path / "up"
    repo.mkdir()
    git(["init", "--quiet", "-b", "dev"], cwd=repo)
    commits = {}
    for tag in tags:
        commits[tag] = commit(repo, tag)
        git(["tag", "-a", "-m", tag, tag], cwd=repo, env=WHO)
    return repo, commits


def observed(repo: Path, tmp_path: Path, tags: str, versioning: str | None) -> UpstreamRepo:
    return UpstreamRepo(
        Upstream(repo=f"file://{repo}", tags=tags, versioning=versioning), cache=tmp_path / "cache", root=tmp_path
    )


@pytest.mark.parametrize("versioning", VERSIONINGS.values(), ids=list(VERSIONINGS))
def test_each_versioning_follows_its_newest_example(versioning: Versioning, tmp_path: Path) -> None:
    releases = [f"v{version}" for version in versioning.examples.ascending]
    refused = [
        f"v{version}"
        for version in versioning.examples.invalid  # those git takes as tag names
        if git_ok(["check-ref-format", f"refs/tags/v{version}"])
    ]
    shuffled = random.Random(35).sample(releases + refused, len(releases + refused))
    repo, commits = tagged(tmp_path, shuffled)
    upstream = observed(repo, tmp_path, "v*", versioning.name)
    assert upstream.head() == commits[releases[-1]]
    assert upstream.tag_of(commits[releases[-1]]) == releases[-1]
    assert upstream.is_older_release(commits[releases[0]], commits[releases[-1]])
    assert not upstream.is_older_release(commits[releases[-1]], commits[releases[0]])


def test_pep440_named_skips_a_stray_tag_that_would_make_the_order_loose(tmp_path: Path) -> None:
    """One tag that is not PEP 440 (`v1.0-hotfix-x`) puts the default in loose order, where a
    bare `1.0` comes after its `.post1`; named, pep440 skips the stray and follows the post
    release."""
    repo, commits = tagged(tmp_path, ["v0.9", "v1.0", "v1.0.post1", "v1.0-hotfix-x"])
    assert observed(repo, tmp_path, "v*", None).head() == commits["v1.0"]
    pep440 = observed(repo, tmp_path, "v*", "pep440")
    assert pep440.head() == commits["v1.0.post1"]
    assert pep440.tag_of(commits["v1.0-hotfix-x"]) is None
    assert pep440.is_older_release(commits["v1.0"], commits["v1.0.post1"])


def test_tags_none_of_whose_versions_the_versioning_reads_are_said_so(tmp_path: Path) -> None:
    repo, _ = tagged(tmp_path, ["v0.5.9-rocm", "v0.5.10-rocm"])
    with pytest.raises(TransientError, match=r"no tag matching v\* carries a pep440 version"):
        observed(repo, tmp_path, "v*", "pep440").head()

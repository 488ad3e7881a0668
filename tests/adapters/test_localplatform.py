"""The local platform's verbs on a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.adapters.git import git
from bot.adapters.localplatform import LocalPlatform
from bot.core.config.model import Author
from bot.core.errors import RefusedError, UsageError

WHO = {
    "GIT_AUTHOR_NAME": "m",
    "GIT_AUTHOR_EMAIL": "m@example.org",
    "GIT_COMMITTER_NAME": "m",
    "GIT_COMMITTER_EMAIL": "m@example.org",
}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    git(["init", "--quiet", "-b", "main"], cwd=tmp_path)
    (tmp_path / "Dockerfile").write_text("ARG X=1\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o755)
    git(["add", "-A"], cwd=tmp_path)
    git(["commit", "--quiet", "-m", "base"], cwd=tmp_path, env=WHO)
    return tmp_path


def platform(repo: Path, **kwargs: object) -> LocalPlatform:
    return LocalPlatform(repo, author=Author(name="bot", email="bot@example.org"), **kwargs)  # type: ignore[arg-type]


def test_write_read_and_close(repo: Path) -> None:
    local = platform(repo)
    base = local.resolve("refs/heads/main")
    assert base is not None
    first = local.write_branch(
        "wheelpin/x",
        base=base,
        files={"Dockerfile": "ARG X=2\n"},
        message="Bump x\n\n<!-- wheelpin: {} -->\n",
        expected=None,
    )
    assert local.read_file(first, "Dockerfile") == "ARG X=2\n"
    assert local.read_file(first, "missing") is None
    (commit,) = local.branch_commits("wheelpin/x", base)
    assert local.is_bot_commit(commit) and commit.message.startswith("Bump x")
    second = local.write_branch(
        "wheelpin/x",
        base=base,
        files={"Dockerfile": "ARG X=3\n", "run.sh": "#!/bin/sh\necho\n"},
        message="Bump x again\n\n<!-- wheelpin: {} -->\n",
        expected=first,
    )
    assert git(["ls-tree", second, "run.sh"], cwd=repo).startswith("100755")  # modes kept
    local.close("wheelpin/x", expected=second, reason="superseded")
    assert local.resolve("refs/heads/wheelpin/x") is None
    assert "superseded" in git(["log", "-1", "--format=%B", "refs/wheelpin/closed/x"], cwd=repo)


def test_compare_and_swap(repo: Path) -> None:
    local = platform(repo)
    base = local.resolve("refs/heads/main")
    assert base is not None
    first = local.write_branch("wheelpin/x", base=base, files={}, message="a", expected=None)
    with pytest.raises(RefusedError, match="moved"):
        local.write_branch("wheelpin/x", base=base, files={}, message="b", expected=base)  # stale
    with pytest.raises(RefusedError, match="moved"):
        local.write_branch("wheelpin/x", base=base, files={}, message="c", expected=None)  # exists
    assert local.resolve("refs/heads/wheelpin/x") == first


def test_only_its_own_prefix(repo: Path) -> None:
    local = platform(repo)
    base = local.resolve("refs/heads/main")
    assert base is not None
    with pytest.raises(RefusedError, match="only branches under wheelpin/"):
        local.write_branch("main", base=base, files={}, message="x", expected=base)
    with pytest.raises(RefusedError):
        local.close("release", expected=base, reason="x")
    assert git(["tag"], cwd=repo) == ""  # and never a tag


def test_signoff_and_identity(repo: Path) -> None:
    local = platform(repo, signoff=True)
    base = local.resolve("refs/heads/main")
    assert base is not None
    commit = local.write_branch("wheelpin/x", base=base, files={}, message="Bump", expected=None)
    assert "Signed-off-by: bot <bot@example.org>" in git(["log", "-1", "--format=%B", commit], cwd=repo)
    assert git(["log", "-1", "--format=%an %ae %cn %ce", commit], cwd=repo).split() == ["bot", "bot@example.org"] * 2


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a git repository"):
        platform(tmp_path)


def test_builds_see_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.adapters.localbuild import build_environment

    for name, value in {
        "WHEELPIN_REGISTRY_PASSWORD": "p",
        "GITHUB_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "s",
        "DOCKER_CONFIG": "/x",
        "PATH": "/usr/bin",
        "HOME": "/root",
    }.items():
        monkeypatch.setenv(name, value)
    environment = build_environment()
    assert "PATH" in environment  # HOME is the sandbox's own (adapters/sandbox.py)
    assert not {"WHEELPIN_REGISTRY_PASSWORD", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DOCKER_CONFIG", "HOME"} & set(
        environment
    )


def test_non_utf8_files_are_refused(repo: Path) -> None:
    (repo / "Dockerfile").write_bytes(b"ARG X=\xff\n")
    git(["commit", "--quiet", "-am", "latin-1"], cwd=repo, env=WHO)
    local = platform(repo)
    with pytest.raises(Exception, match="not UTF-8"):
        local.read_file(local.resolve("refs/heads/main") or "", "Dockerfile")


def test_a_symlink_is_not_written_through(repo: Path) -> None:
    """A pinned path that is a symlink at the base (or under one) is refused, nothing
    written: git would have made the new text the link's target (mode 120000 kept), and
    a path under a linked folder failed in `update-index`."""
    from bot.core.errors import ConfigError

    (repo / "Dockerfile.link").symlink_to("Dockerfile")
    (repo / "linked").symlink_to(".")
    git(["add", "-A"], cwd=repo)
    git(["commit", "--quiet", "-m", "links"], cwd=repo, env=WHO)
    local = platform(repo)
    base = local.resolve("refs/heads/main")
    assert base is not None
    for path in ("Dockerfile.link", "linked/Dockerfile"):
        with pytest.raises(ConfigError, match="symbolic link"):
            local.write_branch("wheelpin/x", base=base, files={path: "ARG X=2\n"}, message="m", expected=None)
    assert local.resolve("refs/heads/wheelpin/x") is None

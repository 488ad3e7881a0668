"""The platform contract: every `--platform` kind of the registry
(bot/commands/platforms/api.py) makes, from what the command line says, a platform that
behaves the same, verb by verb — `local` on a real git checkout, `github` through github3.py
against the GitHub emulator, whose answers are then checked against GitHub's own OpenAPI
description. A new kind adds how to host its downstream repository to `HOSTS`, and passes
the same tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.git import git
from bot.adapters.github import GitHubPlatform
from bot.app.settings import Settings
from bot.commands.platforms.api import PLATFORMS, config_on_this_host, downstream_of
from bot.commands.platforms.base import Where
from bot.core.config.model import Author
from bot.core.errors import RefusedError, UsageError
from tests.fixtures.clocks import FastForward
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.openapi import validate

BOT = Author(name="wheelpin[bot]", email="bot@example.org")
WHO = {
    "GIT_AUTHOR_NAME": "m",
    "GIT_AUTHOR_EMAIL": "m@example.org",
    "GIT_COMMITTER_NAME": "m",
    "GIT_COMMITTER_EMAIL": "m@example.org",
}
CONFIG = "# the repository's wheelpin config, as the kind reads it\n"
MESSAGE = 'Bump x\n\nbody\n\n<!-- wheelpin: {"commit":"abc"} -->\n'


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHubEmulator]:
    """One emulator for the module's tests in this process; when they are done, every kind of
    answer they drew is checked against GitHub's OpenAPI description. Checked here rather
    than in a test that must run last: pytest-xdist may share the module's tests among
    workers, and each worker checks the answers its own tests drew."""
    server = GitHubEmulator(tmp_path_factory.mktemp("github"), tokens={"ghs_test_token"})
    yield server
    server.stop()
    kinds = {(r.method, r.template, r.status): r.body for r in server.recorded}
    assert kinds, "the emulator recorded no answer: nothing was checked against GitHub's schema"
    for (method, template, status), body in kinds.items():
        validate(method, template, status, body)


def seed(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(["init", "--quiet", "-b", "main"], cwd=folder)
    (folder / "docker").mkdir()
    (folder / "docker/Dockerfile").write_text("ARG X=1\n")
    (folder / "wheelpin.toml").write_text(CONFIG)
    git(["add", "-A"], cwd=folder)
    git(["commit", "--quiet", "-m", "base"], cwd=folder, env=WHO)
    return folder


@dataclass
class Downstream:
    platform: Any
    kind: str
    emulator: GitHubEmulator | None = None
    owner: str = ""
    name: str = ""
    opened: Any = None  # the kind's commands/platforms Downstream the platform came from


def local(source: Path, _emulator: GitHubEmulator, _name: str) -> Where:
    return Where(Settings(), repo=source)


def github(source: Path, emulator: GitHubEmulator, name: str) -> Where:
    emulator.create_repo("rocm", name, source)
    return Where(Settings(github_api_url=emulator.url, github_token="ghs_test_token"), github_repo=f"rocm/{name}")


# How each kind's downstream repository is hosted for the contract (what the command line then names)
HOSTS: dict[str, Callable[[Path, GitHubEmulator, str], Where]] = {"local": local, "github": github}


def test_every_platform_kind_is_held_to_the_contract() -> None:
    assert sorted(HOSTS) == sorted(PLATFORMS)


def test_the_command_line_offers_every_kind() -> None:
    from bot.cli import build_parser

    assert len(PLATFORMS) >= 2
    for kind in PLATFORMS:
        assert build_parser().parse_args(["reconcile", "--platform", kind]).platform == kind


def test_each_kind_says_whether_config_validate_can_read_its_config() -> None:
    assert all(isinstance(kind.config_on_this_host, bool) for kind in PLATFORMS.values())
    assert config_on_this_host("local") and not config_on_this_host("github")
    assert not config_on_this_host("linux_x86_64")  # `wheelpin diff --platform` names no kind


def test_github_needs_its_repository(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--platform github needs --github-repo OWNER/NAME"):
        downstream_of("github", Where(Settings(github_token="t")))
    with pytest.raises(UsageError, match="no such repository folder"):
        downstream_of("local", Where(Settings(), repo=tmp_path / "nowhere"))


@pytest.fixture(params=sorted(PLATFORMS))
def downstream(request: pytest.FixtureRequest, tmp_path: Path, emulator: GitHubEmulator) -> Downstream:
    source = seed(tmp_path / "seed")
    name = tmp_path.name.replace("_", "-")[:60]
    opened = downstream_of(request.param, HOSTS[request.param](source, emulator, name))
    platform: Any = opened.platform
    platform.author = BOT  # as a reconciler sets it from the config's defaults
    if request.param == "github":
        return Downstream(platform, "github", emulator, "rocm", name, opened)
    return Downstream(platform, request.param, opened=opened)


def test_the_config_is_read_where_the_kind_keeps_it(downstream: Downstream) -> None:
    """What the reconcile loop reads before each pass to see whether the config changed."""
    assert downstream.opened.config_text() == CONFIG


def test_read_and_resolve(downstream: Downstream) -> None:
    platform = downstream.platform
    base = platform.resolve("refs/heads/main")
    assert base is not None and len(base) == 40
    assert platform.resolve("refs/heads/nope") is None
    assert platform.read_file(base, "docker/Dockerfile") == "ARG X=1\n"
    assert platform.read_file(base, "missing.txt") is None


def test_every_branch_is_listed(downstream: Downstream, tmp_path: Path) -> None:
    """What image pruning reads pins from: every branch, the humans' too, across pages."""
    platform = downstream.platform
    base = platform.resolve("refs/heads/main")
    mine = platform.write_branch(
        "wheelpin/c", base=base, files={"docker/Dockerfile": "ARG X=2\n"}, message=MESSAGE, expected=None
    )
    if downstream.kind == "local":
        git(["branch", "feature/x", base], cwd=platform.repo)
    else:
        assert downstream.emulator is not None
        git(["branch", "feature/x", base], cwd=downstream.emulator.repos[(downstream.owner, downstream.name)].path)
        platform.page_size = 2
    assert platform.branch_heads() == {
        "refs/heads/main": base,
        "refs/heads/feature/x": base,
        "refs/heads/wheelpin/c": mine,
    }


def test_write_update_and_close(downstream: Downstream) -> None:
    platform = downstream.platform
    base = platform.resolve("refs/heads/main")
    first = platform.write_branch(
        "wheelpin/x", base=base, files={"docker/Dockerfile": "ARG X=2\n"}, message=MESSAGE, expected=None
    )
    platform.publish_proposal("wheelpin/x", base="main", title="Bump x", body="body", labels=["wheelpin"])
    assert platform.proposal_open("wheelpin/x")
    assert platform.read_file(first, "docker/Dockerfile") == "ARG X=2\n"
    (commit,) = platform.branch_commits("wheelpin/x", base)
    assert platform.is_bot_commit(commit) and commit.sha == first
    second = platform.write_branch(
        "wheelpin/x", base=base, files={"docker/Dockerfile": "ARG X=3\n"}, message=MESSAGE, expected=first
    )
    platform.publish_proposal("wheelpin/x", base="main", title="Bump x again", body="body 2", labels=["wheelpin"])
    assert platform.resolve("refs/heads/wheelpin/x") == second
    assert [c.sha for c in platform.branch_commits("wheelpin/x", base)] == [second]
    if downstream.emulator is not None:
        pulls = list(downstream.emulator.repos[(downstream.owner, downstream.name)].pulls.values())
        assert len(pulls) == 1 and pulls[0].draft and pulls[0].title == "Bump x again"
        assert pulls[0].labels == ["wheelpin"]
        # declined on GitHub, its branch kept: the branch carries no open proposal any more
        pulls[0].state = "closed"
        platform.begin_pass()
        assert not platform.proposal_open("wheelpin/x")
        pulls[0].state = "open"
        platform.begin_pass()
    platform.close("wheelpin/x", expected=second, reason="the base already pins it")
    assert platform.resolve("refs/heads/wheelpin/x") is None
    if downstream.emulator is not None:
        (pull,) = downstream.emulator.repos[(downstream.owner, downstream.name)].pulls.values()
        assert pull.state == "closed" and [c.split("\n")[0] for c in pull.comments] == [
            "Closing: the base already pins it"
        ]


def test_compare_and_swap(downstream: Downstream) -> None:
    platform = downstream.platform
    base = platform.resolve("refs/heads/main")
    first = platform.write_branch("wheelpin/x", base=base, files={}, message=MESSAGE, expected=None)
    with pytest.raises(RefusedError):
        platform.write_branch("wheelpin/x", base=base, files={}, message=MESSAGE, expected=base)
    with pytest.raises(RefusedError):
        platform.write_branch("wheelpin/x", base=base, files={}, message=MESSAGE, expected=None)
    assert platform.resolve("refs/heads/wheelpin/x") == first


def test_only_the_bot_prefix(downstream: Downstream) -> None:
    platform = downstream.platform
    base = platform.resolve("refs/heads/main")
    for branch in ("main", "release/1.0", "refs/tags/v1"):
        with pytest.raises(RefusedError):
            platform.write_branch(branch, base=base, files={}, message=MESSAGE, expected=base)
    assert platform.resolve("refs/heads/main") == base
    assert not hasattr(platform, "create_tag") and not hasattr(platform, "create_release")


def test_a_human_commit_is_not_the_bot(downstream: Downstream) -> None:
    platform = downstream.platform
    base = platform.resolve("refs/heads/main")
    platform.write_branch("wheelpin/x", base=base, files={}, message="a human's words", expected=None)
    (commit,) = platform.branch_commits("wheelpin/x", base)
    assert not platform.is_bot_commit(commit)


def test_app_installation_tokens_are_made_and_renewed(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from bot.adapters.github import AppCredentials

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    # tokens that live four minutes: inside the renewal margin, so each use renews
    server = GitHubEmulator(tmp_path / "gh", tokens=set(), app_id=4242, app_public_key=public, token_lifetime=240)
    try:
        server.create_repo("rocm", "atom", seed(tmp_path / "seed"))
        platform = GitHubPlatform(
            api_url=server.url, owner="rocm", repo="atom", author=BOT, app=AppCredentials(4242, private, 7)
        )
        assert platform.resolve("refs/heads/main") is not None
        assert len(server.issued_tokens) >= 2 and server.issued_tokens[0].startswith("ghs_7_")
        assert platform.bot_login() == "wheelpin-test[bot]"  # the App's slug, as GitHub names its bot user
        validate("GET", "/app", 200, next(r.body for r in server.recorded if r.template == "/app"))
        from bot.adapters.github import Installation, app_installations

        assert app_installations(api_url=server.url, app=AppCredentials(4242, private, 0)) == [
            Installation(7, "rocm", False)
        ]
        wrong = AppCredentials(999, private, 7)
        with pytest.raises(Exception, match="installation token"):
            GitHubPlatform(api_url=server.url, owner="rocm", repo="atom", author=BOT, app=wrong)
        validate(
            "POST",
            "/app/installations/{installation_id}/access_tokens",
            201,
            next(r.body for r in server.recorded if r.template.startswith("/app/")),
        )
    finally:
        server.stop()


def test_repositories_of_one_installation_share_its_token(tmp_path: Path) -> None:
    """An installation token is good for every repository of the installation for an hour
    (docs "Generating an installation access token for a GitHub App"): the process holds
    one per installation, not one per repository nor per job, and drops them when the App's
    permissions change (a token keeps the permissions it was made with)."""
    from bot.adapters.github import AppCredentials, forget_installation_tokens
    from tests.app.worlds import AppKey

    key = AppKey.make()
    server = GitHubEmulator(tmp_path / "gh", tokens=set(), app_id=4343, app_public_key=key.public)
    try:
        for name in ("atom", "vllm", "sglang"):
            server.create_repo("rocm", name, seed(tmp_path / f"seed-{name}"))
        platforms = [
            GitHubPlatform(
                api_url=server.url, owner="rocm", repo=name, author=BOT, app=AppCredentials(4343, key.private, 7)
            )
            for name in ("atom", "vllm", "sglang")
        ]
        for platform in platforms * 3:
            assert platform.resolve("refs/heads/main") is not None
        assert len(server.issued_tokens) == 1
        forget_installation_tokens()
        GitHubPlatform(
            api_url=server.url, owner="rocm", repo="atom", author=BOT, app=AppCredentials(4343, key.private, 7)
        )
        assert len(server.issued_tokens) == 2
    finally:
        server.stop()


def test_draft_refused_falls_back_to_a_marked_title(tmp_path: Path) -> None:
    server = GitHubEmulator(tmp_path / "gh", tokens={"t"}, drafts=False)
    try:
        repo = server.create_repo("rocm", "private", seed(tmp_path / "seed"))
        platform = GitHubPlatform(api_url=server.url, token="t", owner="rocm", repo="private", author=BOT)
        base = platform.resolve("refs/heads/main")
        platform.write_branch("wheelpin/x", base=base, files={}, message=MESSAGE, expected=None)
        platform.publish_proposal("wheelpin/x", base="main", title="Bump x", body="b", labels=[])
        (pull,) = repo.pulls.values()
        assert pull.title == "[draft] Bump x" and not pull.draft
        platform.publish_proposal("wheelpin/x", base="main", title="Bump x to 2", body="b", labels=[])
        assert pull.title == "[draft] Bump x to 2"  # the mark stays on updates
    finally:
        server.stop()


def test_conditional_requests_and_retries(tmp_path: Path, pacing_clock: FastForward) -> None:
    from bot.adapters.github.transport import GitHubHTTP

    server = GitHubEmulator(tmp_path / "gh", tokens={"t"})
    try:
        server.create_repo("rocm", "atom", seed(tmp_path / "seed"))
        http = GitHubHTTP(backoff=0.01, sleep=pacing_clock.sleep, monotonic=pacing_clock.monotonic)
        platform = GitHubPlatform(api_url=server.url, token="t", owner="rocm", repo="atom", author=BOT, http=http)
        assert platform.bot_login() == "wheelpin-user"  # the token's own user
        validate("GET", "/user", 200, next(r.body for r in server.recorded if r.template == "/user"))
        base = platform.resolve("refs/heads/main")
        assert platform.read_file(base, "docker/Dockerfile") == "ARG X=1\n"
        counted = server.counted
        for _ in range(3):  # the same reads again: answered 304, free against the rate limit
            assert platform.resolve("refs/heads/main") == base
            assert platform.read_file(base, "docker/Dockerfile") == "ARG X=1\n"
        assert server.counted == counted and server.free == 6 and http.traffic.free == 6
        # a 502 and a secondary rate limit are waited out and retried
        server.faults += [("GET", r"/git/ref/", 502, 1), ("POST", r"/git/blobs", 403, 1)]
        assert platform.resolve("refs/heads/main") == base
        platform.write_branch("wheelpin/x", base=base, files={"a.txt": "a"}, message=MESSAGE, expected=None)
        assert http.traffic.retried == 2
        # a fault that does not pass ends in a transient error, not a wrong answer
        server.faults.append(("GET", r"/git/(ref|matching-refs)/", 500, 99))
        with pytest.raises(Exception, match="500"):
            platform.resolve("refs/heads/wheelpin/x")
    finally:
        server.stop()


def test_many_bot_branches_are_read_across_pages(tmp_path: Path) -> None:
    server = GitHubEmulator(tmp_path / "gh", tokens={"t"})
    try:
        server.create_repo("rocm", "atom", seed(tmp_path / "seed"))
        platform = GitHubPlatform(api_url=server.url, token="t", owner="rocm", repo="atom", author=BOT)
        platform.page_size = 2
        base = platform.resolve("refs/heads/main")
        made = {
            f"wheelpin/c{i}": platform.write_branch(
                f"wheelpin/c{i}", base=base, files={}, message=MESSAGE, expected=None
            )
            for i in range(5)
        }
        platform.begin_pass()
        assert {b: platform.resolve(f"refs/heads/{b}") for b in made} == made
    finally:
        server.stop()


def test_run_found_by_its_commit_when_the_dispatch_says_nothing(tmp_path: Path) -> None:
    """GitHub Enterprise Server answers a dispatch with 204 only: the run is found by the
    commit its title carries."""
    from bot.adapters.github.actions import ActionsClient

    server = GitHubEmulator(tmp_path / "gh", tokens={"t"})
    server.run_details = False
    try:
        server.create_repo("rocm", "atom", seed(tmp_path / "seed"))
        platform = GitHubPlatform(api_url=server.url, token="t", owner="rocm", repo="atom", author=BOT)
        builder = ActionsClient(platform)
        commit = "3d3aa833" + "0" * 32
        run_id = builder.dispatch("w.yaml", ref="main", inputs={"commit": commit}, commit=commit)
        assert run_id is not None and builder.run(run_id).status in ("in_progress", "queued")
        assert builder.find_run("w.yaml", "f" * 40) is None
    finally:
        server.stop()


def test_a_409_on_a_stale_ref_changes_nothing(tmp_path: Path) -> None:
    from bot.core.errors import TransientError

    server = GitHubEmulator(tmp_path / "gh", tokens={"t"})
    try:
        server.create_repo("rocm", "atom", seed(tmp_path / "seed"))
        platform = GitHubPlatform(api_url=server.url, token="t", owner="rocm", repo="atom", author=BOT)
        base = platform.resolve("refs/heads/main")
        first = platform.write_branch("wheelpin/x", base=base, files={"a": "1"}, message=MESSAGE, expected=None)
        server.faults.append(("PATCH", r"/git/refs/heads/wheelpin/x", 409, 1))
        with pytest.raises(TransientError, match="409"):
            platform.write_branch("wheelpin/x", base=base, files={"a": "2"}, message=MESSAGE, expected=first)
        platform.begin_pass()
        assert platform.resolve("refs/heads/wheelpin/x") == first  # nothing moved
        second = platform.write_branch("wheelpin/x", base=base, files={"a": "2"}, message=MESSAGE, expected=first)
        assert second != first  # the next pass gets through
    finally:
        server.stop()

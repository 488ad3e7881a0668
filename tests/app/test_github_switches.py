"""Every behaviour of real GitHub the emulator models, met end to end by both
ways the bot speaks to GitHub: `wheelpin reconcile --once --platform github` (a process,
as a GitHub App installation) and `wheelpin serve`'s service (schedule, webhooks, queue).

Each case turns on one switch of the emulator (tests/fixtures/github/emulator.py says
where GitHub documents the behaviour) and follows two upstream commits, from noticed to
proposed: the bot either copes (one run per commit, one pull request, the newest commit
proposed) or is refused in GitHub's own words, says so, and does not write again while
nothing changed. Every request and answer is then held to GitHub's OpenAPI description."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.git import git
from tests.app.test_github_as_it_is import WORKFLOW_FILE, base_commit
from tests.app.test_reconcile_github import branch_sha, cli_world, workflow_build
from tests.app.worlds import APP_ID, HUMAN, NEW_VERSION, AppKey, World, component
from tests.cli import Result, wheelpin
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.emulator import Repo as EmulatedRepo
from tests.fixtures.github.openapi import validate_recorded

WORKFLOW = 'build = { workflow = "w.yaml", inputs = { c = "{sha}" } }\n# was: ['
WRITES = ("/git/blobs", "/git/trees", "/git/commits")


@dataclass(frozen=True)
class Case:
    switches: dict[str, Any]
    base_change: dict[str, str] = field(default_factory=dict)  # committed on the base between the two commits
    refused: str | None = None  # GitHub's words refusing the second proposal
    check: Callable[[GitHubEmulator, EmulatedRepo], None] | None = None
    later: dict[str, Any] = field(default_factory=dict)  # switches turned on after the first proposal
    runs: int = 2  # builds dispatched for the two commits


def _signed(emulator: GitHubEmulator, repo: EmulatedRepo) -> None:
    assert branch_sha(repo.path) in emulator.signed


def _read_through_blobs(emulator: GitHubEmulator, repo: EmulatedRepo) -> None:
    assert any(r.template.endswith("/git/blobs/{file_sha}") for r in emulator.recorded)


def _answered_without_run_id(emulator: GitHubEmulator, repo: EmulatedRepo) -> None:
    answered = [r.status for r in emulator.recorded if r.template.endswith("/dispatches")]
    assert answered and set(answered) == {204}, answered


def _waited_out(emulator: GitHubEmulator, repo: EmulatedRepo) -> None:
    assert emulator.switched and all(status == 403 for _m, _p, status in emulator.switched)


CASES = {
    "workflows-permission": Case(
        {"workflows_permission": False},
        base_change={".github/workflows/ci.yaml": "on: push\n"},
        refused="the App lacks the `workflows` permission",
    ),
    "ghes": Case({"ghes": True}, check=_answered_without_run_id),
    "no-run-name": Case({"run_name": False}),
    "workflow-checked": Case({"check_workflows": True}),
    "artifacts-late": Case({"artifact_lag": 1}),
    "artifacts-unarchived": Case({"archive": False}),
    "clock-behind": Case({"clock_offset": -30.0}),
    "issues-off": Case({"issues_enabled": False}),
    "large-contents": Case({"contents_limit": 64, "large_contents": "403"}, check=_read_through_blobs),
    "signed-required": Case({"require_signed": True}, check=_signed),
    "no-force-push": Case(
        {"no_force_push": True}, base_change={"NOTES": "a human's change\n"}, refused="Cannot force-push to this branch"
    ),
    "secondary-limit": Case({"secondary_limit": 2}, check=_waited_out),
    "primary-limit": Case({"primary_limit": 2}, check=_waited_out),
    # an archived repository takes no dispatch either: the second commit is never built
    "archived": Case({}, later={"archived": True}, refused="the repository is archived", runs=1),
    "no-contents-permission": Case(
        {}, later={"contents_write": False}, refused="Resource not accessible by integration"
    ),
}


class Driver:
    """One way of running the bot against the emulator."""

    emulator: GitHubEmulator
    repo: EmulatedRepo

    def settle(self) -> list[str]:
        """Run the bot until it has nothing more to do; the messages of its last pass."""
        raise NotImplementedError

    def said(self) -> str:
        """Where a maintainer reads what the bot could not do (beyond the pull request)."""
        raise NotImplementedError


class CommandLine(Driver):
    """`wheelpin reconcile --once --platform github`, run as often as a cron job would."""

    def __init__(self, world: World, folder: Path, case: Case) -> None:
        self.world = world
        key = AppKey.make()
        self.emulator = GitHubEmulator(folder / "github", tokens=set(), app_id=APP_ID, app_public_key=key.public)
        for switch, value in case.switches.items():
            setattr(self.emulator, switch, value)
        self.emulator.actions = workflow_build(world, folder)
        self.repo = self.emulator.create_repo("rocm", "atom", world.downstream)
        (folder / "app.pem").write_bytes(key.private)
        url = self.emulator.url + ("/api/v3/" if case.switches.get("ghes") else "")
        self.env = {
            **world.env,
            "WHEELPIN_GITHUB_API_URL": url,
            "WHEELPIN_GITHUB_APP_ID": str(APP_ID),
            "WHEELPIN_GITHUB_PRIVATE_KEY_FILE": str(folder / "app.pem"),
            "WHEELPIN_GITHUB_INSTALLATION_ID": str(self.emulator.installations["rocm"]),
        }
        self.last: Result | None = None

    def settle(self) -> list[str]:
        for _ in range(6):
            self.last = wheelpin(
                "reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", "--json", env=self.env
            )
            assert self.last.code in (0, 1, 3, 4) and self.last.stdout, self.last.stdout + self.last.stderr
            status = component(self.last)["status"]
            if status in ("nothing", "failed") and not self._transient():
                break
        return list(component(self.last)["messages"])

    def _transient(self) -> bool:
        assert self.last is not None
        return component(self.last).get("error_kind") == "transient"

    def said(self) -> str:
        assert self.last is not None
        return self.last.stdout + self.last.stderr

    def stop(self) -> None:
        self.emulator.stop()


class Service(Driver):
    """`wheelpin serve`: the schedule fires, GitHub tells of the finished run."""

    def __init__(self, bot: Any) -> None:
        self.bot, self.emulator, self.repo = bot, bot.emulator, bot.repo

    def settle(self) -> list[str]:
        for _ in range(2):
            self.bot.poll_and_build()
        row = self.bot.service.watched[self.bot.repository].rows.get("demo-cache")
        return [str(row)] if row is not None else []

    def said(self) -> str:
        """The dashboard, and where GitHub refuses even that (an archived repository) the
        rows the service keeps for it, which its logs and /metrics report."""
        from tests.app.test_service import dashboards

        rows = self.bot.service.watched[self.bot.repository].rows.values()
        return "\n".join([d.body for d in dashboards(self.bot)] + [str(row) for row in rows])  # type: ignore[attr-defined]


@contextmanager
def driven(how: str, world: World, folder: Path, case: Case, edit: tuple[str, str] | None = None) -> Iterator[Driver]:
    if how == "reconcile":
        cli_world(world)
        world.set_config("build = { command = [", WORKFLOW)
        if edit is not None:
            world.set_config(*edit)
        driver = CommandLine(world, folder, case)
        try:
            yield driver
            assert driver.emulator.errors == []
        finally:
            driver.stop()
        return
    from tests.app.bots import running_bot

    with running_bot(world, folder, switches=case.switches, edit=edit) as bot:
        yield Service(bot)


def with_workflow(world: World) -> None:
    """The build workflow in the downstream, which GitHub may check a dispatch against."""
    (world.downstream / ".github/workflows").mkdir(parents=True)
    (world.downstream / ".github/workflows/w.yaml").write_text(
        WORKFLOW_FILE.format(run_name='run-name: "build ${{ inputs.c }}"\n')
    )
    git(["add", "-A"], cwd=world.downstream)
    git(["commit", "--quiet", "-m", "the build workflow"], cwd=world.downstream, env=HUMAN)


# Dispatches GitHub refuses, checked against the workflow file on the base
# (https://docs.github.com/en/rest/actions/workflows#create-a-workflow-dispatch-event; the
# 422 texts as GitHub answers them, tests/fixtures/github/emulator.py `_check_dispatch`).
REFUSED_DISPATCHES = {
    "no-such-workflow": (('workflow = "w.yaml"', 'workflow = "missing.yaml"'), "knows no workflow missing.yaml"),
    "unexpected-input": (
        ('inputs = { c = "{sha}" }', 'inputs = { c = "{sha}", extra = "x" }'),
        "Unexpected inputs provided",
    ),
    "no-such-ref": (
        ('workflow = "w.yaml"', 'workflow = "w.yaml", ref = "no-such-branch"'),
        "No ref found for: no-such-branch",
    ),
}


@pytest.mark.parametrize("how", ["reconcile", "serve"])
@pytest.mark.parametrize("name", list(REFUSED_DISPATCHES))
def test_a_dispatch_github_refuses_is_said_in_its_words(world: World, tmp_path: Path, name: str, how: str) -> None:
    """A config GitHub refuses to dispatch is a config error said in GitHub's words (on the
    command's output, on the dashboard), with no run made and nothing proposed."""
    edit, words = REFUSED_DISPATCHES[name]
    with_workflow(world)
    with driven(how, world, tmp_path, Case({"check_workflows": True}), edit=edit) as bot:
        world.commit_upstream("one", NEW_VERSION)
        messages = bot.settle()
        assert bot.repo.runs == {} and [p for p in bot.repo.pulls.values() if not p.is_issue] == []
        assert words in bot.said() and words in "\n".join(messages), (bot.said(), messages)


@pytest.mark.parametrize("how", ["reconcile", "serve"])
@pytest.mark.parametrize("name", list(CASES))
def test_github_as_it_behaves_end_to_end(world: World, tmp_path: Path, name: str, how: str) -> None:
    case = CASES[name]
    with_workflow(world)
    with driven(how, world, tmp_path, case) as bot:
        first = world.commit_upstream("one", NEW_VERSION)
        bot.settle()
        pulls = [p for p in bot.repo.pulls.values() if not p.is_issue]
        assert len(pulls) == 1 and first[:8] in pulls[0].title, [p.title for p in pulls]
        for switch, value in case.later.items():
            setattr(bot.emulator, switch, value)
        for path, text in case.base_change.items():
            base_commit(bot.repo.path, {path: text})
        second = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        messages = bot.settle()
        (pull,) = [p for p in bot.repo.pulls.values() if not p.is_issue]
        assert len(bot.repo.runs) == case.runs  # one build per commit, never dispatched twice
        if case.refused is None:
            assert second[:8] in pull.title, (pull.title, messages)
        else:
            assert first[:8] in pull.title
            assert case.refused in bot.said() and case.refused in "\n".join(messages + pull.comments)
            writes = sum(1 for r in bot.emulator.recorded if r.method == "POST" and r.template.endswith(WRITES))
            refused = len(bot.emulator.switched)
            bot.settle()  # nothing changed: the refused write is not made again
            assert sum(1 for r in bot.emulator.recorded if r.method == "POST" and r.template.endswith(WRITES)) == writes
            assert [r for r in bot.emulator.switched[refused:] if "/git/" in r[1]] == []
        if case.check is not None:
            case.check(bot.emulator, bot.repo)
        validate_recorded(bot.emulator.recorded)

"""A repository's name as GitHub has it, through the service: names compared without case
(GitHub's "are not case sensitive"), a rename or transfer followed at its delivery, and a
token's WHEELPIN_REPOSITORIES read as GitHub names each (its old name answered by a redirect
the client follows). The emulator renames and transfers as GitHub does: 301 (307 for a
write) from the old path to the repository by its id."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from bot.adapters.github.platform import GitHubPlatform
from bot.adapters.statefile import StateFile
from bot.app.jobs import Job, JobKind
from tests.app.bots import COMPONENT, Bot, running_bot, wait_until
from tests.app.worlds import NEW_VERSION, World, on_github
from tests.fixtures.github.emulator import comment_id
from tests.fixtures.postgres import Postgres
from tests.fixtures.webhooks import example


def moved(bot: Bot, action: str, **changes: Any) -> None:
    """GitHub says the repository moved: its delivery names it by its new full_name."""
    payload = example("repository", action)
    payload["repository"] = {
        **payload["repository"],
        "full_name": bot.repository,
        "name": bot.repo.name,
        "owner": {**payload["repository"]["owner"], "login": bot.repo.owner},
    }
    payload["changes"] = changes
    bot.send("repository", payload)


def dispatches(bot: Bot) -> list[Any]:
    """The workflow dispatches the bot asked GitHub for (each starts a build)."""
    return [r for r in bot.emulator.recorded if r.method == "POST" and r.template.endswith("/dispatches")]


def recheck_is_answered(bot: Bot, number: int) -> None:
    """A maintainer's `/wheelpin recheck` on the bot's pull request is taken and answered:
    👀, and (said once) that the proposal is current."""
    comments = bot.repo.pulls[number].comments
    bot.comment(number, "/wheelpin recheck", "maintainer")
    asked = comment_id(number, len(comments) - 1)
    bot.idle()
    assert bot.repo.reactions.get(asked) == ["eyes"], bot.repo.reactions
    assert any("`/wheelpin recheck` changed nothing" in comment for comment in comments), comments


def test_a_renamed_repository_is_served_from_its_rename_on(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.move_repo(bot.repo, name="atom-ng")
        moved(bot, "renamed", repository={"name": {"from": "atom"}})
        bot.idle()
        assert list(bot.service.watched) == ["rocm/atom-ng"]  # the list read again at the delivery
        scheduled = {job.id for job in bot.service.scheduler.get_jobs()}
        assert f"poll:rocm/atom-ng:{COMPONENT}" in scheduled and f"poll:rocm/atom:{COMPONENT}" not in scheduled
        recheck_is_answered(bot, pull.number)
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        assert bot.pulls() == [pull] and "0.1.2" in pull.title  # the same pull request, brought up to date


def test_a_failed_build_s_backoff_holds_across_a_rename(world: World, tmp_path: Path) -> None:
    """The state a repository's passes keep (a failed build's backoff, here) is the
    repository's whatever GitHub names it: the rename's delivery makes its reconciler anew,
    as a restart does, and the failed build is not dispatched again at once."""
    with running_bot(world, tmp_path) as bot:

        def failing(repo: Any, run: Any) -> dict[str, bytes]:
            raise RuntimeError("the build failed")  # the emulator's run ends: failure

        bot.emulator.actions = failing
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        assert len(dispatches(bot)) == 1 and bot.pulls() == []
        bot.poll()
        bot.idle()
        assert len(dispatches(bot)) == 1  # backing off
        bot.emulator.move_repo(bot.repo, name="Atom-NG")
        moved(bot, "renamed", repository={"name": {"from": "atom"}})
        bot.idle()
        assert [w.repository for w in bot.service.watched.values()] == ["rocm/Atom-NG"]
        bot.poll()
        bot.idle()
        assert len(dispatches(bot)) == 1  # backing off still


def test_a_command_heard_before_the_list_is_read_again_waits_for_it(world: World, tmp_path: Path) -> None:
    """The rename's delivery asks for the list to be read again, but that job waits for every
    running job (another repository's long pass here), while the maintainer's command, for
    a repository not on the list yet, may run at once: it waits for the list, not dropped."""
    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        release = threading.Event()
        hold = Job(JobKind.CONFIG, "amd/elsewhere")
        real = bot.service.run_job

        def run_job(job: Job) -> bool:
            return release.wait(30) if job == hold else real(job)

        bot.service.run_job = run_job  # type: ignore[method-assign]
        bot.service.intake.put(hold)
        wait_until(lambda: bot.service.stats().running == 1, what="another repository's pass running")
        bot.emulator.move_repo(bot.repo, name="atom-ng")
        moved(bot, "renamed", repository={"name": {"from": "atom"}})
        runs = bot.service.queue.runs
        bot.comment(pull.number, "/wheelpin recheck", "maintainer")
        asked = comment_id(pull.number, len(pull.comments) - 1)
        wait_until(lambda: bot.service.queue.runs > runs, what="the command taken")  # the list's job cannot run
        assert list(bot.service.watched) == ["rocm/atom"]  # not read again yet: the command ran first
        release.set()
        bot.idle()
        assert bot.repo.reactions.get(asked) == ["eyes"], bot.repo.reactions


def test_an_account_renamed_is_followed(world: World, tmp_path: Path) -> None:
    """The organization the App is installed on renamed: GitHub says so to the App
    (`installation_target` renamed), and its repositories are watched by their new names."""
    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        installation = bot.emulator.installations["rocm"]
        bot.emulator.rename_owner("rocm", "rocm-platform")
        payload = {  # @octokit/webhooks-types' InstallationTargetRenamedEvent (no example payload)
            "action": "renamed",
            "changes": {"login": {"from": "rocm"}},
            "account": {"login": "rocm-platform", "id": 1, "avatar_url": "https://x", "html_url": "https://x"},
            "installation": {"id": installation, "node_id": "I"},
            "target_type": "Organization",
        }
        bot.send("installation_target", payload)
        bot.idle()
        assert [(w.repository, w.grant) for w in bot.service.watched.values()] == [("rocm-platform/atom", installation)]
        recheck_is_answered(bot, pull.number)


def test_a_delivery_naming_the_repository_in_another_case_is_served(world: World, tmp_path: Path) -> None:
    """Renamed in case only, its delivery lost: the name still matches; once the list is
    read again, the repository is watched as GitHub now spells it."""
    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.move_repo(bot.repo, name="Atom")
        assert bot.repository == "rocm/Atom"  # what every delivery names now
        recheck_is_answered(bot, pull.number)
        assert bot.service.watched["rocm/atom"].repository == "rocm/atom"  # not read again yet
        moved(bot, "renamed", repository={"name": {"from": "atom"}})
        bot.idle()
        assert [w.repository for w in bot.service.watched.values()] == ["rocm/Atom"]
        scheduled = {job.id for job in bot.service.scheduler.get_jobs()}
        assert f"poll:rocm/Atom:{COMPONENT}" in scheduled and f"poll:rocm/atom:{COMPONENT}" not in scheduled
        recheck_is_answered(bot, pull.number)


def test_a_token_watches_its_repositories_as_github_names_them(world: World, tmp_path: Path) -> None:
    """…and what an earlier wheelpin recorded under the name as WHEELPIN_REPOSITORIES spelt
    it (a run followed, here) is the repository's still."""
    earlier = StateFile(tmp_path / "cache" / "state.sqlite", scope="ROCm/ATOM:")
    earlier.record_run(COMPONENT, "f" * 40, 42)
    earlier.close()
    with running_bot(world, tmp_path, token_watching="ROCm/ATOM") as bot:
        assert [w.repository for w in bot.service.watched.values()] == ["rocm/atom"]
        (watched,) = bot.service.watched.values()
        assert watched.reconciler is not None
        state = watched.reconciler.state  # the bot is idle: read here, then let go for its workers' threads
        try:
            assert state.scope.startswith("github#") and state.run_of(COMPONENT, "f" * 40) == 42
        finally:
            state.release()
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        recheck_is_answered(bot, pull.number)


def test_a_token_follows_a_transfer(world: World, tmp_path: Path) -> None:
    """WHEELPIN_REPOSITORIES keeps the name from before the transfer: GitHub's redirect says
    where the repository is, and the pull request the bot opened there is found again."""
    with running_bot(world, tmp_path, token_watching="rocm/atom") as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.move_repo(bot.repo, owner="amd")
        moved(bot, "transferred", owner={"from": {"user": {"login": "rocm"}}})
        bot.idle()
        assert [w.repository for w in bot.service.watched.values()] == ["amd/atom"]
        assert ("GET", "/repos/rocm/atom", 301) in bot.emulator.redirected
        recheck_is_answered(bot, pull.number)
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        assert bot.pulls() == [pull] and "0.1.2" in pull.title


def test_a_platform_made_with_the_old_name_finds_its_pull_request_after_a_transfer(
    world: World, tmp_path: Path
) -> None:
    """`reconcile --github-repo rocm/atom` after rocm/atom went to amd: the pull requests'
    `head` filter is `user:ref-name` (OpenAPI pulls/list), whose user is the new owner."""
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        assert gh.reconciler.run().components[0].status == "done"
        (pull,) = gh.repo.pulls.values()
        gh.emulator.move_repo(gh.repo, owner="amd")
        platform = gh.reconciler.platform
        assert isinstance(platform, GitHubPlatform)
        platform.add_labels(pull.number, ["moved"])  # a write to the old path: 307 keeps it a POST
        assert "moved" in pull.labels and gh.emulator.redirected[-1][2] == 307
        platform.reread_repository()  # as a new process reads it (GitHubPlatform.__init__)
        assert (platform.owner, platform.name) == ("amd", "atom")
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        assert gh.reconciler.run().components[0].status == "done"
        assert list(gh.repo.pulls.values()) == [pull] and "0.1.2" in pull.title


def test_on_postgresql_a_name_is_matched_without_case_and_a_rename_followed(
    world: World, postgres: Postgres, tmp_path: Path
) -> None:
    """The replicas' shared watch list: a delivery's spelling finds the repository there,
    and the rename's delivery makes it watched as GitHub now spells it."""
    with running_bot(
        world, tmp_path, database_url=postgres.database(f"names_{uuid.uuid4().hex[:8]}"), tick_seconds=1
    ) as bot:
        assert bot.service.shared is not None
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.move_repo(bot.repo, name="Atom")
        recheck_is_answered(bot, pull.number)
        moved(bot, "renamed", repository={"name": {"from": "atom"}})
        bot.idle()
        assert list(bot.service.shared.watched()) == ["rocm/Atom"]
        recheck_is_answered(bot, pull.number)

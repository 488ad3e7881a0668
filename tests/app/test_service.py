"""`wheelpin serve`'s service end to end: a GitHub App installation (the emulator), the
real registry, webhooks signed and sent over loopback, the schedule, the dashboard
issue, and the `/wheelpin` commands."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bot.adapters.git import git
from bot.adapters.github.dashboard import MARKER
from bot.adapters.github.forge import GitHubForge
from bot.app.jobs import Job, JobKind
from tests.app.bots import COMPONENT, HUMAN, Bot, running_bot, wait_until
from tests.app.worlds import NEW_VERSION, World, make_world
from tests.fixtures.github.emulator import Fault, PullRequest, Run, comment_id
from tests.fixtures.servers import Registry
from tests.fixtures.webhooks import example, examples


def dashboards(bot: Bot) -> list[object]:
    return [item for item in bot.repo.issues if MARKER in item.body]


def permission_reads(bot: Bot) -> list[object]:
    return [r for r in bot.emulator.recorded if r.template.endswith("/collaborators/{username}/permission")]


def metric(bot: Bot, name: str, **labels: str) -> float:
    text = bot.session.get(bot.server.url + "/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def test_from_the_schedule_and_a_workflow_run_webhook_to_an_updated_draft_pull_request(
    registry: Registry, tmp_path: Path
) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/serve-{uuid.uuid4().hex[:8]}/demo-cache")
    with running_bot(world, tmp_path) as bot:
        assert bot.session.get(bot.server.url + "/readyz").json() == {"status": "ready", "reason": "ready"}
        assert bot.passes() == 1 and bot.pulls() == []  # the first pass at start: the pin is current
        (dashboard,) = dashboards(bot)
        assert "| demo-cache |" in dashboard.body and dashboard.labels == ["wheelpin-dashboard"]

        head = world.commit_upstream("one", NEW_VERSION)
        bot.poll()  # the schedule notices the new upstream commit and dispatches its build
        bot.idle()
        (run,) = bot.repo.runs.values()
        assert run.inputs == {"c": head} and run.status == "queued" and bot.pulls() == []
        bot.finish_runs()
        assert bot.workflow_run_completed().status_code == 202
        bot.idle()
        (pull,) = bot.pulls()
        assert pull.draft and head[:8] in pull.title and pull.labels == ["wheelpin"]
        assert f"{registry.host}/" in pull.body and "@sha256:" in pull.body
        (dashboard,) = dashboards(bot)
        assert f"`{head[:8]}`" in dashboard.body and f"/pull/{pull.number}" in dashboard.body

        newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        (updated,) = bot.pulls()  # the same pull request, updated in place
        assert updated.number == pull.number and newer[:8] in updated.title and updated.draft
        assert len(dashboards(bot)) == 1 and f"`{newer[:8]}`" in dashboards(bot)[0].body  # type: ignore[attr-defined]
        assert metric(bot, "wheelpin_actions_total", kind="propose", outcome="done") == 2
        assert metric(bot, "wheelpin_registry_uploaded_bytes_total") > 0
        installation = str(bot.emulator.installations["rocm"])  # the limit is the installation's token's
        assert 0 < metric(bot, "wheelpin_github_rate_limit_remaining", installation=installation) <= 5000


def test_an_action_a_pass_failed_at_is_counted_and_shown_as_failed_not_done(
    registry: Registry, world: World, tmp_path: Path
) -> None:
    """The consuming image is read before publishing: one the registry does not hold (the
    Distribution API answers 404 MANIFEST_UNKNOWN) fails the publish. `/metrics` counts it
    with outcome="failed", apart from the build done before it, and the dashboard's row
    names it."""
    absent = f"{registry.host}/absent-{uuid.uuid4().hex[:8]}/base@sha256:{'0' * 64}"
    consumer = f'consumer = {{ image = "{absent}" }}'
    with running_bot(world, tmp_path, edit=('constraints = ["numpy==2.3.5"]', consumer)) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        assert bot.pulls() == []
        counted = {
            (kind, outcome): metric(bot, "wheelpin_actions_total", kind=kind, outcome=outcome)
            for kind in ("build", "publish")
            for outcome in ("done", "failed")
        }
        assert counted == {
            ("build", "done"): 1,
            ("build", "failed"): 0,
            ("publish", "done"): 0,
            ("publish", "failed"): 1,
        }
        scraped = bot.session.get(bot.server.url + "/metrics").text  # each series there from the start, at 0
        assert 'wheelpin_actions_total{kind="propose",outcome="failed"} 0.0' in scraped, scraped
        row = bot.service.watched[bot.repository].rows[COMPONENT]
        assert row.status == "failed at publish" and absent in str(row.last_error), row
        (dashboard,) = dashboards(bot)
        assert "| failed at publish |" in dashboard.body  # type: ignore[attr-defined]


def test_commands_on_the_pull_request(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path) as bot:
        head = world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        branch = f"refs/heads/wheelpin/{COMPONENT}"
        # a human pushes to the bot's branch: left alone …
        mine = git(["rev-parse", branch], cwd=bot.repo.path).strip()
        tree = git(["rev-parse", f"{mine}^{{tree}}"], cwd=bot.repo.path).strip()
        human = git(["commit-tree", tree, "-p", mine, "-m", "tweak"], cwd=bot.repo.path, env=HUMAN).strip()
        git(["update-ref", branch, human], cwd=bot.repo.path)
        bot.poll()
        bot.idle()
        assert git(["rev-parse", branch], cwd=bot.repo.path).strip() == human
        # … until someone without write access asks: refused, said once
        bot.comment(pull.number, "/wheelpin rebase", "visitor")
        bot.idle()
        assert git(["rev-parse", branch], cwd=bot.repo.path).strip() == human
        assert any("@visitor" in c and "needs write access" in c for c in pull.comments)
        assert bot.repo.reactions == {}  # a refused command gets the reply, no reaction
        # a maintainer asks: the branch is rewritten from the base, the bot's commit only
        bot.comment(pull.number, "/wheelpin rebase", "maintainer")
        rebase = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        log = git(["log", "--format=%ae", "main..wheelpin/demo-cache"], cwd=bot.repo.path).split()
        assert len(log) == 1 and log[0] != "human@example.org" and pull.state == "open"
        assert bot.repo.reactions == {rebase: ["+1"]}  # carried out: said with a reaction on the comment
        # skip: the pull request is closed and that commit never proposed again
        bot.comment(pull.number, "/wheelpin skip", "maintainer")
        skip = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        assert pull.state == "closed" and not pull.merged and any("asked to skip" in c for c in pull.comments)
        assert bot.repo.reactions[skip] == ["+1"]
        bot.poll()
        bot.idle()
        assert len(bot.pulls()) == 1 and len(bot.repo.runs) == 1
        # a newer commit is proposed anew
        newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        assert [p.state for p in bot.pulls()] == ["closed", "open"] and newer[:8] in bot.pulls()[1].title
        current = bot.pulls()[1]
        # a command on the closed pull request: nothing is done, the comment says so with 😕
        bot.comment(pull.number, "/wheelpin rebase", "maintainer")
        late = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        assert bot.repo.reactions[late] == ["confused"] and current.state == "open"
        # a skip typed while the pull request showed an older commit skips nothing
        bot.comment(current.number, "/wheelpin skip", "maintainer", seen=pull.body)
        stale = comment_id(current.number, len(current.comments) - 1)
        bot.idle()
        assert current.state == "open" and bot.repo.reactions[stale] == ["confused"]
        assert any("moved on to" in c and head[:8] in c for c in current.comments)
        # twenty comments from one visitor: their access read once a minute at most, one reply
        asked = len(permission_reads(bot))
        for _ in range(20):
            bot.comment(current.number, "/wheelpin recheck", "visitor")
        bot.idle()
        assert len(permission_reads(bot)) - asked <= 1
        assert len([c for c in current.comments if "needs write access" in c]) == 1


def test_recheck_retries_a_failed_build(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path) as bot:
        working = bot.emulator.actions
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.actions = lambda repo, run: (_ for _ in ()).throw(RuntimeError("runner lost"))
        newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        assert len(bot.repo.runs) == 2 and newer[:8] not in pull.title
        (dashboard,) = dashboards(bot)
        assert "ended: failure" in dashboard.body  # type: ignore[attr-defined]
        bot.poll()
        bot.idle()
        assert len(bot.repo.runs) == 2  # in its backoff: not dispatched again
        bot.emulator.actions = working  # the runner is back; a maintainer asks again
        bot.comment(pull.number, "/wheelpin recheck", "maintainer")
        bot.idle()
        assert len(bot.repo.runs) == 3
        bot.finish_runs()
        bot.workflow_run_completed()
        bot.idle()
        assert (
            newer[:8] in pull.title
            and "ended: failure" not in dashboards(bot)[0].body.split("| status |")[1].split("last error")[0]
        )  # type: ignore[attr-defined]


def test_a_config_change_takes_effect_without_a_restart(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path) as bot:
        job = bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}")
        assert job.trigger.interval.total_seconds() == 30 * 60
        bot.push_config('base_branch = "main"', 'base_branch = "main"\nschedule = "6h"')
        bot.idle()
        job = bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}")
        assert job.trigger.interval.total_seconds() == 6 * 3600
        # a broken config: said on the dashboard, polls stopped, nothing else touched
        bot.push_config('schedule = "6h"', 'schedule = "every now and then"')
        bot.idle()
        assert bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}") is None
        (dashboard,) = dashboards(bot)
        assert "The config cannot be used" in dashboard.body and "every now and then" in dashboard.body  # type: ignore[attr-defined]
        bot.push_config('schedule = "every now and then"', 'schedule = "*/15 * * * *"')
        bot.idle()
        job = bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}")
        assert "*/15" in str(job.trigger) and "cannot be used" not in dashboards(bot)[0].body  # type: ignore[attr-defined]


def _rename_default_branch(bot: Bot) -> None:
    """A maintainer renames `main` to `trunk` and sets the schedule there."""
    bot.emulator.rename_branch(bot.repo, "main", "trunk")
    bot.world.set_config('base_branch = "main"', 'base_branch = "trunk"\nschedule = "6h"')
    git(["push", "--quiet", "--force", str(bot.repo.path), "main:trunk"], cwd=bot.world.downstream)


def test_a_renamed_default_branch_is_followed_without_a_restart(world: World, tmp_path: Path) -> None:
    """The default branch, where the config is read, was read once: after a rename every
    read failed ("no branch main") until a restart. GitHub says so (`repository` `edited`,
    `changes.default_branch`), and a push's config read finds the old branch gone."""
    with running_bot(world, tmp_path) as bot:
        _rename_default_branch(bot)
        payload = next(
            p for name, p in examples() if name == "repository" and "default_branch" in (p.get("changes") or {})
        )  # how GitHub tells of it
        payload["repository"] = {**payload["repository"], "full_name": bot.repository, "default_branch": "trunk"}
        bot.send("repository", payload)
        bot.idle()
        job = bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}")
        assert job is not None and job.trigger.interval.total_seconds() == 6 * 3600
        assert all("cannot be used" not in d.body for d in dashboards(bot))  # type: ignore[attr-defined]


def test_a_default_branch_gone_is_read_again(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path) as bot:
        _rename_default_branch(bot)
        payload = example("push")  # a push GitHub delivered before the rename's webhook
        payload.update(ref="refs/heads/main", repository={**payload["repository"], "full_name": bot.repository})
        bot.send("push", payload)
        bot.idle()
        job = bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}")
        assert job is not None and job.trigger.interval.total_seconds() == 6 * 3600
        assert all("no branch main" not in d.body for d in dashboards(bot))  # type: ignore[attr-defined]


def test_a_burst_of_a_thousand_deliveries(world: World, tmp_path: Path) -> None:
    """All acknowledged, none lost (the change made in the middle of the burst is seen),
    and coalesced into a few passes."""
    with running_bot(world, tmp_path) as bot:
        before = bot.passes()
        answers: list[int] = []
        lock = threading.Lock()
        payloads = []
        for index in range(1000):
            if index % 2:
                payloads.append(("workflow_run", None))
            else:
                payloads.append(("push", None))

        def sender(part: list[tuple[str, None]]) -> None:
            import requests

            from tests.fixtures.webhooks import deliver, example

            session = requests.Session()
            push = example("push")
            push.update(ref="refs/heads/main", repository={**push["repository"], "full_name": "rocm/atom"})
            run = example("workflow_run", "completed")
            run["repository"] = {**run["repository"], "full_name": "rocm/atom"}
            run["workflow_run"] = {**run["workflow_run"], "path": ".github/workflows/w.yaml"}
            for event, _ in part:
                answer = deliver(session, bot.server.url, bot_secret(), event, push if event == "push" else run)
                with lock:
                    answers.append(answer.status_code)

        threads = [threading.Thread(target=sender, args=(payloads[i::8],)) for i in range(8)]
        for thread in threads[:4]:
            thread.start()
        wait_until(lambda: len(answers) >= 400, 60)
        bot.world.set_config('labels = ["wheelpin"]', 'labels = ["wheelpin", "burst"]')
        git(["push", "--quiet", "--force", str(bot.repo.path), "main:main"], cwd=bot.world.downstream)
        for thread in threads[4:]:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert len(answers) == 1000 and set(answers) == {202}
        bot.idle()
        assert metric(bot, "wheelpin_webhook_deliveries_total", event="push", outcome="queued") == 500
        assert metric(bot, "wheelpin_webhook_deliveries_total", event="workflow_run", outcome="queued") == 500
        reconciler = bot.service.watched[bot.repository].reconciler
        assert reconciler is not None and reconciler.config.defaults.labels == ["wheelpin", "burst"]  # not lost
        passes = bot.passes() - before
        assert 1 <= passes <= 60, passes  # 1,000 deliveries, a few dozen passes at most
        print(f"1000 deliveries → {passes} component passes, {bot.service.queue.runs} jobs")


def bot_secret() -> bytes:
    from tests.app.bots import SECRET

    return SECRET


def test_every_example_delivery_to_a_live_bot_changes_nothing_it_should_not(world: World, tmp_path: Path) -> None:
    """The 300+ example payloads name repositories the bot does not watch, or events it
    ignores: all answered, nothing crashes, the watched repository is untouched; and a
    dashboard a human closed and took the label off is kept (updated and labelled again,
    never a second one)."""
    with running_bot(world, tmp_path) as bot:
        (dashboard,) = dashboards(bot)
        dashboard.state = "closed"  # type: ignore[attr-defined]
        dashboard.labels = []  # type: ignore[attr-defined]
        writes = bot.emulator.counted
        for event, payload in examples():
            bot.send(event, payload)
        bot.idle()
        assert metric(bot, "wheelpin_failures_total", kind="internal") == 0
        assert bot.pulls() == [] and len(bot.repo.runs) == 0
        world.commit_upstream("one", NEW_VERSION)
        bot.poll()
        bot.idle()
        assert len(dashboards(bot)) == 1 and dashboards(bot)[0].state == "closed"  # type: ignore[attr-defined]
        assert dashboards(bot)[0].labels == ["wheelpin-dashboard"]  # type: ignore[attr-defined]
        assert "is " in dashboards(bot)[0].body and bot.emulator.counted > writes  # type: ignore[attr-defined]
        # again, and the bot restarted meanwhile (the number it kept is gone): found as its own
        dashboards(bot)[0].labels = []  # type: ignore[attr-defined]
        watched = bot.service.watched[bot.repository]
        watched.dashboard_number = watched.dashboard_body = None
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll()
        bot.idle()
        (dashboard,) = dashboards(bot)
        assert dashboard.labels == ["wheelpin-dashboard"] and dashboard.creator == "wheelpin-test[bot]"  # type: ignore[attr-defined]


def test_a_shard_watches_only_its_installations(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path, installation_ids="99") as bot:
        assert bot.service.watched == {} and bot.service.ready() == (True, "ready")
        assert bot.repo.issues == []


def test_one_unreadable_installation_holds_up_no_other(world: World, tmp_path: Path) -> None:
    """An installation whose repositories GitHub will not list keeps what it watched; the
    others are refreshed, the bot stays ready, and the refresh is tried again by itself."""

    with running_bot(world, tmp_path) as bot:
        other = bot.emulator.create_repo("amd", "atom", world.downstream)
        bot.service.queue.put(Job("installations"))
        bot.idle()
        assert set(bot.service.watched) == {"rocm/atom", "amd/atom"}
        assert [d for d in other.issues if MARKER in d.body]  # its dashboard: it is reconciled
        # installations are read in the order listed (by account): amd's listing is refused
        bot.emulator.faults.append(Fault("GET", "^/installation/repositories", 403, message="Forbidden"))
        newcomer = bot.emulator.create_repo("rocm", "atom2", world.downstream)
        bot.service.queue.put(Job("installations"))
        wait_until(lambda: "rocm/atom2" in bot.service.watched, what="the other installation refreshed")
        assert set(bot.service.watched) == {"rocm/atom", "amd/atom", "rocm/atom2"}
        assert bot.service.ready() == (True, "ready")
        wait_until(lambda: bot.service.queue.failures(Job("installations")) == 0, what="a clean retry by itself")
        bot.idle()
        assert newcomer.issues and bot.service.ready() == (True, "ready")


def test_a_suspended_installation_is_skipped_and_said_once(world: World, tmp_path: Path) -> None:
    """GitHub lists a suspended installation with `suspended_at` and refuses its tokens
    (403 "This installation has been suspended"): its repositories are not watched, it is
    said once, and the refresh is not retried; unsuspended (an `installation` delivery),
    they are watched again."""
    from structlog.testing import capture_logs

    from tests.fixtures.github.openapi import validate_recorded
    from tests.fixtures.webhooks import example

    with running_bot(world, tmp_path) as bot:
        bot.emulator.create_repo("amd", "atom", world.downstream)
        amd = bot.emulator.installations["amd"]
        bot.service.queue.put(Job("installations"))
        bot.idle()
        bot.emulator.suspended.add(amd)
        with capture_logs() as logs:
            for _ in range(2):
                bot.service.queue.put(Job("installations"))
                bot.idle()
        assert set(bot.service.watched) == {"rocm/atom"}
        assert bot.service.queue.failures(Job("installations")) == 0 and bot.service.ready() == (True, "ready")
        assert [entry["installation"] for entry in logs if entry["event"] == "installation.suspended"] == [amd]
        assert not [entry for entry in logs if entry["event"] == "installation.unreadable"]
        bot.emulator.suspended.clear()
        payload = example("installation", "unsuspend")
        payload["installation"] = {**payload["installation"], "id": amd}
        bot.send("installation", payload)
        bot.idle()
        assert set(bot.service.watched) == {"rocm/atom", "amd/atom"}
        validate_recorded(bot.emulator.recorded)


def test_installations_of_an_enterprise_or_of_no_account_are_read(world: World, tmp_path: Path) -> None:
    """GitHub's description of `installation.account`: a simple-user or an enterprise
    (`slug` and `name`, no `login`), or null. Such installations are watched like any
    other, and the bot stays ready."""
    from tests.fixtures.github.openapi import validate_recorded

    with running_bot(world, tmp_path) as bot:
        bot.emulator.create_repo("amd", "atom", world.downstream)
        bot.emulator.create_repo("intel", "atom", world.downstream)
        # the properties OpenAPI `enterprise` requires (validate_recorded holds the listing to it)
        bot.emulator.accounts[bot.emulator.installations["amd"]] = {
            "id": 3,
            "node_id": "E_3",
            "name": "AMD",
            "slug": "amd",
            "html_url": "https://github.com/enterprises/amd",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "avatar_url": "https://avatars.githubusercontent.com/b/3",
        }
        bot.emulator.accounts[bot.emulator.installations["intel"]] = None
        bot.service.queue.put(Job("installations"))
        bot.idle()
        assert set(bot.service.watched) == {"rocm/atom", "amd/atom", "intel/atom"}
        assert bot.service.queue.failures(Job("installations")) == 0
        bot.service.watchlist.check()
        assert bot.service.ready() == (True, "ready")
        # `components/schemas/installation` says anyOf [simple-user, enterprise]; the copy inlined
        # under GET /app/installations says allOf, which no enterprise account (no `login`) meets
        bot.emulator.recorded[:] = [r for r in bot.emulator.recorded if r.template != "/app/installations"]
        validate_recorded(bot.emulator.recorded)


def test_a_token_github_refuses_is_not_ready(world: World, tmp_path: Path) -> None:
    from bot.adapters.github.forge import GitHubAccess
    from bot.app.service import Service
    from tests.app.bots import SECRET, settings_for
    from tests.fixtures.github.emulator import GitHubEmulator

    emulator = GitHubEmulator(tmp_path / "github", tokens={"good"})
    emulator.create_repo("rocm", "atom", world.downstream)
    try:
        for token, ready in (("revoked", False), ("good", True)):
            service = Service(
                settings_for(tmp_path, repositories="rocm/atom"),
                forge=GitHubForge(GitHubAccess(emulator.url, token=token), secret=SECRET, repositories=["rocm/atom"]),
            )
            service.start()
            try:
                wait_until(lambda service=service: service.forge_ok is not None, what="the first refresh")
                assert service.ready()[0] is ready, service.ready()
                if not ready:
                    assert "GitHub refused the credentials for checking the token (401" in service.ready()[1]
            finally:
                service.stop(grace=10)
    finally:
        emulator.stop()


def test_a_build_is_taken_from_an_earlier_run(world: World, tmp_path: Path) -> None:
    """ATOM's `source_run_id`: `/wheelpin build --from-run N` takes run N's artifacts as
    the build of the upstream head: fetched, verified, published and proposed, with no
    dispatch. A run that failed, or a command without a run, is answered in a sentence."""
    with running_bot(world, tmp_path) as bot:
        first = world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.emulator.run_name = True  # titles carry the inputs: a run of another commit is refused
        stale = Run(bot.emulator.next_id, "w.yaml", "main", {"c": first})
        bot.emulator.next_id += 1
        bot.repo.runs[stale.id] = stale
        bot.emulator.finish_run(bot.repo, stale)
        bot.comment(pull.number, f"/wheelpin build --from-run {stale.id}", "maintainer")
        bot.idle()
        assert any(
            f"run {stale.id} was not taken as the build: run {stale.id} built {first[:12]} (its title "
            f"says), not the head {newer[:12]}" in c
            for c in pull.comments
        ), pull.comments
        nightly = Run(bot.emulator.next_id, "w.yaml", "main", {"c": newer}, actor="nightly-bot")
        bot.emulator.next_id += 1
        bot.repo.runs[nightly.id] = nightly
        bot.emulator.finish_run(bot.repo, nightly)  # a scheduled build of the same commit, done already
        bot.comment(pull.number, "/wheelpin build", "maintainer")
        bot.idle()
        assert any("`/wheelpin build --from-run RUN_ID`" in c for c in pull.comments)
        bot.comment(pull.number, f"/wheelpin build --from-run {nightly.id}", "maintainer")
        taken = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        assert newer[:8] in pull.title and len(bot.repo.runs) == 3  # proposed, and nothing dispatched
        assert bot.repo.reactions[taken] == ["+1"]
        assert f"built by run https://github.com/rocm/atom/actions/runs/{nightly.id} of w.yaml" in pull.body
        failed = Run(bot.emulator.next_id, "w.yaml", "main", {"c": newer}, status="completed", conclusion="failure")
        bot.emulator.next_id += 1
        bot.repo.runs[failed.id] = failed
        bot.comment(pull.number, f"/wheelpin build --from-run {failed.id}", "maintainer")
        bot.idle()
        assert any(
            f"run {failed.id} was not taken as the build: run {failed.id} ended: failure" in c for c in pull.comments
        )


def test_a_wrong_run_is_refused_and_forgotten_and_a_command_that_changes_nothing_says_so(
    world: World, tmp_path: Path
) -> None:
    """A run of another commit named by `/wheelpin build --from-run N` cannot poison the head:
    refused once, forgotten, and the next pass dispatches the head's own build, whose
    proposal lists no refusal. A command with nothing to do says so, and gets no 👍."""
    with running_bot(world, tmp_path) as bot:
        first = world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        (own,) = bot.repo.runs
        bot.comment(pull.number, f"/wheelpin build --from-run {own}", "maintainer")
        asked = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        assert f"nothing to take: {first[:8]}, the upstream head, is already published as " in pull.comments[-1]
        assert bot.repo.reactions[asked] == ["confused"]
        bot.comment(pull.number, "/wheelpin recheck", "maintainer")
        asked = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        assert "`/wheelpin recheck` changed nothing: this pull request already proposes" in pull.comments[-1]
        assert bot.repo.reactions[asked] == ["eyes"]

        head = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.emulator.run_name = False  # a workflow with no `run-name`: its title names no commit
        stale = Run(bot.emulator.next_id, "w.yaml", "main", {"c": first})
        bot.emulator.next_id += 1
        bot.repo.runs[stale.id] = stale
        bot.emulator.finish_run(bot.repo, stale)
        bot.comment(pull.number, f"/wheelpin build --from-run {stale.id}", "maintainer")
        asked = comment_id(pull.number, len(pull.comments) - 1)
        bot.idle()
        assert bot.repo.reactions[asked] == ["confused"], pull.comments[-1]  # its pass failed: the dashboard says why
        (dashboard,) = dashboards(bot)
        assert "were refused and forgotten" in dashboard.body, pull.comments[-1]  # type: ignore[attr-defined]
        runs = len(bot.repo.runs)
        bot.poll_and_build()
        assert len(bot.repo.runs) == runs + 1 and head[:8] in pull.title  # its own build, dispatched
        assert "⛔" not in pull.body and f"from-run {stale.id}" not in pull.body
        assert "were refused" not in dashboard.body  # type: ignore[attr-defined]  # the success cleared it


def test_a_run_is_not_taken_where_the_workflow_publishes_the_image(world: World, tmp_path: Path) -> None:
    """ATOM's shipped config: its workflow pushes the image (build.publishes_image), so
    wheelpin publishes no run's artifacts; the reply says why and what to do instead."""
    with running_bot(
        world, tmp_path, edit=('inputs = { c = "{sha}" } }', 'inputs = { c = "{sha}" }, publishes_image = true }')
    ) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()  # the run uploads wheels but pushes no image: nothing to adopt
        (dashboard,) = dashboards(bot)
        (run,) = bot.repo.runs
        bot.comment(dashboard.number, f"/wheelpin build --from-run {run}", "maintainer")  # type: ignore[attr-defined]
        bot.idle()
        said = dashboard.comments[-1]  # type: ignore[attr-defined]
        assert (
            f"@maintainer: run {run} was not taken as the build: demo-cache's workflow pushes its image itself "
            "(build.publishes_image = true)"
            in said
            and "wheelpin adopts it at its next pass" in said
        ), said
        assert bot.pulls() == []


def test_a_reply_github_answered_with_a_timeout_is_not_posted_twice(world: World, tmp_path: Path) -> None:
    """GitHub ends a request after 10 s of work with a 502 ("Troubleshooting the REST API",
    timeouts) though the reply landed: the job fails, runs again after its backoff, and finds
    its reply instead of posting a second one."""
    with running_bot(
        world, tmp_path, edit=('inputs = { c = "{sha}" } }', 'inputs = { c = "{sha}" }, publishes_image = true }')
    ) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (dashboard,) = dashboards(bot)
        (run,) = bot.repo.runs
        number = dashboard.number  # type: ignore[attr-defined]
        bot.emulator.faults.append(Fault("POST", rf"/issues/{number}/comments$", 502, land=True))
        bot.comment(number, f"/wheelpin build --from-run {run}", "maintainer")
        bot.idle()
        comments: list[str] = dashboard.comments  # type: ignore[attr-defined]
        reply = f"@maintainer: run {run} was not taken"
        assert len([c for c in comments if c.startswith(reply)]) == 1
        assert not any(f.times for f in bot.emulator.faults if isinstance(f, Fault))  # the 502 was met
        bot.comment(number, f"/wheelpin build --from-run {run}", "maintainer")  # asked again: answered again
        bot.idle()
        assert len([c for c in comments if c.startswith(reply)]) == 2


def test_a_reply_is_looked_for_only_among_the_comments_since_its_command(world: World, tmp_path: Path) -> None:
    """Before replying to a command, the bot looks whether its reply landed already (a 5xx
    may hide that): among the comments since the command only (the listing's `since`), not
    through every comment anyone made on the dashboard before it."""
    with running_bot(
        world, tmp_path, edit=('inputs = { c = "{sha}" } }', 'inputs = { c = "{sha}" }, publishes_image = true }')
    ) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (dashboard,) = dashboards(bot)
        (run,) = bot.repo.runs
        number = dashboard.number  # type: ignore[attr-defined]
        for index in range(250):  # a day of chatter, three pages of it
            dashboard.add_comment(f"chatter {index}", at=time.time() - 86_400)  # type: ignore[attr-defined]
        bot.emulator.faults.append(Fault("POST", rf"/issues/{number}/comments$", 502, land=True))
        listed = len(bot.emulator.recorded)
        bot.comment(number, f"/wheelpin build --from-run {run}", "maintainer")
        bot.idle()
        comments: list[str] = dashboard.comments  # type: ignore[attr-defined]
        assert len([c for c in comments if c.startswith(f"@maintainer: run {run} was not taken")]) == 1
        reads = [
            r
            for r in bot.emulator.recorded[listed:]
            if r.method == "GET" and r.template == "/repos/{owner}/{repo}/issues/{issue_number}/comments"
        ]
        assert len(reads) == 2 and all(len(r.body) <= 2 for r in reads)  # once a try, the command and its reply


def test_a_build_is_taken_from_a_run_on_the_dashboard_when_there_is_no_pull_request(
    world: World, tmp_path: Path
) -> None:
    """The head's own build failed, so there is no pull request to comment on: the
    dashboard issue takes `/wheelpin build --from-run N`, answered there."""
    with running_bot(world, tmp_path) as bot:
        working = bot.emulator.actions
        bot.emulator.actions = lambda repo, run: (_ for _ in ()).throw(RuntimeError("runner lost"))
        head = world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        assert bot.pulls() == []
        (dashboard,) = dashboards(bot)
        assert "ended: failure" in dashboard.body  # type: ignore[attr-defined]
        bot.emulator.actions = working
        nightly = Run(bot.emulator.next_id, "w.yaml", "main", {"c": head}, actor="nightly-bot")
        bot.emulator.next_id += 1
        bot.repo.runs[nightly.id] = nightly
        bot.emulator.finish_run(bot.repo, nightly)
        number = dashboard.number  # type: ignore[attr-defined]
        bot.comment(number, f"/wheelpin build --from-run {nightly.id} --component nope", "maintainer")
        bot.idle()
        assert (
            "@maintainer: say which component to build: `--component NAME`, one of demo-cache."
            in dashboard.comments[-1]
        )  # type: ignore[attr-defined]
        assert bot.comment(number, "/wheelpin build --from-run ²", "maintainer").ok  # isdigit's, not int's
        bot.idle()
        assert "@maintainer: say which run to take the build from" in dashboard.comments[-1]  # type: ignore[attr-defined]
        bot.comment(number, f"/wheelpin build --from-run {nightly.id}", "visitor")
        bot.idle()
        assert "needs write access" in dashboard.comments[-1] and bot.pulls() == []  # type: ignore[attr-defined]
        for _ in range(11):  # a read-only user repeating it: refused once a period, not per comment
            bot.comment(number, f"/wheelpin build --from-run {nightly.id}", "visitor")
            bot.idle()
        repeated = [comment_id(number, index) for index in range(len(dashboard.comments) - 11, len(dashboard.comments))]  # type: ignore[attr-defined]
        assert sum("needs write access" in c for c in dashboard.comments) == 1  # type: ignore[attr-defined]
        assert not any(bot.repo.reactions.get(comment) for comment in repeated)
        bot.comment(number, f"/wheelpin build --from-run {nightly.id}", "maintainer")  # one component: no name
        taken = comment_id(number, len(dashboard.comments) - 1)  # type: ignore[attr-defined]
        bot.idle()
        (pull,) = bot.pulls()
        assert head[:8] in pull.title and bot.repo.reactions[taken] == ["+1"]
        assert f"built by run https://github.com/rocm/atom/actions/runs/{nightly.id} of w.yaml" in pull.body
        bot.comment(pull.number, "/wheelpin build --from-run 1", "maintainer")  # on a pull request: as before
        bot.idle()
        copied = bot.repo.next_number  # an issue that copied the marker is not the dashboard
        bot.repo.pulls[copied] = PullRequest(copied, "", "", "copy", dashboard.body, False, is_issue=True)  # type: ignore[attr-defined]
        bot.repo.next_number += 1
        bot.comment(copied, f"/wheelpin build --from-run {nightly.id}", "maintainer")
        bot.idle()
        assert bot.repo.pulls[copied].comments == [f"/wheelpin build --from-run {nightly.id}"]


def test_a_command_on_a_forks_look_alike_pull_request_does_nothing(world: World, tmp_path: Path) -> None:
    """A fork's branch named like the bot's is not the bot's (the pull request's head.repo
    is the fork: docs "REST API endpoints for pull requests", head.repo): a maintainer's
    `/wheelpin skip` there neither skips the commit nor closes the bot's own proposal."""
    with running_bot(world, tmp_path) as bot:
        head = world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (ours,) = bot.pulls()
        number = bot.repo.next_number
        fork = PullRequest(
            number, f"wheelpin/{COMPONENT}", "main", "a fork's", ours.body, False, head_repo="visitor/atom"
        )  # even its body copies the bot's marker
        bot.repo.pulls[number], bot.repo.next_number = fork, number + 1
        for command in ("skip", "rebase"):
            bot.comment(number, f"/wheelpin {command}", "maintainer")
        bot.idle()
        assert fork.state == "open" and fork.comments == ["/wheelpin skip", "/wheelpin rebase"]
        assert ours.state == "open" and head[:8] in ours.title and bot.repo.reactions == {}
        assert not permission_reads(bot)  # not even the sender's access was read
        bot.poll()
        bot.idle()
        assert ours.state == "open" and len(bot.repo.runs) == 1  # the commit was not skipped


def test_repeated_commands_coalesce_and_every_comment_gets_its_reaction(world: World, tmp_path: Path) -> None:
    """Comments that arrive while the repository is busy (a job of its own runs: never two
    at once) become one job per (pull request, command, sender); the job reacts to each."""
    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        release = threading.Event()
        hold = Job(JobKind.CONFIG, bot.repository)
        held: list[Job] = []
        real = bot.service.run_job

        def run_job(job: Job) -> bool:
            if job == hold and not held:
                held.append(job)
                return release.wait(30)
            return real(job)

        bot.service.run_job = run_job  # type: ignore[method-assign]
        bot.service.queue.put(hold)  # the repository is busy with something else
        wait_until(lambda: bot.service.queue.stats().running == 1, what="the worker busy")
        runs = bot.service.queue.runs
        for _ in range(5):
            bot.comment(pull.number, "/wheelpin recheck", "maintainer")
        ids = [comment_id(pull.number, index) for index in range(len(pull.comments) - 5, len(pull.comments))]
        release.set()
        bot.idle()
        assert bot.service.queue.runs - runs <= 3  # the command once, then its component and dashboard
        # a recheck of a proposal that is current changes nothing: said once, each comment 👀, no 👍
        assert all(bot.repo.reactions.get(number) == ["eyes"] for number in ids), bot.repo.reactions
        assert sum("changed nothing" in c for c in pull.comments) == 1


def test_a_deleted_dashboard_is_opened_again(world: World, tmp_path: Path) -> None:
    """GitHub answers 410 Gone for a deleted issue: the bot opens a new dashboard, once."""
    with running_bot(world, tmp_path) as bot:
        (dashboard,) = dashboards(bot)
        del bot.repo.pulls[dashboard.number]  # type: ignore[attr-defined]
        bot.emulator.faults.append(("GET", rf"/issues/{dashboard.number}$", 410, 99))  # type: ignore[attr-defined]
        world.commit_upstream("one", NEW_VERSION)
        bot.poll()
        bot.idle()
        (again,) = dashboards(bot)
        assert again.number != dashboard.number and "| demo-cache |" in again.body  # type: ignore[attr-defined]
        assert metric(bot, "wheelpin_failures_total", kind="transient") == 0


def test_a_command_whose_pass_fails_for_now_is_reacted_to_when_its_retry_is_done(world: World, tmp_path: Path) -> None:
    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        real, calls = bot.service._component, []

        def flaky(*args: object, **options: bool) -> bool:
            calls.append(options)
            return False if len(calls) == 1 else real(*args, **options)  # type: ignore[arg-type]

        bot.service._component = flaky  # type: ignore[method-assign]
        bot.comment(pull.number, "/wheelpin rebase", "maintainer")
        number = comment_id(pull.number, len(pull.comments) - 1)
        wait_until(lambda: len(calls) >= 2, what="the retry after the backoff")
        bot.idle()
        assert calls[0] == calls[1] == {"rebase": True, "recheck": False}
        assert bot.repo.reactions == {number: ["+1"]}


def test_github_s_hourly_write_limit_holds_up_no_other_job(world: World, tmp_path: Path) -> None:
    """500 content-creating requests an hour (docs.github.com/en/rest/using-the-rest-api/
    rate-limits-for-the-rest-api#about-secondary-rate-limits): once they are spent, the
    write is not slept in the single worker for most of an hour. The component's pass fails
    for now, saying so; its key waits out the limit; other jobs run meanwhile."""
    with running_bot(world, tmp_path) as bot:
        watched = bot.service.watched[bot.repository]
        assert watched.platform is not None
        pacer = watched.platform.http.pacer
        two_minutes_ago = pacer._monotonic() - 120  # the hour's 500 writes, just spent
        pacer._sent.extend(two_minutes_ago for _ in range(500))
        world.commit_upstream("one", NEW_VERSION)
        started = bot.passes()
        bot.poll()
        wait_until(lambda: bot.passes() > started, what="the pass")
        row = watched.rows[COMPONENT]
        assert row.status.startswith("failed") and "500 writes an hour" in str(row.last_error), row
        assert bot.repo.runs == {}  # nothing dispatched, nothing slept
        queue = bot.service.queue
        (waiting,) = [e for k, e in queue._entries.items() if k.component == COMPONENT]
        wait_until(lambda: waiting.running_since is None, what="the job to end")  # the pass counts before
        assert waiting.not_before - queue.clock() > 3000
        bot.push_config("# was: [", "# was (edited): [")  # the worker is free: a config job runs now
        wait_until(lambda: "edited" in (watched.config_text or ""), what="the config read again")


def test_a_long_job_of_one_repository_holds_up_no_other_and_a_wedged_worker_fails_liveness(tmp_path: Path) -> None:
    """A bounded pool (`WHEELPIN_WORKERS`, 2 by default): another repository's job runs while
    one repository's long job (a multi-GB adoption) runs, and a second job of that
    repository waits for it. A worker that ticks no more fails /healthz, so Kubernetes
    restarts the process rather than only taking it out of the Service."""
    from bot.app.service import Service
    from bot.app.webapp import make_app
    from tests.app.bots import settings_for

    service = Service(settings_for(tmp_path), forge=GitHubForge(None, secret=b"s"))
    assert service.settings.workers == 2
    ran: list[str] = []
    release = threading.Event()

    def run_job(job: Job) -> bool:
        ran.append(f"{job.repository}:{job.kind}")
        if job.repository == "rocm/slow":
            release.wait(20)
        return True

    service.run_job = run_job  # type: ignore[method-assign]
    service.start()
    try:
        service.queue.put(Job(JobKind.REPOSITORY, "rocm/slow"))
        wait_until(lambda: "rocm/slow:repository" in ran, what="the slow job")
        service.queue.put(Job(JobKind.COMPONENT, "rocm/slow", "lmcache"))
        service.queue.put(Job(JobKind.REPOSITORY, "rocm/fast"))
        wait_until(lambda: "rocm/fast:repository" in ran, what="the other repository's job")
        assert "rocm/slow:component" not in ran  # one job of a repository at a time
        statuses: list[str] = []
        app = make_app(service)
        assert b'"alive"' in b"".join(
            app({"PATH_INFO": "/healthz", "REQUEST_METHOD": "GET"}, lambda status, headers: statuses.append(status))
        )
        name = next(worker.name for worker in service._workers)
        service._ticks[name] -= service.settings.wedged_after + 1  # as if the slow job had run two hours
        answer = b"".join(
            app({"PATH_INFO": "/healthz", "REQUEST_METHOD": "GET"}, lambda status, headers: statuses.append(status))
        )
        assert statuses == ["200 OK", "503 Service Unavailable"] and b"has not ticked for" in answer
        release.set()
        wait_until(lambda: "rocm/slow:component" in ran, what="the slow repository's second job")
        wait_until(lambda: service.alive()[0], what="the workers ticking again")
    finally:
        release.set()
        assert service.stop(grace=10)


def test_a_tenants_config_reaches_nothing_on_the_host(world: World, tmp_path: Path) -> None:
    """The service without the operator's allow_host_paths: a config naming a file:// upstream
    and an oci: folder is said on the dashboard, and neither is read or written."""
    mirrors = sorted((tmp_path / "cache").glob("upstream/*"))  # the world's own, made locally
    with running_bot(world, tmp_path, allow_host_paths=False) as bot:
        (dashboard,) = dashboards(bot)
        assert "The config cannot be used" in dashboard.body  # type: ignore[attr-defined]
        assert "a config read from GitHub names a remote git URL" in dashboard.body  # type: ignore[attr-defined]
        assert not bot.repo.runs and sorted((tmp_path / "cache").glob("upstream/*")) == mirrors  # never fetched
        assert bot.service.scheduler.get_job(f"poll:rocm/atom:{COMPONENT}") is None

"""GitHub as its documentation and trackers say it behaves, not as a client might
assume. Each test turns on one switch of the emulator that models a behaviour of real
GitHub (cited where the switch is modelled, tests/fixtures/github/emulator.py), and fails
against a bot that assumes otherwise."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import pytest

from bot.adapters.configdisk import load_config
from bot.adapters.git import git
from bot.adapters.github import GitHubConversation, GitHubPlatform
from bot.adapters.github.transport import GitHubHTTP
from bot.core.errors import ConfigError, InputError, RefusedError, TransientError
from bot.loop.runner import Reconciler
from tests.adapters.test_githubhttp import Clock
from tests.app.test_reconcile_github import WORKFLOW, branch_sha, cli_world, dry_then_real, workflow_build
from tests.app.worlds import HUMAN, NEW_VERSION, World, base_commit, component, on_github
from tests.cli import wheelpin
from tests.fixtures.github.emulator import Fault, GitHubEmulator, PullRequest, Run
from tests.fixtures.github.openapi import validate_recorded

WORKFLOW_FILE = """\
name: wheel
on:
  workflow_dispatch:
    inputs:
      c: {{ description: commit, required: true }}
{run_name}jobs:
  build: {{ runs-on: ubuntu-latest, steps: [ {{ run: "true" }} ] }}
"""


# -- workflow files -----------------------------------------------------------------------


def test_an_app_without_workflows_permission_is_told_once(world: World, tmp_path: Path) -> None:
    """The base changed a workflow: rewriting the proposal on it is refused (422) for an App
    without `workflows`. The pass fails as a permission error, not a transient one, and the
    pull request says what to grant, once."""
    with on_github(world, tmp_path, app=True, workflows_permission=False) as gh:
        world.commit_upstream("one", NEW_VERSION)
        assert gh.reconciler.run().components[0].status == "done"
        base_commit(gh.repo.path, {".github/workflows/ci.yaml": "on: push\n"})
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        failed = gh.reconciler.run().components[0]
        assert failed.status == "failed" and failed.error_kind == "permission", failed.to_json()
        assert "`workflows` permission" in failed.messages[-1]
        assert "refusing to allow a GitHub App" in failed.messages[-1]  # GitHub's own words
        gh.reconciler.run()
        (pull,) = gh.repo.pulls.values()
        told = [c for c in pull.comments if "`workflows` permission" in c]
        assert len(told) == 1, pull.comments
        validate_recorded(gh.emulator.recorded)


def test_the_app_manifest_asks_for_workflows() -> None:
    import json

    manifest = json.loads((Path(__file__).parents[2] / "deploy/github-app.json").read_text())
    assert manifest["default_permissions"].get("workflows") == "write"


# -- GitHub Enterprise Server, and runs found without run-name ---------------------------------


@pytest.mark.parametrize("ghes", [False, True])
def test_a_lost_dispatch_answer_never_dispatches_twice(world: World, tmp_path: Path, ghes: bool) -> None:
    """The dispatch lands but its answer is lost (a 502); the workflow sets no `run-name`, so
    no run title carries the commit. The next passes find that run and follow it: one run."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, ghes=ghes, run_name=False) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        gh.emulator.faults.append(Fault("POST", "/dispatches$", 502, land=True))
        head = world.commit_upstream("one", NEW_VERSION)
        first = gh.reconciler.run().components[0]
        assert first.status == "failed" and len(gh.repo.runs) == 1
        for _ in range(4):
            last = gh.reconciler.run().components[0]
        assert last.status == "nothing", last.to_json()
        assert len(gh.repo.runs) == 1  # the landed dispatch was followed, never repeated
        (pull,) = gh.repo.pulls.values()
        assert head[:8] in pull.title
        sent = [r.request for r in gh.emulator.recorded if r.template.endswith("/dispatches")]
        assert all("return_run_details" in body for body in sent), sent  # GHES: a 204, no id
        validate_recorded(gh.emulator.recorded)


def test_a_dispatch_refused_with_return_run_details_is_sent_again_without_it(world: World, tmp_path: Path) -> None:
    """No GitHub source says how a server that does not know `return_run_details` refuses
    it (GHES's descriptions simply lack the key): any 422 to a dispatch carrying it is sent
    once more without it (matching a message would need one no GitHub source gives), and the key is
    left out from then on."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, run_name=False) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        gh.emulator.faults.append(Fault("POST", "/dispatches$", 422, message="Validation Failed"))
        head = world.commit_upstream("one", NEW_VERSION)
        first = gh.reconciler.run().components[0]
        assert first.error_kind != "config" and len(gh.repo.runs) == 1, first.to_json()  # not a config error
        for _ in range(2):
            last = gh.reconciler.run().components[0]
        assert last.status == "nothing", last.to_json()
        (pull,) = gh.repo.pulls.values()
        assert head[:8] in pull.title and len(gh.repo.runs) == 1
        assert gh.reconciler.actions is not None and gh.reconciler.actions.run_details is False
        sent = [r.request for r in gh.emulator.recorded if r.template.endswith("/dispatches")]
        assert sent == [{"ref": "main", "inputs": {"c": head}}], sent


def test_ghes_dispatch_on_the_command_line(world: World, tmp_path: Path) -> None:
    """`reconcile --platform github` on GitHub Enterprise Server, the API URL written with
    /api/v3: the dispatch answers 204 (no run id, as its REST description), the run followed."""
    cli_world(world)
    world.set_config("build = { command = [", WORKFLOW)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    emulator.ghes, emulator.run_name = True, False
    emulator.actions = workflow_build(world, tmp_path)
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        env = {**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url + "/api/v3/", "WHEELPIN_GITHUB_TOKEN": "t"}
        world.commit_upstream("one", NEW_VERSION)
        args = ["reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", "--json"]
        results = [wheelpin(*args, env=env) for _ in range(3)]
        assert all(r.code == 0 for r in results), [r.stdout + r.stderr for r in results]
        assert component(results[-1])["status"] == "nothing"
        assert len(repo.runs) == 1 and len(repo.pulls) == 1
    finally:
        emulator.stop()


@pytest.mark.parametrize("login", [None, "wheelpin-test[bot]"])
def test_an_installation_token_that_may_not_read_its_user_never_dispatches_twice(
    world: World, tmp_path: Path, login: str | None
) -> None:
    """An installation token (or GITHUB_TOKEN) given as WHEELPIN_GITHUB_TOKEN: GET /user
    answers it 403. The dispatch returns no run id and the workflow has no `run-name`. The
    dispatch note is kept (dropped on the 403, every pass would dispatch again); with the
    bot's login given (WHEELPIN_GITHUB_LOGIN) the run is followed."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(
        world, tmp_path, actions=True, token="ghs_9_0", login=login, run_details=False, run_name=False
    ) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        head = world.commit_upstream("one", NEW_VERSION)
        passes = [gh.reconciler.run().components[0] for _ in range(4)]
        assert len(gh.repo.runs) == 1, [p.to_json() for p in passes]
        if login is None:  # by title only: the run is waited for, never dispatched again
            assert all(p.error_kind == "transient" for p in passes), [p.to_json() for p in passes]
            assert "not listed yet" in passes[-1].messages[-1]
        else:
            assert passes[-1].status == "nothing", passes[-1].to_json()
            (pull,) = gh.repo.pulls.values()
            assert head[:8] in pull.title
        validate_recorded(gh.emulator.recorded)


# -- artifacts -------------------------------------------------------------------------------


def test_artifacts_listed_late_and_unarchived(world: World, tmp_path: Path) -> None:
    """The run has completed but GitHub does not list its artifact yet: transient, not a
    failed build. Then the artifact is the wheel itself (upload-artifact `archive: false`)."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, artifact_lag=1, archive=False) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        head = world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        late = gh.reconciler.run().components[0]
        assert late.status == "failed" and late.error_kind == "transient", late.to_json()
        assert "lists no artifact" in late.messages[-1]
        done = gh.reconciler.run().components[0]
        assert [a.kind for a in done.actions] == ["fetch", "publish", "propose"], done.to_json()
        (pull,) = gh.repo.pulls.values()
        assert head[:8] in pull.title


def test_artifacts_still_missing_after_the_grace_fail_the_build(world: World, tmp_path: Path) -> None:
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, artifact_lag=100) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        assert gh.reconciler.actions is not None
        gh.reconciler.actions.artifact_grace = 0.0
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        failed = gh.reconciler.run().components[0]
        assert failed.status == "failed" and "left no wheel" in failed.messages[-1]


def test_every_artifact_of_a_matrix_build_is_taken(world: World, tmp_path: Path) -> None:
    """A matrix build uploads one artifact per job: more than GitHub lists on a page (30
    unless asked, 100 at most). The wheels listed last, on the second page, are taken too
    (reading the first page alone would lose them)."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, archive=False) as gh:
        build = workflow_build(world, tmp_path)
        empty = io.BytesIO()
        zipfile.ZipFile(empty, "w").close()  # a job's artifact with no wheel in it (its logs, say)
        gh.emulator.actions = lambda repo, run: {
            **{f"logs-{n}.zip": empty.getvalue() for n in range(110)},
            **build(repo, run),
        }
        head = world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        done = gh.reconciler.run().components[0]
        assert [a.kind for a in done.actions] == ["fetch", "publish", "propose"], done.to_json()
        (pull,) = gh.repo.pulls.values()
        assert head[:8] in pull.title
        pages = [r for r in gh.emulator.recorded if r.template.endswith("/artifacts")]
        assert len(pages) == 2, [r.path for r in pages]  # 100, then the rest
        validate_recorded(gh.emulator.recorded)


def test_a_run_with_too_many_artifacts_is_refused(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing is read up to a bound (MAX_ARTIFACTS, lowered here), not to its end."""
    from bot.adapters.github import actions

    monkeypatch.setattr(actions, "MAX_ARTIFACTS", 40)
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, archive=False) as gh:
        gh.emulator.actions = lambda repo, run: {f"logs-{n}.zip": b"" for n in range(45)}
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        failed = gh.reconciler.run().components[0]
        assert failed.status == "failed" and "has more than 40 artifacts" in failed.messages[-1], failed.to_json()


# -- errors by what GitHub says ---------------------------------------------------------------


def test_a_dispatch_github_refuses_is_a_config_error_with_its_message(world: World, tmp_path: Path) -> None:
    world.set_config("build = { command = [", WORKFLOW.replace("c = ", "commit = "))
    with on_github(world, tmp_path, actions=True, check_workflows=True) as gh:
        base_commit(gh.repo.path, {".github/workflows/w.yaml": WORKFLOW_FILE.format(run_name="")})
        world.commit_upstream("one", NEW_VERSION)
        result = gh.reconciler.run().components[0]
        assert result.status == "failed" and result.error_kind == "config", result.to_json()
        assert 'Unexpected inputs provided: ["commit"]' in result.messages[-1]
        assert gh.repo.runs == {}
    world.set_config("w.yaml", "missing.yaml")
    with on_github(world, tmp_path / "2", actions=True, check_workflows=True) as gh:
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        result = gh.reconciler.run().components[0]
        assert result.error_kind == "config" and "knows no workflow missing.yaml" in result.messages[-1]


@pytest.mark.parametrize("answer", ["none", "403"])
def test_files_over_a_megabyte_are_read_through_the_blobs_api(world: World, tmp_path: Path, answer: str) -> None:
    with on_github(world, tmp_path, contents_limit=64, large_contents=answer) as gh:
        world.commit_upstream("one", NEW_VERSION)
        result = gh.reconciler.run().components[0]
        assert result.status == "done", result.to_json()
        assert any(r.template.endswith("/git/blobs/{file_sha}") for r in gh.emulator.recorded)


def test_a_configured_path_that_is_a_directory(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path) as gh:
        main = branch_sha(gh.repo.path, "refs/heads/main")
        with pytest.raises(ConfigError, match="docker at .* is a directory"):
            gh.reconciler.platform.read_file(main, "docker")


def test_a_post_whose_answer_was_lost_is_not_written_twice(world: World, tmp_path: Path) -> None:
    """GitHub made the pull request (and the comment) but answered 502: the bot looks before
    writing again, so there is one of each."""
    with on_github(world, tmp_path) as gh:
        gh.emulator.faults.append(Fault("POST", r"/pulls$", 502, land=True))
        world.commit_upstream("one", NEW_VERSION)
        result = gh.reconciler.run().components[0]
        assert len(gh.repo.pulls) == 1, result.to_json()
        assert gh.reconciler.run().components[0].status in ("done", "nothing")
        assert len(gh.repo.pulls) == 1
        gh.emulator.faults.append(Fault("POST", r"/comments$", 502, land=True))
        platform = gh.reconciler.platform
        for _ in range(2):
            try:
                platform.say_once("wheelpin/demo-cache", key="k", text="hello")
            except Exception:
                pass
        (pull,) = gh.repo.pulls.values()
        assert [c for c in pull.comments if "hello" in c] == [pull.comments[-1]] and len(pull.comments) == 1


def test_a_reply_whose_answer_was_lost_is_posted_once(world: World, tmp_path: Path) -> None:
    """GitHub ends a request after 10 s of work with a 502 or 504 ("Troubleshooting the REST
    API", timeouts), and the comment may have landed: the job that posted the reply to a
    command fails and runs again, and finds its reply there instead of posting it twice."""
    with on_github(world, tmp_path) as gh:
        issue = PullRequest(1, "", "", "Dashboard", "", False, is_issue=True)
        gh.repo.pulls[1], gh.repo.next_number = issue, 2
        conversation = GitHubConversation(gh.reconciler.platform)
        gh.emulator.faults.append(Fault("POST", r"/issues/1/comments$", 502, land=True))
        with pytest.raises(TransientError):
            conversation.comment(1, "@maintainer: say which component to build", key="reply-11")
        conversation.comment(1, "@maintainer: say which component to build", key="reply-11")  # the job again
        assert len(issue.comments) == 1 and issue.comments[0].startswith("@maintainer: say which component")
        conversation.comment(1, "@maintainer: say which component to build", key="reply-12")  # asked again
        assert len(issue.comments) == 2


def test_a_branch_and_a_dashboard_whose_answers_were_lost_are_made_once(world: World, tmp_path: Path) -> None:
    """GitHub created the ref (and the dashboard issue) but answered 502: the bot reads
    the branch (the issues) before writing again, so there is one branch and one issue."""
    with on_github(world, tmp_path) as gh:
        gh.emulator.faults.append(Fault("POST", r"/git/refs$", 502, land=True))
        world.commit_upstream("one", NEW_VERSION)
        first = gh.reconciler.run().components[0]
        assert first.status == "done", first.to_json()
        assert gh.reconciler.run().components[0].status == "nothing"
        assert len(gh.repo.pulls) == 1 and branch_sha(gh.repo.path) is not None
        assert isinstance(gh.reconciler.platform, GitHubPlatform)
        conversation = GitHubConversation(gh.reconciler.platform)
        gh.emulator.faults.append(Fault("POST", r"/issues$", 502, land=True))
        numbers = set()
        for _ in range(2):
            try:
                numbers.add(
                    conversation.keep_issue(
                        marker="<!-- wheelpin: dashboard -->",
                        label="wheelpin",
                        title="Dashboard",
                        body="<!-- wheelpin: dashboard -->\nrows",
                    )
                )
            except TransientError:
                pass  # the lost answer: the next call finds what landed
        issues = [p for p in gh.repo.pulls.values() if p.is_issue]
        assert len(issues) == 1 and numbers == {issues[0].number}


# -- rate limits as documented ---------------------------------------------------------------


def test_writes_keep_to_githubs_content_creation_limits(world: World, tmp_path: Path) -> None:
    """80 content-creating requests a minute and 500 an hour (docs "Rate limits for the REST
    API", about secondary rate limits), enforced by the emulator: the adapter paces itself
    under both and is never answered a secondary limit. One clock for both sides, moved on
    only by the adapter's sleeps."""
    clock = Clock()
    with on_github(world, tmp_path, content_limits=(80, 500)) as gh:
        gh.emulator.monotonic = clock.time
        http = GitHubHTTP(sleep=clock.sleep, monotonic=clock.time)
        platform = GitHubPlatform(
            api_url=gh.emulator.url,
            token="t",
            owner="rocm",
            repo="atom",
            author=gh.reconciler.config.defaults.author,
            http=http,
        )
        base = platform.resolve("refs/heads/main")
        assert base is not None
        for number in range(5):  # four writes each: blob, tree, commit, ref
            platform.write_branch(
                f"wheelpin/c{number}", base=base, files={"f": f"{number}\n"}, message="x", expected=None
            )
        issue = platform.client.session.post(platform.url("issues"), json={"title": "t"}).json()["number"]
        comments = platform.url("issues", str(issue), "comments")
        with pytest.raises(TransientError) as paced:
            for number in range(1000):  # the rest of the hour's writes, the cheapest kind
                assert platform.client.session.post(comments, json={"body": str(number)}).status_code == 201
        assert number == 500 - 21  # 20 writes for the branches, one for the issue
        assert "500 writes an hour" in paced.value.message and paced.value.retry_after is not None
        assert gh.emulator.switched == []  # never over either limit
        assert sum(clock.slept) >= 6 * 60  # 500 writes at under 80 a minute
        clock.now += paced.value.retry_after  # the hour over, it writes again
        platform.write_branch("wheelpin/again", base=base, files={"f": "again\n"}, message="x", expected=None)
        assert gh.emulator.switched == []


# -- forks ------------------------------------------------------------------------------------


def test_a_forks_branch_named_like_the_bots_is_never_taken(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path) as gh:
        fork = PullRequest(
            1, "wheelpin/demo-cache", "main", "a fork's", "<!-- wheelpin: {} -->", False, head_repo="rocm/atom-fork"
        )
        gh.repo.pulls[1], gh.repo.next_number = fork, 2
        world.commit_upstream("one", NEW_VERSION)
        assert gh.reconciler.run().components[0].status == "done"
        ours = [p for p in gh.repo.pulls.values() if p.head_repo is None]
        assert len(ours) == 1 and fork.body == "<!-- wheelpin: {} -->"  # the fork's untouched
        assert isinstance(gh.reconciler.platform, GitHubPlatform)
        conversation = GitHubConversation(gh.reconciler.platform)
        assert conversation.pull_target(1) is None  # nor a command's target
        assert list(conversation.open_proposals().values()) == [f"https://github.com/rocm/atom/pull/{ours[0].number}"]


# -- rulesets and signing ---------------------------------------------------------------------


def test_signed_commits_required_the_app_makes_commits_github_signs(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path, app=True, require_signed=True) as gh:
        world.commit_upstream("one", NEW_VERSION)
        assert gh.reconciler.run().components[0].status == "done"
        tip = branch_sha(gh.repo.path)
        assert tip in gh.emulator.signed
        assert git(["log", "-1", "--format=%an", tip], cwd=gh.repo.path).strip() == "wheelpin-test[bot]"
        # the configured identity is kept where GitHub allows it: a Co-authored-by trailer
        trailers = git(["log", "-1", "--format=%(trailers:key=Co-authored-by,valueonly)", tip], cwd=gh.repo.path)
        author = gh.reconciler.config.defaults.author
        assert trailers.strip() == f"{author.name} <{author.email}>"
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        again = gh.reconciler.run().components[0]  # its own signed commit is the bot's, not a human's
        assert again.status == "done", again.to_json()
        validate_recorded(gh.emulator.recorded)


def test_signed_commits_required_an_installation_token_makes_commits_github_signs(world: World, tmp_path: Path) -> None:
    """The Action is handed an installation token (actions/create-github-app-token; prefix
    `ghs_`, docs "About authentication"): it is the App's bot, and GitHub signs its commits
    made with no identity, as it does the service's App's."""
    with on_github(world, tmp_path, token="ghs_7_0", require_signed=True) as gh:
        world.commit_upstream("one", NEW_VERSION)
        done = gh.reconciler.run().components[0]
        assert done.status == "done", done.to_json()
        assert branch_sha(gh.repo.path) in gh.emulator.signed
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        again = gh.reconciler.run().components[0]  # its own signed commit is the bot's, not a human's
        assert again.status == "done", again.to_json()
        assert branch_sha(gh.repo.path) in gh.emulator.signed
        validate_recorded(gh.emulator.recorded)


def test_rules_refusing_a_token_are_said_in_githubs_words(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path, require_signed=True) as gh:
        world.commit_upstream("one", NEW_VERSION)
        failed = gh.reconciler.run().components[0]
        assert failed.status == "failed" and failed.error_kind == "refused"
        assert "Commits must have verified signatures" in failed.messages[-1]
        assert "appeared while" not in failed.messages[-1]
    with on_github(world, tmp_path / "2", no_force_push=True) as gh:
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        assert gh.reconciler.run().components[0].status == "done"
        base_commit(gh.repo.path, {"NOTES": "x\n"})
        world.commit_upstream("three", {"VERSION": "0.1.3\n"})
        refused = gh.reconciler.run().components[0]
        assert "Cannot force-push to this branch" in refused.messages[-1], refused.to_json()


def test_invalid_and_blocked_branch_names(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path) as gh:
        platform = gh.reconciler.platform
        main = branch_sha(gh.repo.path, "refs/heads/main")
        with pytest.raises(ConfigError, match="not a valid branch name"):
            platform.write_branch("wheelpin/bad..name", base=main, files={}, message="m", expected=None)
        git(["update-ref", "refs/heads/wheelpin", main], cwd=gh.repo.path)
        with pytest.raises(ConfigError, match="a branch named wheelpin exists"):
            platform.write_branch("wheelpin/x", base=main, files={}, message="m", expected=None)
        git(["update-ref", "-d", "refs/heads/wheelpin"], cwd=gh.repo.path)
        git(["update-ref", "refs/heads/wheelpin/y", main], cwd=gh.repo.path)
        with pytest.raises(RefusedError, match="appeared while"):
            platform.write_branch("wheelpin/y", base=main, files={}, message="m", expected=None)


# -- small ones -------------------------------------------------------------------------------


def test_labels_compare_without_case(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        (pull,) = gh.repo.pulls.values()
        pull.labels = ["WheelPin"]
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        gh.reconciler.run()
        assert pull.labels == ["WheelPin"]
        assert not [
            r
            for r in gh.emulator.recorded
            if r.method == "POST" and r.template.endswith("/labels") and r.request and "wheelpin" in str(r.request)
        ][1:]


def test_app_jwt_tolerates_a_host_clock_ahead_and_names_a_far_one(tmp_path: Path) -> None:
    """GitHub's clock 30 s behind the host: `iat` a minute back is accepted (github3's
    `iat = now` was refused). Five minutes behind: the refusal names the clocks."""
    from bot.adapters.github import AppCredentials, forget_installation_tokens, installation_repositories
    from bot.core.errors import CredentialsError
    from tests.adapters.test_platform_contract import seed
    from tests.app.worlds import AppKey

    key = AppKey.make()
    server = GitHubEmulator(tmp_path / "gh", tokens=set(), app_id=11, app_public_key=key.public)
    try:
        server.create_repo("rocm", "atom", seed(tmp_path / "seed"))
        app = AppCredentials(11, key.private, server.installations["rocm"])
        server.clock_offset = -30.0
        assert installation_repositories(api_url=server.url, app=app) == ["rocm/atom"]
        server.clock_offset = -300.0
        forget_installation_tokens()  # else the token held from the first call serves: no JWT is sent
        with pytest.raises(CredentialsError, match="clock"):
            installation_repositories(api_url=server.url, app=app)
    finally:
        server.stop()
    assert time.time() > 0


# -- the same, through `wheelpin serve`'s service ------------------------------------------------


def test_the_service_says_what_permission_is_missing_and_does_not_retry_it(world: World, tmp_path: Path) -> None:
    from tests.app.bots import running_bot
    from tests.app.test_service import dashboards, metric

    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.workflows_permission = False
        base_commit(bot.repo.path, {".github/workflows/ci.yaml": "on: push\n"})
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        passes = bot.passes()
        time.sleep(1.0)  # the queue's backoff (0.2 s here) would have run a transient failure again
        bot.idle()
        assert bot.passes() == passes  # a permission error is not retried by itself
        (dashboard,) = dashboards(bot)
        assert "`workflows` permission" in dashboard.body  # type: ignore[attr-defined]
        assert len([c for c in pull.comments if "`workflows` permission" in c]) == 1
        assert metric(bot, "wheelpin_failures_total", kind="transient") == 0
        validate_recorded(bot.emulator.recorded)


def test_the_service_keeps_no_dashboard_where_issues_are_off(world: World, tmp_path: Path) -> None:
    from tests.app.bots import running_bot
    from tests.app.test_service import dashboards

    with running_bot(world, tmp_path) as bot:
        bot.emulator.issues_enabled = False
        for item in list(bot.repo.pulls.values()):
            del bot.repo.pulls[item.number]  # the dashboard made before issues were turned off
        bot.service.watched[bot.repository].dashboard_body = None
        bot.service.watched[bot.repository].dashboard_number = None
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        assert dashboards(bot) == [] and len(bot.pulls()) == 1  # the proposal still made
        assert bot.service.watched[bot.repository].dashboard_off


def test_a_run_github_no_longer_has_is_a_failed_build_not_a_config_error(world: World, tmp_path: Path) -> None:
    """A maintainer deletes the run the bot follows (GitHub answers 404): that build has
    failed, and is retried after its backoff, instead of every pass failing on the 404."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, auto_advance=False) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        (run,) = gh.repo.runs.values()
        del gh.repo.runs[run.id]
        failed = gh.reconciler.run().components[0]
        assert failed.status == "failed" and failed.error_kind != "config", failed.to_json()
        assert "ended: deleted" in failed.messages[-1]
        assert gh.reconciler.run().components[0].actions[0].kind == "report"  # in its backoff: no new run
        assert gh.repo.runs == {}


def test_permissions_granted_the_refused_write_is_made(world: World, tmp_path: Path) -> None:
    """The App lacked `workflows`; the write is refused once and not made again each poll.
    Its owner accepts the new permissions (GitHub's `installation` delivery,
    `new_permissions_accepted`): the bot writes the proposal at once."""
    from tests.app.bots import running_bot
    from tests.fixtures.webhooks import example

    with running_bot(world, tmp_path) as bot:
        world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        bot.emulator.workflows_permission = False
        base_commit(bot.repo.path, {".github/workflows/ci.yaml": "on: push\n"})
        second = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        bot.poll_and_build()
        commits = [r for r in bot.emulator.recorded if r.template.endswith("/git/commits") and r.method == "POST"]
        bot.poll()
        bot.idle()
        assert [
            r for r in bot.emulator.recorded if r.template.endswith("/git/commits") and r.method == "POST"
        ] == commits
        assert second[:8] not in pull.title
        bot.emulator.workflows_permission = True
        payload = example("installation", "new_permissions_accepted")
        payload["installation"] = {
            **payload["installation"],
            "id": bot.emulator.installations["rocm"],
            "account": {**payload["installation"]["account"], "login": "rocm"},
        }
        bot.send("installation", payload)
        bot.idle()
        assert second[:8] in pull.title, pull.title


def test_a_refused_write_is_tried_again_when_what_it_writes_changes(world: World, tmp_path: Path) -> None:
    """Held while nothing changed; the base moving (a human fixed the rule's cause, or not)
    makes it a new write, tried once more; `--retry-failed` tries at once."""
    with on_github(world, tmp_path, no_force_push=True) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        base_commit(gh.repo.path, {"NOTES": "x\n"})
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        assert "Cannot force-push" in gh.reconciler.run().components[0].messages[-1]
        held = gh.reconciler.run().components[0]
        assert held.actions[0].kind == "report" and "not tried again before" in held.messages[-1]
        gh.emulator.no_force_push = False  # the rule is lifted; the base has not moved
        gh.reconciler.retry_failed = True
        assert gh.reconciler.run().components[0].status == "done"


# -- file modes ---------------------------------------------------------------------------------


def base_entry(repo_path: Path, path: str, mode: str, text: str) -> None:
    """A human commit on main that makes `path` an entry of `mode` (a symlink's text is its target)."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        env = {**HUMAN, "GIT_INDEX_FILE": os.path.join(folder, "index")}
        git(["read-tree", "main"], cwd=repo_path, env=env)
        blob = git(["hash-object", "-w", "--stdin"], cwd=repo_path, input=text).strip()
        git(["update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}"], cwd=repo_path, env=env)
        tree = git(["write-tree"], cwd=repo_path, env=env).strip()
        commit = git(["commit-tree", tree, "-p", "main", "-m", f"{path}: {mode}"], cwd=repo_path, env=env).strip()
    git(["update-ref", "refs/heads/main", commit], cwd=repo_path)


def test_a_pinned_file_keeps_its_mode(world: World, tmp_path: Path) -> None:
    """An executable pinned file stays executable on the bot's branch (the git trees API
    gives each entry's mode; the bot wrote every file 100644)."""
    with on_github(world, tmp_path) as gh:
        text = git(["show", "main:docker/Dockerfile"], cwd=gh.repo.path)
        base_entry(gh.repo.path, "docker/Dockerfile", "100755", text)
        world.commit_upstream("one", NEW_VERSION)
        assert gh.reconciler.run().components[0].status == "done"
        listed = git(["ls-tree", branch_sha(gh.repo.path), "--", "docker/Dockerfile"], cwd=gh.repo.path)
        assert listed.startswith("100755 "), listed
        validate_recorded(gh.emulator.recorded)


def test_a_pinned_path_that_is_a_symlink_is_not_written_through(world: World, tmp_path: Path) -> None:
    """GitHub's contents API answers a symlink to a file with that file's content; the bot
    edited it and wrote the text over the link as a plain file. Now: one sentence, no write."""
    with on_github(world, tmp_path) as gh:
        text = git(["show", "main:docker/Dockerfile"], cwd=gh.repo.path)
        base_entry(gh.repo.path, "docker/Dockerfile.real", "100644", text)
        base_entry(gh.repo.path, "docker/Dockerfile", "120000", "Dockerfile.real")
        world.commit_upstream("one", NEW_VERSION)
        result = gh.reconciler.run().components[0]
        assert result.status != "done" and "symbolic link" in result.messages[-1], result.to_json()
        assert not [r for r in gh.emulator.recorded if r.method == "POST" and "/git/" in r.template]
        validate_recorded(gh.emulator.recorded)


def test_a_new_base_branch_moves_the_pull_request_onto_it(world: World, tmp_path: Path) -> None:
    """`defaults.base_branch` changes from main to release: the branch is written on release
    and its pull request is moved there with `base` in "Update a pull request" (OpenAPI
    pulls/update), the only way its base changes: left on main, it would merge release's
    commits into main."""
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        main = git(["rev-parse", "main"], cwd=gh.repo.path).strip()
        dockerfile = git(["show", "main:docker/Dockerfile"], cwd=gh.repo.path)
        release = base_commit(gh.repo.path, {"docker/Dockerfile": dockerfile + "# release only\n"}, "release work")
        git(["update-ref", "refs/heads/release", release], cwd=gh.repo.path)
        git(["update-ref", "refs/heads/main", main], cwd=gh.repo.path)
        world.set_config('base_branch = "main"', 'base_branch = "release"')
        before = gh.reconciler
        gh.reconciler = Reconciler(
            load_config(world.downstream / "wheelpin.toml", root=world.downstream),
            platform=before.platform,
            registries=before.registries,
            cache=before.cache,
            local_commands=before.local_commands,
            attestations=before.attestations,
        )
        moved = gh.reconciler.run().components[0]
        assert moved.status == "done" and moved.messages[0].startswith("updated wheelpin/demo-cache"), moved.to_json()
        (pull,) = gh.repo.pulls.values()
        assert pull.base == "release" and pull.state == "open"
        assert git(["rev-parse", "wheelpin/demo-cache^"], cwd=gh.repo.path).strip() == release
        (patch,) = [r for r in gh.emulator.recorded if r.method == "PATCH" and "/pulls/" in r.path]
        assert patch.request["base"] == "release"
        assert gh.reconciler.run().components[0].status == "nothing"  # and then at rest
        validate_recorded(gh.emulator.recorded)


def age(run: Run, days: float) -> None:
    """A run that ended `days` ago (its artifacts were uploaded then)."""
    run.created_at -= days * 86400
    run.ended_at = (run.ended_at or time.time()) - days * 86400


def test_a_run_whose_artifacts_expired_is_said_so_and_built_again(world: World, tmp_path: Path) -> None:
    """The run followed ended past the repository's artifact retention: GitHub lists its
    artifacts `expired: true`. It is no longer followed: the dry run and the pass both start
    a new build, the pass saying why with the date (not "left no wheel"), and no failure is
    recorded (no backoff)."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, auto_advance=False) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        head = world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        (run,) = gh.repo.runs.values()
        gh.emulator.finish_run(gh.repo, run)
        age(run, 91)
        again = dry_then_real(gh)
        day = time.strftime("%Y-%m-%d", time.gmtime(run.ended_at + 90 * 86400))  # type: ignore[operator]
        assert [a.kind for a in again.actions] == ["build", "wait"] and len(gh.repo.runs) == 2, again.to_json()
        assert again.messages[0].startswith(f"run {run.id}'s artifacts expired on {day} "), again.messages
        assert "left no wheel" not in again.messages[0]
        assert gh.reconciler.state.failure("demo-cache", head) is None  # not a failed build: no backoff
        (new,) = [r for r in gh.repo.runs.values() if r.id != run.id]
        gh.emulator.finish_run(gh.repo, new)
        done = dry_then_real(gh)
        assert [a.kind for a in done.actions] == ["fetch", "publish", "propose"], done.to_json()


def test_wheels_kept_shorter_than_a_log_are_said_expired(world: World, tmp_path: Path) -> None:
    """upload-artifact's `retention-days` kept the wheel 7 days and the build log 90: 30 days
    on, the log is all there is, and the run's wheels are said expired, not "left no wheel"."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, auto_advance=False, archive=False) as gh:
        build, logs = workflow_build(world, tmp_path), io.BytesIO()
        with zipfile.ZipFile(logs, "w") as archive:
            archive.writestr("build.log", "built\n")
        gh.emulator.actions = lambda repo, run: {**build(repo, run), "logs.zip": logs.getvalue()}
        gh.emulator.artifact_retention = {"logs.zip": 90}
        gh.emulator.artifact_retention_days = 7
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        (run,) = gh.repo.runs.values()
        gh.emulator.finish_run(gh.repo, run)
        age(run, 30)
        again = dry_then_real(gh)  # that run is not followed again
        assert again.messages[0].startswith(f"run {run.id}'s artifacts expired on "), again.to_json()
        assert again.actions[0].kind == "build" and len(gh.repo.runs) == 2, again.to_json()


def test_build_from_an_expired_run_is_refused_before_it_is_followed(world: World, tmp_path: Path) -> None:
    """`/wheelpin build --from-run N` naming a run whose artifacts expired: refused with the
    date before the run is followed, so nothing fails later and nothing is recorded."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True) as gh:
        head = world.commit_upstream("one", NEW_VERSION)
        old = Run(gh.emulator.next_id, "w.yaml", "main", {"c": head}, actor="nightly-bot")
        gh.emulator.next_id += 1
        gh.repo.runs[old.id] = old
        gh.emulator.actions = workflow_build(world, tmp_path)
        gh.emulator.finish_run(gh.repo, old)
        age(old, 100)
        (component,) = gh.reconciler.config.components
        with pytest.raises(InputError, match=rf"^run {old.id}'s artifacts expired on \d{{4}}-\d\d-\d\d "):
            gh.reconciler.reuse_run(component, run_id=old.id)
        assert gh.reconciler.state.run_of("demo-cache", head) is None
        validate_recorded(gh.emulator.recorded)

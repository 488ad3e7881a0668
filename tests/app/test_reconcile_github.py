"""The loop on the GitHub platform: draft pull requests through github3.py, builds on
GitHub Actions, all against the GitHub emulator (held to GitHub's OpenAPI description)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests

from bot.adapters.git import git
from bot.adapters.imagestore import LayoutStore
from bot.adapters.provenance import statement_summary
from bot.adapters.publisher import publish
from bot.adapters.referrers import list_referrers, read_document
from bot.commands.reconcile_cmd import exit_code
from bot.core.provenance.statement import PAYLOAD_TYPE
from bot.core.wheel.report import inspect_wheel
from bot.loop.builders.base import BuildPreview
from bot.loop.results import ComponentResult
from tests.app.worlds import HUMAN, NEW_VERSION, OnGitHub, World, base_commit, component, on_github, runner_build
from tests.cli import wheelpin
from tests.fixtures.dryreal import predicted
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.openapi import validate, validate_recorded

WORKFLOW = 'build = { workflow = "w.yaml", inputs = { c = "{sha}" } }\n# was: ['


def workflow_build(world: World, folder: Path):  # type: ignore[no-untyped-def]
    """GitHub Actions, played: the run builds the commit it was given; its wheels are the artifact."""

    def run(repo, run):  # type: ignore[no-untyped-def]
        return {w.name: w.read_bytes() for w in runner_build(world, folder, run.inputs["c"])}

    return run


def dry_then_real(gh: OnGitHub) -> ComponentResult:
    """A dry run, then the pass, the plan held to what the pass did (tests/fixtures/dryreal.py)."""
    dry = gh.reconciler.run(dry_run=True)
    real = gh.reconciler.run()
    predicted(dry.to_json(), real.to_json(), dry_exit=exit_code(dry), real_exit=exit_code(real), proposal=None)
    return real.components[0]


def branch_sha(repo_path: Path, ref: str = "refs/heads/wheelpin/demo-cache") -> str:
    return git(["rev-parse", "--verify", "--quiet", ref], cwd=repo_path, check=False).strip()


def test_open_update_and_leave_as_is(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path) as gh:
        head = world.commit_upstream("one", NEW_VERSION)
        first = gh.reconciler.run()
        assert [a.kind for a in first.components[0].actions] == ["build", "publish", "propose"], first.to_json()
        (pull,) = gh.repo.pulls.values()
        assert pull.draft and head[:8] in pull.title and "<!-- wheelpin: " in pull.body
        assert pull.labels == ["wheelpin"]
        assert gh.reconciler.run().components[0].status == "nothing"
        newer = world.commit_upstream("two", {"requirements.txt": "numpy<=2.2.6\n"})
        assert gh.reconciler.run().components[0].status == "done"
        (pull,) = gh.repo.pulls.values()  # the same pull request, updated in place
        assert newer[:8] in pull.title and "numpy==2.3.5" in pull.body


def test_builds_on_github_actions(world: World, tmp_path: Path) -> None:
    """Dispatched with the full commit, followed across passes (queued → in progress →
    completed), its artifact's wheel verified, published and proposed."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True) as gh:
        built: list[str] = []
        play = workflow_build(world, tmp_path)
        gh.emulator.actions = lambda repo, run: (built.append(run.inputs["c"]), play(repo, run))[1]
        head = world.commit_upstream("one", NEW_VERSION)
        first = gh.reconciler.run().components[0]
        assert [a.kind for a in first.actions] == ["build", "wait"], first.to_json()
        (run,) = gh.repo.runs.values()
        assert run.inputs == {"c": head} and run.ref == "main"  # the full 40-hex commit
        second = gh.reconciler.run().components[0]
        assert [a.kind for a in second.actions] == ["fetch", "publish", "propose"], second.to_json()
        assert built == [head]
        (pull,) = gh.repo.pulls.values()
        assert head[:8] in pull.title
        assert (
            f"Provenance: built by run https://github.com/rocm/atom/actions/runs/{run.id} of w.yaml; "
            "published by wheelpin, its 1 wheel verified first"
        ) in pull.body
        assert gh.reconciler.run().components[0].status == "nothing"
        # a run that fails is reported, and not dispatched again within its backoff
        gh.emulator.actions = lambda repo, run: (_ for _ in ()).throw(RuntimeError("compiler error"))
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        gh.reconciler.run()
        failed = gh.reconciler.run().components[0]
        assert failed.status == "failed" and "ended: failure" in failed.messages[-1]
        assert len(gh.repo.runs) == 2 and gh.reconciler.run().components[0].actions[0].kind == "report"
        kinds = {(r.method, r.template, r.status): r.body for r in gh.emulator.recorded}
        assert any("/actions/" in template for _method, template, _status in kinds)
        for (method, template, status), answer in kinds.items():  # held to GitHub's own schema
            validate(method, template, status, answer)


def _commits_said(gh: OnGitHub) -> str:
    """The "Commits" section of the one pull request's body."""
    (pull,) = gh.repo.pulls.values()
    return pull.body.split("### Commits", 1)[1].split("###", 1)[0]


@pytest.mark.parametrize("again", ["recheck", "backoff-expired"])
def test_a_commit_built_after_a_failed_run_is_not_said_failed(
    world: World, tmp_path: Path, again: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run of the head fails (a runner lost), a later one builds it, asked by
    `/wheelpin recheck` or once the backoff has run out: its failure is forgotten once its
    wheels are fetched, and the pull request proposing it never lists it as failed."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True, auto_advance=False) as gh:
        build, runs = workflow_build(world, tmp_path), []

        def flaky(repo, run):  # type: ignore[no-untyped-def]
            runs.append(run.id)
            if len(runs) == 1:
                raise RuntimeError("runner lost")
            return build(repo, run)

        gh.emulator.actions = flaky
        head = world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        (first,) = gh.repo.runs.values()
        gh.emulator.finish_run(gh.repo, first)
        if again == "backoff-expired":  # the failure recorded two days ago: its backoff is over
            from bot.adapters import statefile

            two_days_ago = time.time() - 2 * 86400
            monkeypatch.setattr(statefile, "time", SimpleNamespace(time=lambda: two_days_ago))
        failed = gh.reconciler.run().components[0]
        monkeypatch.undo()
        assert failed.status == "failed" and "ended: failure" in failed.messages[-1], failed.to_json()
        assert gh.reconciler.state.failure("demo-cache", head) is not None
        dispatched = gh.reconciler.run(recheck=again == "recheck").components[0]
        assert [a.kind for a in dispatched.actions] == ["build", "wait"], dispatched.to_json()
        (second,) = [run for run in gh.repo.runs.values() if run.id != first.id]
        gh.emulator.finish_run(gh.repo, second)
        done = gh.reconciler.run().components[0]
        assert [a.kind for a in done.actions] == ["fetch", "publish", "propose"], done.to_json()
        assert gh.reconciler.state.failure("demo-cache", head) is None  # built: nothing failed stands
        said = _commits_said(gh)
        assert f"`{head[:8]}` one" in said and "❌" not in said and "ended: failure" not in said, said
        assert gh.reconciler.run().components[0].status == "nothing"
        # a failure of it on record all the same (a state file an older wheelpin kept): the
        # proposal, rewritten on a moved base, still never says the commit it pins failed
        gh.reconciler.state.record("demo-cache", head, "build", "build run 99 of it ended: failure")
        dockerfile = git(["show", "main:docker/Dockerfile"], cwd=gh.repo.path)
        base_commit(gh.repo.path, {"docker/Dockerfile": dockerfile + "# a maintainer's unrelated edit\n"})
        rewritten = gh.reconciler.run().components[0]
        assert [a.kind for a in rewritten.actions] == ["propose"], rewritten.to_json()
        assert "❌" not in _commits_said(gh), _commits_said(gh)


def test_the_statement_names_the_run_attempt_that_built_the_wheels(world: World, tmp_path: Path) -> None:
    """A re-run is another attempt of the same run id: the provenance statement attached to
    the image says which attempt built the wheels (SLSA's `runDetails.metadata.invocationId`),
    as `image verify`'s summary reads it back."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True) as gh:
        play = workflow_build(world, tmp_path)
        # the first attempt failed and someone re-ran it: GitHub keeps the id, counts the attempt
        gh.emulator.actions = lambda repo, run: (setattr(run, "attempt", 2), play(repo, run))[1]
        head = world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        assert [a.kind for a in gh.reconciler.run().components[0].actions] == ["fetch", "publish", "propose"]
        (run,) = gh.repo.runs.values()
    layout = LayoutStore(world.root / "images")
    (tag,) = [tag for tag in world.layout_tags() if tag.endswith(head[:8])]
    digest = layout.tag_digest(tag)
    assert digest is not None
    (provenance,) = [item for item in list_referrers(layout, digest) if item.artifact_type == PAYLOAD_TYPE]
    statement = json.loads(read_document(layout, provenance, 1 << 20))
    run_details = statement["predicate"]["runDetails"]
    assert run_details["metadata"] == {"invocationId": f"https://github.com/rocm/atom/actions/runs/{run.id}/attempts/2"}
    assert statement_summary(statement)["invocation"] == run_details["metadata"]["invocationId"]
    build = statement["predicate"]["buildDefinition"]["internalParameters"]["build"]
    assert build == f"run https://github.com/rocm/atom/actions/runs/{run.id} of w.yaml"


@pytest.mark.parametrize("smoke_job", ["success", None, "failure"])
def test_the_smoke_test_is_read_from_the_build_runs_jobs(world: World, tmp_path: Path, smoke_job: str | None) -> None:
    """On GitHub the build workflow smoke-tests the wheels (wheelpin runs no repository
    command on its host): its `smoke` job is read from the run's jobs. No such job is
    said in the proposal; a failed one fails the run, and nothing is published."""
    world.set_config("build = { command = [", WORKFLOW)
    world.set_config(
        'wheel = { distribution = "demo-cache" }',
        'wheel = { distribution = "demo-cache", smoke = "python -c \'import demo_cache\'" }',
    )
    with on_github(world, tmp_path, actions=True, local_commands=False, smoke_job=smoke_job) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        second = gh.reconciler.run().components[0]
        (run,) = gh.repo.runs.values()
        if smoke_job == "failure":
            assert second.status == "failed" and "ended: failure" in second.messages[-1], second.to_json()
            assert not gh.repo.pulls and len(world.layout_tags()) == 1
            return
        (pull,) = gh.repo.pulls.values()
        if smoke_job == "success":
            assert "- ✅ smoke test passed in the build run: smoke (cp312)" in pull.body
        else:
            assert (
                f"### ⚠️ Notes\n- **smoke test: run {run.id} has no job named like smoke, so the wheels were "
                "not smoke-tested**"
            ) in pull.body
            assert second.notes and "no job named like smoke" in second.notes[0]
        validate_recorded(gh.emulator.recorded)


def test_a_dry_run_leaves_the_state_file_as_it_found_it(world: World, tmp_path: Path) -> None:
    """Observing a failed run records the failure and drops the run: in a dry run that
    stays hypothetical, so the real pass after it still finds and reports both."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True) as gh:
        gh.emulator.actions = lambda repo, run: (_ for _ in ()).throw(RuntimeError("compiler error"))
        head = world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()  # dispatched; the run then fails
        state = gh.reconciler.state
        (run_id,) = gh.repo.runs
        assert state.run_of("demo-cache", head) == run_id and state.failure("demo-cache", head) is None
        planned = gh.reconciler.run(dry_run=True).components[0]
        assert planned.status == "planned", planned.to_json()
        assert any("ended: failure" in action.detail for action in planned.actions), planned.to_json()
        assert state.run_of("demo-cache", head) == run_id and state.failure("demo-cache", head) is None
        real = gh.reconciler.run().components[0]
        assert real.status == "failed" and "ended: failure" in real.messages[-1], real.to_json()
        assert state.run_of("demo-cache", head) is None and state.failure("demo-cache", head) is not None


def test_an_image_the_workflow_pushes_is_adopted(world: World, tmp_path: Path) -> None:
    """ATOM's workflow pushes the image itself: the bot dispatches, then finds the image by
    its tag, verifies the wheel inside, and proposes it — it never pushes."""
    world.set_config("build = { command = [", WORKFLOW.replace("} }", "}, publishes_image = true }", 1))
    pushed: list[str] = []

    def push_itself(repo, run):  # type: ignore[no-untyped-def]
        wheels = runner_build(world, tmp_path, run.inputs["c"])
        result = publish(
            LayoutStore(world.root / "images"),
            f"demo-cache-v0.1.1-g{run.inputs['c'][:8]}",
            wheels,
            [inspect_wheel(w) for w in wheels],
        )
        pushed.append(result.digest)
        return {}  # no artifact: the image is the build

    with on_github(world, tmp_path, actions=True, local_commands=False) as gh:
        gh.emulator.actions = push_itself
        world.commit_upstream("one", NEW_VERSION)
        assert [a.kind for a in gh.reconciler.run().components[0].actions] == ["build", "wait"]
        second = gh.reconciler.run().components[0]
        assert [a.kind for a in second.actions] == ["adopt", "propose"], second.to_json()  # verified, then proposed
        (pull,) = gh.repo.pulls.values()
        assert pushed and pushed[0] in pull.body  # the workflow's own image, adopted
        (run,) = gh.repo.runs.values()
        assert (
            f"Provenance: adopted: pushed by run https://github.com/rocm/atom/actions/runs/{run.id} of w.yaml; "
            "wheelpin fetched its 1 wheel and verified them like a build of its own"
        ) in pull.body
        assert len(world.layout_tags()) == 2  # the first pin's and the workflow's: the bot pushed nothing


def maintainer_closes(gh: OnGitHub, number: int, *, delete_branch: bool) -> None:
    """A maintainer's "Close pull request" (PATCH `state: closed`), then, if asked, the
    "Delete branch" button on the closed pull request (DELETE the ref): GitHub deletes a
    head branch by itself only after a merge ("Managing the automatic deletion of branches")."""
    gh.emulator.tokens.add("maintainer")
    headers = {"Authorization": "token maintainer"}
    api = f"{gh.emulator.url}/repos/rocm/atom"
    closed = requests.patch(f"{api}/pulls/{number}", json={"state": "closed"}, headers=headers, timeout=10)
    assert closed.status_code == 200
    if delete_branch:
        gone = requests.delete(f"{api}/git/refs/heads/wheelpin/demo-cache", headers=headers, timeout=10)
        assert gone.status_code == 204


@pytest.mark.parametrize("delete_branch", [False, True], ids=["branch-kept", "branch-deleted"])
def test_a_declined_pull_request_skips_that_commit_only(world: World, tmp_path: Path, delete_branch: bool) -> None:
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        proposed = branch_sha(gh.repo.path)
        maintainer_closes(gh, 1, delete_branch=delete_branch)
        again = gh.reconciler.run().components[0]
        assert again.status == "nothing" and len(gh.repo.pulls) == 1  # that commit is skipped
        # the base moves under the declined proposal: still declined, no second pull request
        dockerfile = git(["show", "main:docker/Dockerfile"], cwd=gh.repo.path)
        base_commit(gh.repo.path, {"docker/Dockerfile": dockerfile + "# a maintainer's unrelated edit\n"})
        moved = gh.reconciler.run().components[0]
        assert moved.status == "nothing" and len(gh.repo.pulls) == 1, moved.to_json()
        assert branch_sha(gh.repo.path) == ("" if delete_branch else proposed)  # not written again
        newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        later = gh.reconciler.run().components[0]
        assert later.status == "done"  # a later one is proposed, in a new pull request
        assert len(gh.repo.pulls) == 2 and newer[:8] in gh.repo.pulls[2].title and gh.repo.pulls[2].state == "open"
        assert gh.repo.pulls[1].state == "closed" and newer[:8] not in gh.repo.pulls[1].title
        assert [m for m in later.messages if m.startswith("opened wheelpin/demo-cache: ")], later.messages


def test_after_a_declined_pull_request_whose_branch_was_kept_the_plan_opens_a_new_one(
    world: World, tmp_path: Path
) -> None:
    """The kept branch of a declined pull request is no open proposal: for a newer commit
    the dry run says it creates one, and the pass writes the branch over and opens a new
    pull request, saying "opened" (tests/fixtures/dryreal.py holds the verbs alike)."""
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        maintainer_closes(gh, 1, delete_branch=False)
        assert dry_then_real(gh).status == "nothing"
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        plan = gh.reconciler.run(dry_run=True).components[0].plan
        assert plan is not None and plan.proposal == "create", plan
        opened = dry_then_real(gh)
        assert opened.messages[-1].startswith("opened wheelpin/demo-cache: "), opened.messages
        assert [p.state for p in gh.repo.pulls.values()] == ["closed", "open"]
        updated = dry_then_real(gh)  # at rest now: the open one is kept
        assert updated.status == "nothing", updated.to_json()


def test_merged_superseded_and_human_edits(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        gh.reconciler.run()
        # a human pushes to the bot's branch: left alone, and said so
        branch = branch_sha(gh.repo.path)
        tree = git(["rev-parse", f"{branch}^{{tree}}"], cwd=gh.repo.path).strip()
        human = git(["commit-tree", tree, "-p", branch, "-m", "tweak"], cwd=gh.repo.path, env=HUMAN).strip()
        git(["update-ref", "refs/heads/wheelpin/demo-cache", human], cwd=gh.repo.path)
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        touched = gh.reconciler.run().components[0]
        assert touched.status == "left-alone" and "did not make" in touched.messages[0]
        assert branch_sha(gh.repo.path) == human
        gh.reconciler.run()  # said on the pull request once, not once a pass
        (pull,) = gh.repo.pulls.values()
        assert [c for c in pull.comments if "leaves this branch alone" in c] and len(pull.comments) == 1
        # the maintainer drops the human commit; the bot updates, then the PR is merged
        git(["update-ref", "refs/heads/wheelpin/demo-cache", branch], cwd=gh.repo.path)
        assert gh.reconciler.run().components[0].status == "done"
        git(["update-ref", "refs/heads/main", branch_sha(gh.repo.path)], cwd=gh.repo.path)  # merged
        pull.state, pull.merged = "closed", True
        after = gh.reconciler.run().components[0]
        assert [a.kind for a in after.actions] == ["close"]  # the branch is tidied away
        assert branch_sha(gh.repo.path) == ""
        assert gh.reconciler.run().components[0].status == "nothing"  # merged: a no-op from now on
        assert git(["tag"], cwd=gh.repo.path) == ""  # and never a tag


def cli_world(world: World) -> None:
    """Absolute paths: the command reads the config from GitHub, not from a checkout."""
    world.set_config('repo = "../upstream"', f'repo = "file://{world.upstream}"')
    world.set_config('"oci:../images"', f'"oci:{world.root / "images"}"')


def test_reconcile_command_on_github(world: World, tmp_path: Path) -> None:
    """`wheelpin reconcile --platform github`: the config read from the repository on GitHub,
    builds on Actions, and a build command never run on the bot's host."""
    cli_world(world)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"ghs_cli"})
    try:
        emulator.create_repo("rocm", "atom", world.downstream)
        env = {**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "ghs_cli"}
        world.commit_upstream("one", NEW_VERSION)
        args = ["reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", "--json"]
        refused = wheelpin(*args, env=env)
        assert refused.code == 1 and "build.command is not run for a repository on GitHub" in refused.stdout
        assert wheelpin("reconcile", "--once", "--platform", "github", env=env).code == 2  # no --github-repo
        no_token = wheelpin(*args, env={**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url})
        assert no_token.code == 2 and "WHEELPIN_GITHUB_TOKEN" in no_token.stderr
        assert not emulator.repos[("rocm", "atom")].runs
        world.set_config("build = { command = [", WORKFLOW)
        repo = emulator.create_repo("rocm", "atom2", world.downstream)
        emulator.actions = workflow_build(world, tmp_path)
        args[args.index("rocm/atom")] = "rocm/atom2"
        assert wheelpin(*args, env=env).code == 0
        second = wheelpin(*args, env=env)
        assert second.code == 0, second.stdout + second.stderr
        assert [a["kind"] for a in component(second)["actions"]] == ["fetch", "publish", "propose"]
        (pull,) = repo.pulls.values()
        assert pull.draft and "<!-- wheelpin: " in pull.body
    finally:
        emulator.stop()


@pytest.mark.parametrize("host", ["github.com", "ghes-without-run-name"])
@pytest.mark.parametrize("crash_after", [1, 2, 3, 4])
def test_killed_between_actions_converges(world: World, tmp_path: Path, crash_after: int, host: str) -> None:
    """`wheelpin reconcile --platform github` killed after each action in turn: the next
    passes converge to one run, one image, one branch, one pull request. Also where a
    dispatch says no run id and no run's title names the commit (GitHub Enterprise Server,
    a workflow without `run-name`): the run is found as the bot's own since the dispatch."""
    cli_world(world)
    world.set_config("build = { command = [", WORKFLOW)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    emulator.actions = workflow_build(world, tmp_path)
    ghes = host != "github.com"
    emulator.ghes, emulator.run_name = ghes, not ghes
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        env = {
            **world.env,
            "WHEELPIN_GITHUB_API_URL": emulator.url + ("/api/v3" if ghes else ""),
            "WHEELPIN_GITHUB_TOKEN": "t",
        }
        head = world.commit_upstream("one", NEW_VERSION)
        args = ["reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", "--json"]
        killed = wheelpin(*args, env=env, crash_after=crash_after)
        assert killed.code in (0, 70), killed.stderr
        for _ in range(4):
            result = wheelpin(*args, env=env)
            assert result.code == 0, result.stdout + result.stderr
        assert component(result)["status"] == "nothing"
        assert len(repo.runs) == 1  # built once
        assert [t for t in world.layout_tags() if head[:8] in t] == [f"demo-cache-v0.1.1-g{head[:8]}"]
        (pull,) = repo.pulls.values()
        assert head[:8] in pull.title and pull.state == "open"
        assert len(git(["log", "--format=%H", "main..wheelpin/demo-cache"], cwd=repo.path).split()) == 1
    finally:
        emulator.stop()


def test_verification_failure_on_github_opens_nothing(world: World, tmp_path: Path) -> None:
    world.set_config('distribution = "demo-cache"', 'distribution = "demo-cache-rocm"')
    with on_github(world, tmp_path) as gh:
        world.commit_upstream("one", NEW_VERSION)
        result = gh.reconciler.run()
        assert result.failed and "expected 'demo-cache-rocm'" in result.components[0].messages[-1]
        assert gh.repo.pulls == {} and branch_sha(gh.repo.path) == "" and len(world.layout_tags()) == 1
        assert result.requests["github_counted"] >= 1  # the pass counts its GitHub requests


def test_installation_repositories(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from bot.adapters.github import AppCredentials, installation_repositories
    from tests.adapters.test_platform_contract import seed

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    server = GitHubEmulator(tmp_path / "gh", tokens=set(), app_id=11, app_public_key=public)
    try:
        for name in ("atom", "sglang"):
            server.create_repo("rocm", name, seed(tmp_path / f"seed-{name}"))
        found = installation_repositories(
            api_url=server.url, app=AppCredentials(11, private, server.installations["rocm"])
        )
        assert found == ["rocm/atom", "rocm/sglang"]
        for record in server.recorded:
            validate(record.method, record.template, record.status, record.body)
    finally:
        server.stop()


def test_a_config_on_github_reaches_nothing_on_the_host(world: World, tmp_path: Path) -> None:
    """Without the operator's WHEELPIN_ALLOW_HOST_PATHS, `reconcile --platform github` refuses a
    tenant's file:// upstream and oci: layout in one sentence each, and reads or writes neither."""
    cli_world(world)
    world.set_config("build = { command = [", WORKFLOW)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    emulator.actions = workflow_build(world, tmp_path)
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        env = {key: value for key, value in world.env.items() if key != "WHEELPIN_ALLOW_HOST_PATHS"}
        env |= {"WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "t"}
        world.commit_upstream("one", NEW_VERSION)
        mirrors = sorted((tmp_path / "cache").glob("upstream/*"))  # the world's own, made locally
        refused = wheelpin("reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", env=env)
        assert refused.code == 2, refused.stdout + refused.stderr
        said = refused.stdout + refused.stderr
        assert "upstream.repo: a config read from GitHub names a remote git URL" in said
        assert "(and 1 more)" in said  # image.repository's oci: folder, also refused
        assert not repo.runs and sorted((tmp_path / "cache").glob("upstream/*")) == mirrors  # never fetched
    finally:
        emulator.stop()


def test_the_plan_on_github_names_the_workflow_and_its_inputs_and_agrees_with_the_pass(
    world: World, tmp_path: Path
) -> None:
    """A dry run dispatches nothing; its plan says the workflow, the ref it runs from and its
    inputs filled, and the pass then dispatches it and waits (tests/fixtures/dryreal.py)."""
    world.set_config("build = { command = [", WORKFLOW)
    with on_github(world, tmp_path, actions=True) as gh:
        gh.emulator.actions = workflow_build(world, tmp_path)
        head = world.commit_upstream("one", NEW_VERSION)
        dry = gh.reconciler.run(dry_run=True)
        plan = dry.components[0].plan
        assert plan is not None and plan.build == BuildPreview(
            "workflow w.yaml", "GitHub Actions, from main", {"c": head}
        )
        assert [a.kind for a in dry.components[0].actions] == ["build", "wait", "fetch", "publish", "propose"]
        assert not gh.repo.runs and exit_code(dry) == 0
        real = gh.reconciler.run()
        predicted(dry.to_json(), real.to_json(), dry_exit=exit_code(dry), real_exit=exit_code(real), proposal=None)
        assert [a.kind for a in real.components[0].actions] == ["build", "wait"]


def test_the_plan_on_github_refuses_a_build_command_as_the_pass_does(world: World, tmp_path: Path) -> None:
    with on_github(world, tmp_path, local_commands=False) as gh:
        world.commit_upstream("one", NEW_VERSION)
        dry = gh.reconciler.run(dry_run=True)
        plan = dry.components[0].plan
        assert plan is not None and plan.fails_at == "build" and exit_code(dry) == 1
        assert "build.command is not run for a repository on GitHub" in plan.refusals[0]
        real = gh.reconciler.run()
        predicted(dry.to_json(), real.to_json(), dry_exit=exit_code(dry), real_exit=exit_code(real), proposal=None)
        assert real.components[0].status == "failed" and not gh.repo.pulls

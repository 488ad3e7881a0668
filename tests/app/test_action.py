"""wheelpin as a GitHub Action: `action.yml` and the example workflow held to
SchemaStore's schemas (as vendored by check-jsonschema), and the action's own steps run
here, in bash, with the environment a runner gives a composite action's steps
(docs.github.com "Variables", default environment variables: GITHUB_REPOSITORY,
GITHUB_API_URL, GITHUB_STEP_SUMMARY, RUNNER_TEMP, GITHUB_ACTION_PATH), against the GitHub
emulator. GitHub's own actions (setup-python, cache restore and save) are not run: the
test's own Python 3.11 stands for setup-python's, keeping RUNNER_TEMP from one run to the
next for the cache, and the key a restore would have matched is given."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.adapters.git import git
from tests.app.test_reconcile_github import WORKFLOW, cli_world, workflow_build
from tests.app.worlds import HUMAN, NEW_VERSION, World
from tests.fixtures.github.emulator import GitHubEmulator

ROOT = Path(__file__).resolve().parent.parent.parent
ACTION = ROOT / "action.yml"
EXAMPLE = ROOT / "deploy" / "github-action.yml"


def schema_check(kind: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", f"vendor.github-{kind}", str(path)],
        capture_output=True,
        text=True,
    )


def test_the_action_and_the_example_workflow_fit_their_published_schemas(tmp_path: Path) -> None:
    assert schema_check("actions", ACTION).returncode == 0, schema_check("actions", ACTION).stdout
    assert schema_check("workflows", EXAMPLE).returncode == 0, schema_check("workflows", EXAMPLE).stdout
    broken = tmp_path / "action.yml"  # the check can fail: an action with no `runs`
    action = yaml.safe_load(ACTION.read_text())
    del action["runs"]
    broken.write_text(yaml.safe_dump(action))
    assert schema_check("actions", broken).returncode == 1
    steps = yaml.safe_load(EXAMPLE.read_text())["jobs"]["reconcile"]["steps"]
    assert any(step.get("uses", "").startswith("actions/create-github-app-token@") for step in steps)


def expand(text: str, context: dict[str, Any]) -> str:
    """`${{ a.b }}` expressions as the runner fills them (only the plain lookups the action uses,
    `steps.ID.outputs.NAME` among them: empty when the step gave no such output)."""

    def value(match: re.Match[str]) -> str:
        scope, _, name = match.group(1).strip().partition(".")
        if scope == "steps":
            step, _, output = name.partition(".outputs.")
            return str(context["steps"].get(step, {}).get(output, ""))
        return str(context[scope][name])

    return re.sub(r"\$\{\{\s*([A-Za-z_.-]+)\s*\}\}", value, text)


def run_action(
    inputs: dict[str, str], *, github: dict[str, str], temp: Path, restored: str = ""
) -> tuple[int, str, dict[str, dict[str, str]]]:
    """The action's `run` steps in order, as a runner runs a composite action's steps; with
    each step's outputs (what it wrote to GITHUB_OUTPUT). `restored`: the key of the state's
    cache entry a restore matched."""
    action = yaml.safe_load(ACTION.read_text())
    given = {name: inputs.get(name, spec.get("default", "")) for name, spec in action["inputs"].items()}
    steps: dict[str, dict[str, str]] = {
        "python": {"python-path": sys.executable},
        "state": {"cache-matched-key": restored},
    }
    context = {
        "inputs": given,
        "github": github,
        "runner": {"temp": str(temp), "os": "Linux", "arch": "X64"},
        "steps": steps,
    }
    summary = temp / "step-summary.md"
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(temp),
        "RUNNER_TEMP": str(temp),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_REPOSITORY": github["repository"],
        "GITHUB_API_URL": github["api_url"],
        "GITHUB_STEP_SUMMARY": str(summary),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "WHEELPIN_ALLOW_HOST_PATHS": "1",  # the world's upstream is a repository on this host
        "WHEELPIN_GITHUB_WRITE_GAP": "0",  # as tests/cli.py's subprocesses: the spacing is tested in-process
    }
    code, output = 0, ""
    for step in action["runs"]["steps"]:
        if "run" not in step:
            continue  # GitHub's own actions/cache: RUNNER_TEMP is kept between the test's runs instead
        written = temp / "github-output"
        written.write_text("")
        env = {
            **base,
            **{key: expand(str(value), context) for key, value in (step.get("env") or {}).items()},
            "GITHUB_OUTPUT": str(written),
        }
        done = subprocess.run(
            [step["shell"], "-e", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=900
        )
        code, output = done.returncode, output + done.stdout + done.stderr  # every step's, as the run's log
        if "id" in step:
            steps[step["id"]] = dict(line.split("=", 1) for line in written.read_text().splitlines() if "=" in line)
        if code:
            break
    return code, output, steps


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RUNNER_TEMP with the action's install step already run (once for the module)."""
    temp = tmp_path_factory.mktemp("runner-temp")
    code, output, _ = run_action(
        {"token": "x"}, github={"repository": "o/n", "api_url": "http://127.0.0.1:9"}, temp=temp
    )
    assert (temp / "wheelpin-venv" / "bin" / "wheelpin").exists(), output
    return temp


def test_the_actions_steps_run_a_pass_and_write_the_runs_summary(world: World, tmp_path: Path, installed: Path) -> None:
    cli_world(world)
    world.set_config("build = { command = [", WORKFLOW)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"ghs_action"})
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        emulator.actions = workflow_build(world, tmp_path)
        github = {"repository": "rocm/atom", "api_url": emulator.url, "run_id": "1", "repository_id": "7"}
        (installed / "step-summary.md").unlink(missing_ok=True)
        head = world.commit_upstream("one", NEW_VERSION)
        unknown = run_action({"token": "ghs_action", "components": "demo-cache, nope"}, github=github, temp=installed)
        assert unknown[0] == 2 and "no component 'nope' (its components: demo-cache)" in unknown[1]
        planned = run_action({"token": "ghs_action", "dry-run": "true"}, github=github, temp=installed)
        assert planned[0] == 0, planned[1]
        assert not repo.runs  # a dry run dispatches nothing
        first = run_action({"token": "ghs_action", "components": " demo-cache "}, github=github, temp=installed)
        assert first[0] == 0, first[1]
        (run,) = repo.runs.values()
        assert run.inputs == {"c": head}
        second = run_action({"token": "ghs_action"}, github=github, temp=installed)  # the next scheduled run
        assert second[0] == 0, second[1]
        (pull,) = repo.pulls.values()
        assert pull.draft and head[:8] in pull.title and len(repo.runs) == 1  # followed, not dispatched again
        summary = (installed / "step-summary.md").read_text()
        passes = summary.split("### wheelpin: ")[1:]
        assert [p.split("\n", 1)[0] for p in passes] == [
            "the plan on `rocm/atom`",
            "a pass on `rocm/atom`",
            "a pass on `rocm/atom`",
        ]
        assert "| demo-cache | 📝 planned |" in passes[0] and "- would build" in passes[0]
        assert "```text\ndemo-cache: would build, wait, fetch, publish, propose\n" in passes[0]  # the plan
        assert f"  build: workflow w.yaml\n    in GitHub Actions, from main\n    input c = {head}\n" in passes[0]
        assert "| demo-cache | ⏳ waiting |" in passes[1] or "| demo-cache | ✅ done |" in passes[1]
        assert f"| demo-cache | ✅ done | `{head[:8]}` |" in passes[2] and "wheelpin/demo-cache" in passes[2]
        assert "Requests: " in passes[2]
        # the state is saved under its content's digest, and only when that changed
        kept = second[2]["changed"]
        assert kept["save"] == "true" and kept["key"].startswith("wheelpin-state-7-"), second[2]
        idle = run_action({"token": "ghs_action"}, github=github, temp=installed, restored=kept["key"])
        assert idle[0] == 0 and idle[2]["changed"] == {"key": kept["key"], "save": "false"}, idle[1]
        # a human pushes to the bot's branch: wheelpin exits 3, which the action warns of, not fails on
        branch = git(["rev-parse", "refs/heads/wheelpin/demo-cache"], cwd=repo.path).strip()
        tree = git(["rev-parse", f"{branch}^{{tree}}"], cwd=repo.path).strip()
        human = git(["commit-tree", tree, "-p", branch, "-m", "tweak"], cwd=repo.path, env=HUMAN).strip()
        git(["update-ref", "refs/heads/wheelpin/demo-cache", human], cwd=repo.path)
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        touched = run_action({"token": "ghs_action"}, github=github, temp=installed)
        assert touched[0] == 0 and "::warning title=wheelpin::a branch a human wrote to was left alone" in touched[1]
        assert "| demo-cache | ✋ left-alone |" in (installed / "step-summary.md").read_text()
    finally:
        emulator.stop()


def uses(action: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The `uses:` steps of an action or a job, by the action they use (`owner/name[/path]`, no ref)."""
    return {step["uses"].split("@")[0]: step for step in action if "uses" in step}


def test_the_action_uses_node24_majors_and_keeps_only_the_state_file() -> None:
    # Node 20 actions are run on Node 24 since June 2026: actions/cache@v5, setup-python@v6
    # and create-github-app-token@v3 (whose `client-id` replaces `app-id`) are Node 24's
    steps = uses(yaml.safe_load(ACTION.read_text())["runs"]["steps"])
    assert {name: step["uses"].split("@")[1] for name, step in steps.items()} == {
        "actions/setup-python": "v6",
        "actions/cache": "v5",
        "actions/cache/restore": "v5",
        "actions/cache/save": "v5",
    }
    example = uses(yaml.safe_load(EXAMPLE.read_text())["jobs"]["reconcile"]["steps"])
    token = example["actions/create-github-app-token"]
    assert token["uses"].endswith("@v3") and set(token["with"]) == {"client-id", "private-key"}
    # the state file alone, keyed by its content: no entry per run (the repository's caches
    # share 10 GB), none for a run that changed nothing
    restore, save = steps["actions/cache/restore"], steps["actions/cache/save"]
    assert restore["with"]["path"] == save["with"]["path"] == "${{ runner.temp }}/wheelpin-cache/state.sqlite"
    text = ACTION.read_text()
    assert "run_id" not in text and "run_attempt" not in text
    assert "steps.changed.outputs.save == 'true'" in save["if"]


def test_the_action_installs_the_locked_dependencies_with_their_hashes() -> None:
    install = next(
        step for step in yaml.safe_load(ACTION.read_text())["runs"]["steps"] if step.get("name") == "Install wheelpin"
    )
    assert "--require-hashes" in install["run"] and "deploy/requirements.lock" in install["run"]
    assert "--no-deps" in install["run"] and install["env"]["PIP_CACHE_DIR"]
    assert install["env"]["WHEELPIN_PYTHON"] == "${{ steps.python.outputs.python-path }}"  # 3.11, not python3


def test_the_token_input_names_every_permission_the_app_asks_for() -> None:
    from bot.adapters.github.appmanifest import PERMISSIONS

    said = " ".join(yaml.safe_load(ACTION.read_text())["inputs"]["token"]["description"].split())
    for name, level in PERMISSIONS.items():
        assert f"{name.replace('_', '-')} {level}" in said, name

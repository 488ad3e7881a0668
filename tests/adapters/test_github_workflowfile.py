"""Checking the workflow a component dispatches: its run-name carries the commit, it can be
dispatched with the inputs the config gives; any text gives sentences, never an exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.adapters.github.workflowfile import (
    MAX_WORKFLOW_BYTES,
    build_warnings,
    components_warnings,
    references_input,
    run_name_warnings,
    workflow_path,
)
from bot.core.config.load import load_config_text
from bot.core.config.model import ActionsBuild, CommandBuild
from tests.cli import wheelpin
from tests.core.config.test_config import GOOD, PINNED

PATH = ".github/workflows/lmcache-rocm-wheel.yaml"
INPUTS = {"lmcache_commit": "{sha}"}

# ATOM's workflow as it should be: dispatched with the commit, titled with it.
GOOD_WORKFLOW = """\
name: LMCache ROCm wheel
run-name: "LMCache wheel for ${{ inputs.lmcache_commit }}"
on:
  workflow_dispatch:
    inputs:
      lmcache_commit:
        description: LMCache commit to build
        required: true
        type: string
      torch_version:
        description: torch to build against
        default: "2.10.0"
  push:
    branches: [main]
jobs:
  build:
    runs-on: [self-hosted, rocm]
    steps:
      - uses: actions/checkout@v4
      - run: ./build.sh "${{ inputs.lmcache_commit }}"
"""

NO_RUN_NAME = GOOD_WORKFLOW.replace('run-name: "LMCache wheel for ${{ inputs.lmcache_commit }}"\n', "")


def warnings_of(text: str, inputs: dict[str, str] | None = None) -> list[str]:
    return run_name_warnings(text, INPUTS if inputs is None else inputs, path=PATH)


def test_a_good_workflow_has_no_warning() -> None:
    assert warnings_of(GOOD_WORKFLOW) == []


def test_no_run_name() -> None:
    (warning,) = warnings_of(NO_RUN_NAME)
    assert warning.startswith(f"{PATH}: the workflow has no run-name")
    assert "titled with the workflow's name" in warning and "GitHub Enterprise Server" in warning
    assert "${{ inputs.lmcache_commit }}" in warning  # the fix, spelled out


def with_run_name(run_name: str) -> str:
    """The good workflow with its run-name line's value replaced by `run_name` (YAML text)."""
    return GOOD_WORKFLOW.replace('"LMCache wheel for ${{ inputs.lmcache_commit }}"', run_name)


@pytest.mark.parametrize("run_name", ['""', '"   "', "", "~"])
def test_an_empty_run_name_is_no_run_name(run_name: str) -> None:
    text = with_run_name(run_name)
    (warning,) = warnings_of(text)
    assert "has no run-name" in warning


@pytest.mark.parametrize(
    "run_name",
    [
        "Build ${{ inputs.lmcache_commit }}",
        "Build ${{inputs.lmcache_commit}}",
        "Build ${{ github.event.inputs.lmcache_commit }}",
        "Build ${{ inputs['lmcache_commit'] }}",
        "${{ format('wheel {0} by {1}', inputs.lmcache_commit, github.actor) }}",
        "Build ${{ INPUTS.LMCache_Commit }}",
    ],
)
def test_run_names_that_carry_the_commit(run_name: str) -> None:
    text = with_run_name(json.dumps(run_name))
    assert warnings_of(text) == []


@pytest.mark.parametrize(
    "run_name",
    [
        "LMCache wheel",  # no expression at all
        "Build inputs.lmcache_commit",  # not inside ${{ }}
        "Build ${{ inputs.torch_version }}",  # another input
        "Build ${{ inputs.lmcache_commit_short }}",  # a longer name
        "Build ${{ github.sha }}",  # the workflow's commit, not LMCache's
        "Build ${{ myinputs.lmcache_commit }}",
    ],
)
def test_run_names_that_do_not(run_name: str) -> None:
    text = with_run_name(json.dumps(run_name))
    (warning,) = warnings_of(text)
    assert f"run-name {run_name!r} does not reference inputs.lmcache_commit" in warning


def test_the_input_given_sha_is_the_one_to_reference() -> None:
    inputs = {"torch_version": "2.10.0", "lmcache_commit": "v{sha}"}
    assert warnings_of(GOOD_WORKFLOW, inputs) == []
    # only {sha8}: the title could not carry the full commit the run is looked up by
    (warning,) = warnings_of(GOOD_WORKFLOW, {"lmcache_commit": "{sha8}"})
    assert "no value of build.inputs carries the full commit {sha}" in warning


def test_run_name_not_a_string() -> None:
    text = with_run_name("[a, b]")
    (warning,) = warnings_of(text)
    assert "run-name is a YAML list, not a string" in warning


@pytest.mark.parametrize(
    "on",
    [
        "on: workflow_dispatch",
        "on: [push, workflow_dispatch]",
        "on:\n  - push\n  - workflow_dispatch",
        "on:\n  workflow_dispatch:",
        "on:\n  workflow_dispatch: {}",
        '"on":\n  workflow_dispatch:\n',
        "true:\n  workflow_dispatch:\n",
    ],
)
def test_every_way_of_writing_on_without_inputs(on: str) -> None:
    text = f"name: wheel\nrun-name: ${{{{ inputs.lmcache_commit }}}}\n{on}\njobs: {{}}\n"
    # a dispatch trigger is found, but it declares no input: the one given is refused
    (warning,) = warnings_of(text)
    assert "build.inputs gives 'lmcache_commit', which workflow_dispatch.inputs does not declare" in warning
    assert "Unexpected inputs provided" in warning
    assert warnings_of(text, {}) == [
        f"{PATH}: no value of build.inputs carries the full commit {{sha}}, "
        "so the run-name cannot put it in the run's title, so on GitHub "
        "Enterprise Server, which does not say which run a dispatch "
        "started, wheelpin cannot find its run"
    ]


@pytest.mark.parametrize(
    "on",
    [
        "on: push",
        "on: [push, pull_request]",
        "on:\n  push:\n    branches: [main]\n  schedule:\n    - cron: '0 * * * *'",
        "",
    ],
)
def test_no_workflow_dispatch_trigger(on: str) -> None:
    text = f"name: wheel\nrun-name: ${{{{ inputs.lmcache_commit }}}}\n{on}\njobs: {{}}\n"
    (warning,) = warnings_of(text)
    assert warning == (
        f"{PATH}: the workflow has no workflow_dispatch trigger under on:, so GitHub refuses to dispatch it (422)"
    )


def test_every_problem_is_said_at_once() -> None:
    text = "name: wheel\non:\n  workflow_dispatch:\n    inputs:\n      other: {required: true}\njobs: {}\n"
    warnings = warnings_of(text, {"lmcache_commit": "{sha}", "hip": "1"})
    assert len(warnings) == 4
    assert "'lmcache_commit', which workflow_dispatch.inputs does not declare" in warnings[0]
    assert "'hip', which workflow_dispatch.inputs does not declare" in warnings[1]
    assert "workflow_dispatch.inputs.other is required and has no default" in warnings[2]
    assert "has no run-name" in warnings[3]


def test_a_required_input_with_a_default_needs_nothing() -> None:
    text = GOOD_WORKFLOW.replace('default: "2.10.0"', 'default: "2.10.0"\n        required: true')
    assert warnings_of(text) == []


def test_more_than_25_inputs() -> None:
    declared = "".join(f"      in{number}:\n        type: string\n" for number in range(26))
    text = "run-name: ${{ inputs.in0 }}\non:\n  workflow_dispatch:\n    inputs:\n" + declared + "jobs: {}\n"
    (warning,) = warnings_of(text, {"in0": "{sha}"})
    assert warning == f"{PATH}: workflow_dispatch declares 26 inputs, but GitHub allows at most 25"
    given_ = {f"in{number}": "{sha}" for number in range(26)}
    short = text.replace("      in25:\n        type: string\n", "")
    warnings = warnings_of(short, given_)
    assert warnings[0] == f"{PATH}: build.inputs gives 26 inputs, but a dispatch takes at most 25"
    assert "'in25', which workflow_dispatch.inputs does not declare" in warnings[1]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: [unclosed\n", "is not valid YAML"),
        ("on:\n  workflow_dispatch:\n\tinputs: {}\n", "is not valid YAML"),
        ("a: 2020-13-45\n", "is not valid YAML"),
        ("a: !!python/object:os.system ls\n", "is not valid YAML"),
        ("- just\n- a list\n", "is a YAML list, not a mapping"),
        ("just a string\n", "is a YAML string, not a mapping"),
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("on:\n  workflow_dispatch: [a]\n", "workflow_dispatch is a YAML list, not a mapping"),
        ("on:\n  workflow_dispatch:\n    inputs: [a]\n", "workflow_dispatch.inputs is a YAML list"),
    ],
)
def test_bad_workflows_are_one_sentence(text: str, words: str) -> None:
    warnings = warnings_of(text)
    assert warnings and words in warnings[0]
    assert warnings[0].startswith(f"{PATH}: ") and "\n" not in warnings[0]


def test_deep_nesting_is_a_sentence() -> None:
    (warning,) = warnings_of("a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert "is not valid YAML" in warning


def test_over_one_mebibyte_is_refused_unparsed() -> None:
    text = GOOD_WORKFLOW + "#" * MAX_WORKFLOW_BYTES
    (warning,) = warnings_of(text)
    assert warning == (
        f"{PATH}: the workflow file is larger than wheelpin's limit of 1 MiB "
        f"({MAX_WORKFLOW_BYTES} bytes), so it was not checked"
    )
    # counted in bytes: 300 000 four-byte characters are over it, though fewer characters
    (warning,) = warnings_of("# " + "\U0001f600" * 300_000 + "\n")
    assert "larger than wheelpin's limit" in warning


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("on:workflow_dispatch inputs-[]{}'\"!&*|>#%@`,?\n\t $.")), max_size=200))
def test_any_text_gives_sentences(text: str) -> None:
    for warning in warnings_of(text):
        assert warning.startswith(f"{PATH}: ") and "\n" not in warning


def test_references_input() -> None:
    assert references_input("x ${{ inputs.a-b }} y", "a-b")
    assert not references_input("x ${{ inputs.a-bc }} y", "a-b")
    assert references_input('${{ inputs["c"] }}', "c")
    assert not references_input("${{ steps.inputs.c }}", "c")


@pytest.mark.parametrize(
    ("workflow", "path"),
    [
        ("lmcache-rocm-wheel.yaml", ".github/workflows/lmcache-rocm-wheel.yaml"),
        ("build.yml", ".github/workflows/build.yml"),
        ("161335", None),
        ("../secrets.yml", None),
        ("sub/x.yml", None),
        ("build", None),
    ],
)
def test_workflow_path(workflow: str, path: str | None) -> None:
    assert workflow_path(workflow) == path


def test_build_warnings_reads_through_the_callback() -> None:
    build = ActionsBuild(workflow="lmcache-rocm-wheel.yaml", inputs=INPUTS)
    files = {PATH: NO_RUN_NAME}
    (warning,) = build_warnings(build, files.get, where="rocm/atom at main")
    assert "has no run-name" in warning
    (missing,) = build_warnings(build, {}.get, where="rocm/atom at main")
    assert missing.startswith(f"{PATH} does not exist in rocm/atom at main")
    assert build_warnings(CommandBuild(command="make"), files.get, where="x") == []
    (by_id,) = build_warnings(ActionsBuild(workflow="161335", inputs=INPUTS), files.get, where="x")
    assert "is not a file name in .github/workflows/" in by_id

    def unreadable(path: str) -> str | None:
        raise PermissionError(13, "Permission denied", path)

    (refused,) = build_warnings(build, unreadable, where="x")
    assert refused == f"{PATH}: cannot be read (Permission denied), so its run-name and inputs were not checked"


# `wheelpin config validate`: the warnings on stderr (or in the JSON), the exit code unchanged


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker/Dockerfile").write_text(PINNED)  # pinned as GOOD says: validate reads the pins
    (tmp_path / "docker/atom_release.dockerfile").write_text(PINNED)
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / ".github/wheelpin.toml").write_text(GOOD)
    return tmp_path


def test_validate_warns_of_a_workflow_without_run_name(repo: Path) -> None:
    (repo / PATH).write_text(NO_RUN_NAME)
    result = wheelpin("config", "validate", "--repo", str(repo))
    assert result.code == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert line.startswith(f"warning: component lmcache: {PATH}: the workflow has no run-name")
    assert "valid, 1 component(s): lmcache" in result.stdout
    # found from the config's path too: the repository is the folder above .github/
    by_path = wheelpin("config", "validate", str(repo / ".github/wheelpin.toml"))
    assert by_path.code == 0 and "warning: component lmcache:" in by_path.stderr


def test_validate_json_lists_the_warnings(repo: Path) -> None:
    (repo / PATH).write_text(NO_RUN_NAME.replace("      lmcache_commit:", "      commit:"))
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 0, result.stderr
    document = result.json()
    assert document["valid"] is True and document["problems"] == []
    assert len(document["warnings"]) == 3
    assert "'lmcache_commit', which workflow_dispatch.inputs does not declare" in document["warnings"][0]
    assert "workflow_dispatch.inputs.commit is required" in document["warnings"][1]
    assert "has no run-name" in document["warnings"][2]
    assert "warning:" not in result.stderr


def test_validate_a_good_workflow_says_nothing(repo: Path) -> None:
    (repo / PATH).write_text(GOOD_WORKFLOW)
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 0 and result.json()["warnings"] == []
    text = wheelpin("config", "validate", "--repo", str(repo))
    assert text.code == 0 and "warning" not in text.stderr


def test_validate_a_missing_workflow_is_a_warning(repo: Path) -> None:
    result = wheelpin("config", "validate", "--repo", str(repo))
    assert result.code == 0
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert f"{PATH} does not exist in {repo}" in line


def test_validate_an_unreadable_or_huge_workflow_is_a_warning(repo: Path) -> None:
    (repo / PATH).write_bytes(b"name: \xff\xfe\n")
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 0 and "is not UTF-8 text" in result.json()["warnings"][0]
    (repo / PATH).write_bytes(GOOD_WORKFLOW.encode() + b"#" * (MAX_WORKFLOW_BYTES + 10) + b"\xff")
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 0 and "larger than wheelpin's limit of 1 MiB" in result.json()["warnings"][0]
    (repo / PATH).unlink()
    (repo / PATH).mkdir()
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 0 and "cannot be read (Is a directory)" in result.json()["warnings"][0]


def test_an_invalid_config_has_no_warnings_to_give(repo: Path) -> None:
    (repo / ".github/wheelpin.toml").write_text(GOOD.replace('"gfx950"]', '"gfx9500"]'))
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 2 and result.json()["warnings"] == []


SECOND = (
    GOOD.replace('name = "lmcache"', 'name = "lmcache-nightly"')
    .replace('branch = "dev"', 'branch = "nightly"')
    .replace("lmcache-v{version_base}", "lmcache-nightly-v{version_base}")
    .replace("LMCACHE_WHEEL_", "LMCACHE_NIGHTLY_WHEEL_")  # a pin site belongs to one component
)
SECOND_PINNED = PINNED.replace("LMCACHE_WHEEL_", "LMCACHE_NIGHTLY_WHEEL_")


def test_validate_warns_of_a_workflow_two_components_share_without_the_commit_in_its_title(repo: Path) -> None:
    """Where GitHub does not return a dispatch's run id (Enterprise Server), a run is found
    by its title carrying the commit, else as the bot's oldest unclaimed run since the
    dispatch: two components on one untitled workflow could follow each other's run."""
    (repo / ".github/wheelpin.toml").write_text(GOOD + "\n" + SECOND)
    for dockerfile in ("docker/Dockerfile", "docker/atom_release.dockerfile"):
        (repo / dockerfile).write_text(PINNED + SECOND_PINNED)
    (repo / PATH).write_text(NO_RUN_NAME)
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 0, result.stderr
    shared = [w for w in result.json()["warnings"] if "dispatch the same workflow" in w]
    assert shared == [
        "components lmcache, lmcache-nightly dispatch the same workflow lmcache-rocm-wheel.yaml, "
        "whose runs' titles do not carry the commit: on GitHub Enterprise Server a pass stopped right "
        "after a dispatch may follow another component's run; give the workflow a run-name carrying "
        "the commit input, or each component a workflow of its own"
    ]
    assert sum("has no run-name" in w for w in result.json()["warnings"]) == 2  # each component's own
    (repo / PATH).write_text(GOOD_WORKFLOW)  # titled with the commit: sharing is safe
    warnings = wheelpin("config", "validate", "--repo", str(repo), "--json").json()["warnings"]
    assert [w for w in warnings if "the first bump replaces it" not in w] == []  # SECOND's pin holds lmcache's tag


def test_each_workflow_file_is_read_once() -> None:
    loaded = load_config_text(GOOD + "\n" + SECOND, path=Path("wheelpin.toml"), root=Path("."), exists=None)
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return NO_RUN_NAME

    found = components_warnings(loaded.config.components, read, where="rocm/atom at main")
    assert reads == [PATH] and [names for names, _ in found] == [
        ("lmcache",),
        ("lmcache-nightly",),
        ("lmcache", "lmcache-nightly"),
    ]

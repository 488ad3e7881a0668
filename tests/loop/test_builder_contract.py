"""Every build kind of the registry (bot/loop/builders/api.py) meets the `Builder` contract:
its `build` table parses with and without `kind`, its factory makes a builder, that
builder's preview names what it runs, and a build of a real commit yields its wheels in
the build cache — `command` run in a checkout of a real git upstream, `github-actions`
dispatched to the GitHub emulator (tests/fixtures/github), which plays Actions. A new
kind adds its entry to `EXAMPLES` and to `built`, and passes the same tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.adapters.git import git
from bot.adapters.github import ActionsClient, GitHubPlatform
from bot.adapters.statefile import open_state
from bot.adapters.upstream import UpstreamRepo
from bot.core.config.load import ConfigInvalid, load_config_text
from bot.core.config.model import BUILD_KINDS, Author, Component, json_schema
from bot.core.decide.plan import BuildState
from bot.loop.builders.api import BUILDERS
from bot.loop.builders.base import BuildSite
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.wheels import build_wheel

KINDS = sorted(BUILDERS)
WHO = ["-c", "user.name=t", "-c", "user.email=t@example.org"]


@dataclass(frozen=True)
class Example:
    table: dict[str, Any]  # the kind's `build` table as configs wrote it before kinds: no `kind`
    runs: str  # what its preview says it runs


EXAMPLES = {
    "command": Example(
        {"command": ["cp", "wheels/demo_cache-1.0-py3-none-any.whl", "{out}"]},
        "cp wheels/demo_cache-1.0-py3-none-any.whl ",
    ),
    "github-actions": Example({"workflow": "build-demo.yml", "inputs": {"commit": "{sha}"}}, "workflow build-demo.yml"),
}


def component(build: dict[str, Any], upstream: str = "https://example.org/demo.git") -> Component:
    return Component.model_validate(
        {
            "name": "demo-cache",
            "upstream": {"repo": upstream, "branch": "main"},
            "wheel": {"distribution": "demo-cache"},
            "build": build,
            "image": {"repository": "oci:/nowhere", "tag": "v{sha8}"},
            "pins": [{"file": "Dockerfile", "image_arg": "IMG"}],
        }
    )


def repository(folder: Path, wheel: Path) -> str:
    """A git repository holding `wheel` under wheels/; its head commit."""
    (folder / "wheels").mkdir(parents=True)
    (folder / "wheels" / wheel.name).write_bytes(wheel.read_bytes())
    git(["init", "--quiet", "--initial-branch=main"], cwd=folder)
    git(["add", "-A"], cwd=folder)
    git([*WHO, "commit", "--quiet", "-m", "one"], cwd=folder)
    return git(["rev-parse", "HEAD"], cwd=folder).strip()


@dataclass
class Built:
    component: Component
    site: BuildSite
    commit: str
    invocation: str | None = None  # the pattern of the run attempt its builds name (None: no CI run)


@contextmanager
def built(kind: str, tmp_path: Path, wheel: Path) -> Iterator[Built]:
    """A component of `kind` and the site its builder works in, real parts behind them."""
    cache = tmp_path / "cache"
    state = open_state(cache)
    if kind == "command":
        commit = repository(tmp_path / "upstream", wheel)
        made = component(EXAMPLES[kind].table, str(tmp_path / "upstream"))
        upstream = UpstreamRepo(made.upstream, cache=cache, root=tmp_path)
        yield Built(made, BuildSite(cache, upstream, state, "main"), commit)
        return
    assert kind == "github-actions", f"{kind}: say here how a build of it is made"
    server = GitHubEmulator(tmp_path / "gh", tokens={"t"})
    server.actions = lambda repo, run: {wheel.name: wheel.read_bytes()}  # the workflow uploads the wheel
    try:
        repository(tmp_path / "downstream", wheel)
        server.create_repo("rocm", "atom", tmp_path / "downstream")
        platform = GitHubPlatform(
            api_url=server.url,
            token="t",
            owner="rocm",
            repo="atom",
            author=Author(name="wheelpin[bot]", email="bot@example.org"),
        )
        made = component(EXAMPLES[kind].table)
        upstream = UpstreamRepo(made.upstream, cache=cache, root=tmp_path)
        yield Built(
            made,
            BuildSite(cache, upstream, state, "main", local_commands=False, actions=ActionsClient(platform)),
            "3d3aa833" + "0" * 32,
            r"https://github\.com/rocm/atom/actions/runs/\d+/attempts/1",
        )
    finally:
        server.stop()


def test_the_registry_and_the_config_know_the_same_kinds() -> None:
    assert set(BUILDERS) == set(BUILD_KINDS) == set(EXAMPLES)


@pytest.mark.parametrize("kind", KINDS)
def test_its_build_table_parses_with_and_without_kind(kind: str) -> None:
    schema = json_schema()
    build_schema = {**schema["$defs"]["Component"]["properties"]["build"], "$defs": schema["$defs"]}
    for table in (EXAMPLES[kind].table, {"kind": kind, **EXAMPLES[kind].table}):
        build = component(table).build
        assert isinstance(build, BUILD_KINDS[kind]) and build.kind == kind
        jsonschema.validate(table, build_schema)  # as taplo and editors check it: one kind of the union
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**EXAMPLES[kind].table, "kind": "no-such-kind"}, build_schema)


@pytest.mark.parametrize("kind", KINDS)
def test_its_builder_previews_then_builds_the_wheels(kind: str, tmp_path: Path) -> None:
    wheel = build_wheel(
        tmp_path / "made", name="demo-cache", version="1.0", files={"demo_cache/__init__.py": b"X = 1\n"}
    )
    with built(kind, tmp_path, wheel) as world:
        builder = BUILDERS[kind](world.component, world.site)
        preview = builder.preview(world.commit)
        assert preview.runs.startswith(EXAMPLES[kind].runs) and preview.refusal is None
        assert builder.status(world.commit).state == BuildState.NONE
        builder.start(world.commit)
        for _look in range(5):  # an asynchronous build is looked at until it ends
            seen = builder.status(world.commit)
            if seen.state not in (BuildState.NONE, BuildState.RUNNING):
                break
        assert seen.state in (BuildState.READY, BuildState.SUCCEEDED), seen
        assert seen.asynchronous == builder.asynchronous  # an asynchronous kind says where it runs, for the wait
        assert seen.where if builder.asynchronous else True
        wheels = builder.collect(world.commit)
        assert [(w.name, w.read_bytes()) for w in wheels] == [(wheel.name, wheel.read_bytes())]
        assert builder.status(world.commit).state == BuildState.READY
        assert builder.describe(world.commit)
        # a CI run's attempt for the provenance statement (SLSA invocationId); a local build has none
        invocation = builder.invocation(world.commit)
        assert invocation is None if world.invocation is None else re.fullmatch(world.invocation, invocation or "")
        builder.release(world.commit)
        assert not any(path.exists() for path in wheels)


@pytest.mark.parametrize(
    ("build", "said"),
    [
        (
            '{ command = "make", workflow = "w.yml" }',
            "lmcache.build: give exactly one of build.command or build.workflow",
        ),
        ("{ timeout_minutes = 5 }", "lmcache.build: give exactly one of build.command or build.workflow"),
        (
            '{ kind = "buildkite", pipeline = "p" }',
            "lmcache.build.kind: 'buildkite' is not a build kind (command, github-actions)",
        ),
        (
            '{ kind = ["command"], command = "make" }',
            "lmcache.build.kind: ['command'] is not a build kind (command, github-actions)",
        ),
        (
            '{ command = "make", inputs = { c = "{sha}" } }',
            "lmcache.build: build.inputs and build.publishes_image go with build.workflow",
        ),
        (
            '{ kind = "github-actions", workflow = "w.yml", publishes_imag = true }',
            "lmcache.build.publishes_imag: unknown key, did you mean `publishes_image`?",
        ),
    ],
)
def test_a_build_table_no_kind_fits_is_refused_in_one_located_sentence(build: str, said: str) -> None:
    text = (
        '[[component]]\nname = "lmcache"\nupstream = { repo = "https://example.org/u.git", branch = "main" }\n'
        f'wheel = {{ distribution = "lmcache" }}\nbuild = {build}\n'
        'image = { repository = "oci:/nowhere", tag = "v{sha8}" }\n'
        'pins = [{ file = "Dockerfile", image_arg = "IMG" }]\n'
    )
    with pytest.raises(ConfigInvalid) as refused:
        load_config_text(text, path=Path("wheelpin.toml"), root=Path("."), exists=None)
    assert refused.value.problems == [f"wheelpin.toml:5: {said}"]

"""`config validate --online` against the real things a pass speaks to: a git upstream on
disk, Debian's `docker-registry` on loopback (plain, and with htpasswd auth), a closed
loopback port for a registry or upstream that refuses the connection. Each failing case is
a config offline `config validate` accepts; the sentence it gets is written out in full."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from tests.adapters.test_consumer import push_busybox
from tests.app.worlds import World, make_world
from tests.cli import Result, wheelpin
from tests.fixtures.servers import Registry, free_port

ZEROS = "sha256:" + "0" * 64


@pytest.fixture()
def world(tmp_path: Path, registry: Registry) -> World:
    """The demo's upstream and downstream, its first wheel image pushed to the real registry."""
    return make_world(tmp_path, registry=f"{registry.host}/online-{uuid.uuid4().hex[:8]}/demo-cache")


def validate(world: World, *args: str) -> Result:
    return wheelpin("config", "validate", "--repo", str(world.downstream), *args, env=world.env)


def edit(world: World, file: str, old: str, new: str) -> None:
    """Change the working tree (validate reads it there): `old` must be in `file`."""
    path = world.downstream / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))


def pinned(world: World) -> str:
    """The reference the downstream pins, `host/path:tag@sha256:…`."""
    line = next(
        line
        for line in (world.downstream / "docker/Dockerfile").read_text().splitlines()
        if line.startswith("ARG DEMO_WHEEL_IMAGE=")
    )
    return line.split("=", 1)[1].strip('"')


def repository(world: World) -> str:
    return pinned(world).split(":")[0] + ":" + pinned(world).split(":")[1]


def sentences(result: Result, outcome: str) -> list[str]:
    return [check["sentence"] for check in result.json()["online"]["checks"] if check["outcome"] == outcome]


def assert_offline_valid(world: World) -> None:
    offline = validate(world)
    assert offline.code == 0, offline.stderr


def test_a_good_config_answers_every_check(world: World, registry: Registry) -> None:
    base = push_busybox(registry)
    with (world.downstream / "wheelpin.toml").open("a") as config:
        config.write(f'consumer = {{ image = "{registry.host}/base/busybox@{base}" }}\n')
    result = validate(world, "--online")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"demo-cache: the upstream {world.upstream} answered git ls-remote: branch main at ")
    assert lines[1] == (
        f"demo-cache: the registry {registry.host} answered the tag list of {repository(world)} (1 tag(s))"
    )
    image = pinned(world)
    digest = image.split("@")[1]
    assert lines[2].startswith(
        f"demo-cache: docker/Dockerfile:2: the pinned image {repository(world)}@{digest} is "
        "readable: demo-cache 0.1.0+g"
    )
    assert lines[2].endswith(" (from its annotations)")
    assert lines[3] == (
        f"demo-cache: the consuming image {registry.host}/base/busybox@{base} resolves to "
        f"{registry.host}/base/busybox@{base} (1 layer(s), read by the pass)"
    )
    assert (
        lines[4] == f"{world.downstream}/wheelpin.toml: valid, 1 component(s): demo-cache; 4 online check(s) answered"
    )
    document = validate(world, "--online", "--json").json()
    assert document["valid"] is True and document["problems"] == []
    assert document["online"]["answered"] is True
    assert [(c["check"], c["outcome"]) for c in document["online"]["checks"]] == [
        ("upstream", "ok"),
        ("registry", "ok"),
        ("pinned", "ok"),
        ("consumer", "ok"),
    ]


def test_without_online_nothing_is_asked(world: World) -> None:
    """Offline validate stays offline: a config whose registry is a closed port is valid."""
    closed = f"127.0.0.1:{free_port()}"
    host = repository(world).split("/")[0]
    edit(world, "wheelpin.toml", host, closed)
    edit(world, "docker/Dockerfile", host, closed)
    result = validate(world, "--json")
    assert result.code == 0, result.stderr
    assert "online" not in result.json()


def test_a_branch_the_upstream_lacks(world: World) -> None:
    edit(world, "wheelpin.toml", 'branch = "main" }', 'branch = "mian" }')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: the upstream {world.upstream} has no branch mian (upstream.branch)"
    ]
    assert result.json()["problems"] == sentences(result, "problem") and result.json()["valid"] is False


def test_a_tag_pattern_no_tag_matches(world: World) -> None:
    edit(world, "wheelpin.toml", 'branch = "main" }', 'tags = "v*" }')
    assert_offline_valid(world)
    result = validate(world, "--online")
    assert result.code == 2
    assert result.stderr.splitlines() == [
        f"demo-cache: no tag of the upstream {world.upstream} matches v* (upstream.tags)",
        f"wheelpin: {world.downstream}/wheelpin.toml: 1 problem(s) online",
    ]


def test_an_upstream_folder_that_is_no_repository(world: World, tmp_path: Path) -> None:
    """A folder here cannot be a passing fault: a problem (2), not "try again" (4)."""
    (tmp_path / "not-a-repo").mkdir()
    edit(world, "wheelpin.toml", '"../upstream"', f'"{tmp_path / "not-a-repo"}"')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    (sentence,) = sentences(result, "problem")
    assert sentence.startswith(
        f"demo-cache: the upstream {tmp_path / 'not-a-repo'} did not answer git ls-remote: "
        f"fatal: '{tmp_path / 'not-a-repo'}' does not appear to be a git repository"
    )


def test_an_upstream_that_refuses_the_connection(world: World) -> None:
    """git over HTTP to a closed loopback port: the outside did not answer, exit 4 as the
    pass's outside failures."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/upstream.git"
    edit(world, "wheelpin.toml", '"../upstream"', f'"{url}"')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 4, result.stderr
    (sentence,) = result.json()["online"]["unanswered"]
    assert sentence.startswith(f"demo-cache: the upstream {url} did not answer git ls-remote: fatal: unable to access")
    assert f"Failed to connect to 127.0.0.1 port {port}" in sentence  # curl's words, through git
    assert result.json()["valid"] is True and result.json()["online"]["answered"] is False


def test_a_registry_that_refuses_the_connection(world: World) -> None:
    closed = f"127.0.0.1:{free_port()}"
    host = repository(world).split("/")[0]
    path = repository(world).split("/", 1)[1]
    edit(world, "wheelpin.toml", host, closed)
    edit(world, "docker/Dockerfile", host, closed)
    assert_offline_valid(world)
    result = validate(world, "--online")
    assert result.code == 4
    assert re.fullmatch(
        re.escape(
            f"demo-cache: the registry {closed} did not answer for the tag list of {closed}/{path} (image.repository): "
            f"{closed} refused the connection, "
        )
        + r"\d+ tries in \d+(\.\d)? s",
        result.stderr.splitlines()[0],
    )
    assert result.stderr.splitlines()[1] == (
        f"demo-cache: docker/Dockerfile:2: the pinned image {pinned(world)} was not asked for: its registry did not "
        "answer the tag list"
    )  # once unanswered is enough: its retries are not waited for again
    assert result.stderr.splitlines()[-1] == (
        f"wheelpin: {world.downstream}/wheelpin.toml: 2 check(s) got no answer; try again"
    )


def test_a_registry_that_wants_credentials(world: World, basic_registry: Registry) -> None:
    """The registry the pass would push to asks for credentials none are configured for:
    the same credential lookup as the pass (none in the test's docker config)."""
    host = repository(world).split("/")[0]
    path = repository(world).split("/", 1)[1]
    edit(world, "wheelpin.toml", host, basic_registry.host)
    edit(world, "docker/Dockerfile", host, basic_registry.host)
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    problems = result.json()["problems"]
    assert problems[0] == (
        f"demo-cache: asking the registry {basic_registry.host} for the tag list of {basic_registry.host}/{path} "
        f"(image.repository) failed: {basic_registry.host} needs credentials for repository:{path}:pull (Basic auth); "
        "none are configured"
    )


def test_a_pinned_digest_the_registry_lacks(world: World) -> None:
    digest = pinned(world).split("@")[1]
    edit(world, "docker/Dockerfile", digest, ZEROS)
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: docker/Dockerfile:2: the pinned digest is not in the registry (404): {repository(world)}@{ZEROS}"
    ]


def test_a_consuming_image_that_does_not_resolve(world: World, registry: Registry) -> None:
    with (world.downstream / "wheelpin.toml").open("a") as config:
        config.write(f'consumer = {{ image = "{registry.host}/base/nothing@{ZEROS}" }}\n')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: the consuming image {registry.host}/base/nothing@{ZEROS} is not in its registry (404)"
    ]


def test_the_trusted_roots_a_trust_table_needs(world: World) -> None:
    """`trust` verifies attestations against roots the operator keeps in the cache: their
    absence is where the first pass would stop, so it is said before."""
    from bot.adapters.sigstoreverify import TRUSTED_ROOTS
    from tests.fixtures.attestations import TestSigstore

    workflow = "ROCm/ATOM/.github/workflows/w.yaml"
    with (world.downstream / "wheelpin.toml").open("a") as config:
        config.write(f'trust = {{ attestations = "required", signer_workflow = "{workflow}" }}\n')
    assert_offline_valid(world)
    roots = Path(world.env["WHEELPIN_CACHE_DIR"]) / TRUSTED_ROOTS
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: trust: {roots}: no trusted root to verify attestations with; `gh attestation "
        f"trusted-root > {roots}` writes GitHub's and Sigstore's (it is read offline)"
    ]
    roots.parent.mkdir(parents=True, exist_ok=True)
    roots.write_text(TestSigstore().trusted_root_text() + "\n")
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stdout
    assert (
        f"demo-cache: trust: 1 trusted root at {roots} to verify attestations by https://github.com/{workflow}@* with"
    ) in sentences(result, "ok")


def test_an_image_whose_wheels_only_its_layers_say_is_not_streamed(world: World, registry: Registry) -> None:
    """A pinned image another tool pushed (no wheelpin annotations nor labels): its manifest
    and config are read, its layers left to the pass, which reads them once."""
    base = push_busybox(registry)
    edit(world, "wheelpin.toml", repository(world), f"{registry.host}/base/busybox")
    edit(world, "docker/Dockerfile", pinned(world), f"{registry.host}/base/busybox:latest@{base}")
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stderr
    (sentence,) = [c["sentence"] for c in result.json()["online"]["checks"] if c["check"] == "pinned"]
    assert sentence == (
        f"demo-cache: docker/Dockerfile:2: the pinned image {registry.host}/base/busybox@{base} is "
        "readable: its wheels are said only by its layers, which the pass reads"
    )


def test_online_asks_nothing_of_a_config_with_offline_problems(world: World) -> None:
    edit(world, "docker/Dockerfile", "ARG DEMO_WHEEL_IMAGE=", "ARG DEMO_WHEEL_IMG=")
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert result.json()["online"] is None and result.json()["valid"] is False
    (problem,) = result.json()["problems"]
    assert problem.endswith(
        "demo-cache.pins[0].image_arg: docker/Dockerfile: ARG DEMO_WHEEL_IMAGE is not declared "
        "(ARGs here: DEMO_WHEEL_IMG, DEMO_WHEEL_SHA256; did you mean DEMO_WHEEL_IMG?)"
    )


WORKFLOW = "wheel.yaml"
WORKFLOW_TEXT = """\
name: wheel
run-name: wheel ${{ inputs.commit }}
on:
  workflow_dispatch:
    inputs:
      commit: { required: true }
jobs:
  build: { runs-on: ubuntu-latest, steps: [ { run: "true" } ] }
"""


@pytest.mark.parametrize("pushed", [True, False], ids=["on-github", "only-here"])
def test_the_workflow_is_on_the_base_branch_on_github(world: World, tmp_path: Path, pushed: bool) -> None:
    """With --github-repo and GitHub's settings, the file of build.workflow is looked for on
    the base branch of the repository on GitHub (the emulator, tests/fixtures/github), where
    the pass dispatches it: a workflow written here but never pushed is a problem."""
    from bot.adapters.git import git
    from tests.app.worlds import HUMAN
    from tests.fixtures.github.emulator import GitHubEmulator

    config = world.downstream / "wheelpin.toml"
    build = next(line for line in config.read_text().splitlines() if line.startswith("build = "))
    edit(world, "wheelpin.toml", build, f'build = {{ workflow = "{WORKFLOW}", inputs = {{ commit = "{{sha}}" }} }}')
    (world.downstream / ".github/workflows").mkdir(parents=True)
    (world.downstream / f".github/workflows/{WORKFLOW}").write_text(WORKFLOW_TEXT)
    if pushed:
        git(["add", "-A"], cwd=world.downstream)
        git(["commit", "--quiet", "-m", "the wheel workflow"], cwd=world.downstream, env=HUMAN)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    try:
        emulator.create_repo("rocm", "atom", world.downstream)
        env = {**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "t"}
        result = wheelpin(
            "config",
            "validate",
            "--repo",
            str(world.downstream),
            "--online",
            "--github-repo",
            "rocm/atom",
            "--json",
            env=env,
        )
        assert emulator.errors == []
    finally:
        emulator.stop()
    (check,) = [c for c in result.json()["online"]["checks"] if c["check"] == "workflow"]
    if pushed:
        assert result.code == 0, result.stderr
        assert check["sentence"] == f"demo-cache: .github/workflows/{WORKFLOW} is on rocm/atom's branch main"
    else:
        assert result.code == 2
        assert (
            result.json()["problems"]
            == [check["sentence"]]
            == [
                f"demo-cache: .github/workflows/{WORKFLOW} is not on rocm/atom's branch main, where the pass "
                "dispatches it (build.workflow)"
            ]
        )


def test_github_is_asked_only_online(world: World) -> None:
    result = validate(world, "--github-repo", "rocm/atom")
    assert result.code == 2
    assert result.stderr == "wheelpin: --github-repo goes with --online (GitHub is asked only then)\n"

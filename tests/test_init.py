"""`wheelpin init` on downstream repositories shaped like ATOM's (config/atom-lmcache/docker/)
and Mooncake's (config/mooncake/docker/): real git repositories, wheel images in the real
loopback registry, pushed by wheelpin or by buildah and skopeo as other tools push them,
holding LMCache-like and Mooncake-like wheels (tests/fixtures/seedwheels.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot import SCHEMA_URL
from bot.adapters.configdisk import load_config
from bot.adapters.git import git
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.publisher import publish
from bot.adapters.registry import RegistryClient
from bot.commands.demo import MAINTAINER, PEOPLE, make_upstream
from bot.core.wheel.report import inspect_wheel
from tests.cli import Result, environment, wheelpin
from tests.fixtures import seedwheels
from tests.fixtures.foreignpush import push_foreign
from tests.fixtures.servers import Registry

# ATOM's two Dockerfiles as they pin LMCache (config/atom-lmcache/docker/), the image and
# the wheel's sha256 put in.
ATOM_DOCKERFILE = """\
# ATOM's ROCm image: vLLM/SGLang on MI300/MI355 with LMCache.
ARG BASE_IMAGE="rocm/pytorch:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0"
ARG LMCACHE_WHEEL_IMAGE="{image}"
ARG LMCACHE_WHEEL_SHA256={sha256}

FROM ${{LMCACHE_WHEEL_IMAGE}} AS lmcache_wheel

FROM ${{BASE_IMAGE}} AS base
ARG LMCACHE_WHEEL_SHA256
COPY --from=lmcache_wheel / /tmp/lmcache-wheel/
RUN cd /tmp/lmcache-wheel \\
    && echo "${{LMCACHE_WHEEL_SHA256}}  $(ls *.whl)" | sha256sum -c - \\
    && pip install --no-deps /tmp/lmcache-wheel/*.whl \\
    && rm -rf /tmp/lmcache-wheel
"""
ATOM_RELEASE = """\
ARG BASE_IMAGE=rocm/atom:base
ARG LMCACHE_WHEEL_IMAGE="{image}"
ARG LMCACHE_WHEEL_SHA256={sha256}
FROM ${{LMCACHE_WHEEL_IMAGE}} AS lmcache_wheel
FROM ${{BASE_IMAGE}}
ARG LMCACHE_WHEEL_SHA256
COPY --from=lmcache_wheel / /tmp/lmcache-wheel/
RUN echo "${{LMCACHE_WHEEL_SHA256}}  $(ls /tmp/lmcache-wheel/*.whl)" | sha256sum -c -
"""
LMCACHE_TAG = "lmcache-v0.5.6.dev98-g{sha8}-rocm-torch210"
LMCACHE_TEMPLATE = "lmcache-v{version_base}-g{sha8}-rocm-torch210"
MOONCAKE_TAGS = ("cp310", "cp311", "cp312", "cp313")


@dataclass(frozen=True)
class Upstream:
    path: Path
    first: str


@dataclass(frozen=True)
class Images:
    host: str
    upstream: Upstream
    lmcache: dict[str, str]  # kind (wheelpin, buildah, skopeo) → host/path:tag@digest
    lmcache_sha256: str
    mooncake: str
    mooncake_sha256: dict[str, str]  # python tag → sha256


def push(registry: Registry, path: str, tag: str, wheels: list[Path], *, revision: str, source: str) -> str:
    store = RegistryRepository(RegistryClient(registry.host), path)
    done = publish(store, tag, wheels, [inspect_wheel(w) for w in wheels], source=source, revision=revision, settle=0)
    return f"{registry.host}/{path}:{tag}@{done.digest}"


@pytest.fixture(scope="module")
def images(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Images:
    """An upstream git repository, and the wheel images of its first commit: LMCache-like,
    pushed by wheelpin (its annotations name the commit and the upstream) and by buildah and
    skopeo (no annotation); Mooncake-like, one wheel per python tag."""
    folder = tmp_path_factory.mktemp("init")
    path, first = make_upstream(folder)
    sha8 = first[:8]
    wheel = seedwheels.lmcache_rocm(
        folder / "lmcache",
        f"0.5.6.dev98+g{sha8}.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1",
        library=seedwheels.hip_library(),
        requires=seedwheels.lmcache_requires(),
    )
    lmcache = {
        "wheelpin": push(
            registry, "rocm/atom-dev", LMCACHE_TAG.format(sha8=sha8), [wheel], revision=first, source=str(path)
        )
    }
    for tool in ("buildah", "skopeo"):
        lmcache[tool] = push_foreign(
            f"{registry.host}/{tool}/atom-dev:{LMCACHE_TAG.format(sha8=sha8)}", [wheel], folder, tool=tool
        )
    mooncake = seedwheels.mooncake_rocm(folder / "mooncake", "0.3.13.post1", MOONCAKE_TAGS)
    pinned = push(
        registry,
        "rocm/atom-dev",
        f"mooncake-0.3.13.post1-g{sha8}-rocm7.2.4",
        mooncake,
        revision=first,
        source=str(path),
    )
    return Images(
        registry.host,
        Upstream(path, first),
        lmcache,
        inspect_wheel(wheel).sha256,
        pinned,
        {tag: inspect_wheel(w).sha256 for tag, w in zip(MOONCAKE_TAGS, mooncake, strict=True)},
    )


def downstream(folder: Path, files: dict[str, str]) -> Path:
    """A downstream git repository holding `files`, committed as its maintainer would."""
    folder.mkdir(parents=True)
    git(["init", "--quiet", "-b", "main"], cwd=folder)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    git(["add", "-A"], cwd=folder)
    git(["commit", "--quiet", "-m", "Pin the wheels by digest"], cwd=folder, env=MAINTAINER)
    return folder


def atom(folder: Path, image: str, sha256: str) -> Path:
    return downstream(
        folder,
        {
            "docker/Dockerfile": ATOM_DOCKERFILE.format(image=image, sha256=sha256),
            "docker/atom_release.dockerfile": ATOM_RELEASE.format(image=image, sha256=sha256),
            "README.md": "ATOM\n",
        },
    )


def init(repo: Path, env: dict[str, str], *args: str) -> Result:
    return wheelpin("init", "--repo", str(repo), "--yes", *args, env=env)


def component_of(repo: Path, file: Path | None = None) -> dict:  # type: ignore[type-arg]
    with (file or repo / ".github/wheelpin.toml").open("rb") as stream:
        (component,) = tomllib.load(stream)["component"]
    return component  # type: ignore[no-any-return]


def test_an_atom_like_repository_gets_a_config_that_validates_and_plans(
    images: Images, tmp_path: Path, env: dict[str, str]
) -> None:
    repo = atom(tmp_path / "atom", images.lmcache["wheelpin"], images.lmcache_sha256)
    upstream = images.upstream
    git(["branch", "next", upstream.first], cwd=upstream.path)
    result = init(
        repo / "docker",
        env,
        "--upstream",
        str(upstream.path),
        "--branch",
        "next",
        "--build-command",
        "python build_wheel.py {out}",
    )  # from a subfolder: written at the top
    assert result.code == 0, result.stderr
    written = repo / ".github/wheelpin.toml"
    text = written.read_text()
    assert text.splitlines()[0] == f"#:schema {SCHEMA_URL}"
    assert f"# from docker/Dockerfile:3, the image's wheel lmcache 0.5.6.dev98+g{upstream.first[:8]}" in text
    component = component_of(repo)
    assert component["name"] == "lmcache"
    assert component["upstream"] == {"repo": str(upstream.path), "branch": "next"}
    assert component["image"] == {"repository": f"{images.host}/rocm/atom-dev", "tag": LMCACHE_TEMPLATE}
    wheel = component["wheel"]
    assert wheel["distribution"] == "lmcache" and "python_tags" not in wheel
    assert wheel["local_segments"] == ["torch2.10", "cxx11abi1"]
    assert len(wheel["archs"]) == 9 and "gfx942" in wheel["archs"]  # cupy-rocm's nine, in every library
    # the HIP runtime its extension links: a wheel that dropped the extension would fail the pass
    assert wheel["require_needed"] == ["libamdhip64.so*"]
    assert "# the ROCm runtime every wheel of the image links (DT_NEEDED libamdhip64.so.7): " in text
    assert component["consumer"] == {"from_arg": "BASE_IMAGE"}
    assert component["pins"] == [
        {"file": "docker/Dockerfile", "image_arg": "LMCACHE_WHEEL_IMAGE", "sha256_arg": "LMCACHE_WHEEL_SHA256"},
        {
            "file": "docker/atom_release.dockerfile",
            "image_arg": "LMCACHE_WHEEL_IMAGE",
            "sha256_arg": "LMCACHE_WHEEL_SHA256",
        },
    ]
    assert "docker/Dockerfile:2: ARG BASE_IMAGE: stage base runs COPY: a base image" in result.stdout
    assert f"{written}: valid, 1 component(s): lmcache" in result.stdout
    assert "wheelpin config validate --online" in result.stdout
    load_config(written, root=repo)  # what the pass loads
    assert wheelpin("config", "validate", "--repo", str(repo), env=env).code == 0

    # a new upstream commit on the branch followed: the plan builds it, and knows what is pinned
    tree = git(["rev-parse", f"{upstream.first}^{{tree}}"], cwd=upstream.path).strip()
    head = git(["commit-tree", tree, "-p", upstream.first, "-m", "Next"], cwd=upstream.path, env=PEOPLE).strip()
    git(["update-ref", "refs/heads/next", head], cwd=upstream.path)
    planned = wheelpin("reconcile", "--once", "--dry-run", "--json", "--repo", str(repo), env=env)
    (plan,) = planned.json()["components"]
    assert plan["component"] == "lmcache" and plan["head"] == head
    assert plan["pinned"] == upstream.first  # the commit the pinned image was built from
    assert [action["kind"] for action in plan["actions"]] == ["build", "publish", "propose"]
    # the consuming image, ATOM's BASE_IMAGE on Docker Hub, cannot be reached from here: the
    # pass would stop reading it before publishing, so the plan says so and ends as it would (4)
    assert planned.code == 4, planned.stderr
    assert "reading the consuming image" in planned.stdout and "docker.io" in planned.stdout


# ATOM's own build (a workflow_dispatch with the commit as an input; its run named by it,
# as `config validate` asks: adapters/github/workflowfile.py)
ATOM_WORKFLOW = """\
name: LMCache ROCm wheel
run-name: LMCache ROCm wheel ${{ inputs.lmcache_commit }}
on:
  workflow_dispatch:
    inputs:
      lmcache_commit: {description: the LMCache commit to build, required: true}
      rocm: {description: the ROCm version, default: "7.2.4"}
jobs:
  build: {runs-on: ubuntu-24.04, steps: [{run: ./build.sh}]}
"""


def test_json_says_what_was_found_and_written(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    """The upstream from the image's source annotation, the build from ATOM's own workflow."""
    repo = atom(tmp_path / "atom", images.lmcache["wheelpin"], images.lmcache_sha256)
    (repo / ".github/workflows").mkdir(parents=True)
    (repo / ".github/workflows/lmcache-rocm-wheel.yaml").write_text(ATOM_WORKFLOW)
    (repo / ".github/workflows/ci.yaml").write_text("on: push\njobs: {}\n")
    result = init(repo, env, "--json", "--branch", "main")
    assert result.code == 0, result.stderr
    document = result.json()
    assert document["written"] is True and document["file"] == str(repo / ".github/wheelpin.toml")
    assert document["config"] == "new"  # not added to an existing one
    assert document["upstream"]["repo"] == str(images.upstream.path)
    assert document["component"]["commit"] == images.upstream.first
    assert document["validate"]["valid"] is True
    assert document["found"] == ["docker/Dockerfile:3", "docker/atom_release.dockerfile:2"]
    assert document["validate"]["warnings"] == []  # the workflow gets what it declares
    assert component_of(repo)["build"] == {"workflow": "lmcache-rocm-wheel.yaml", "inputs": {"lmcache_commit": "{sha}"}}
    assert document["build"]["said"] == (
        "from .github/workflows/lmcache-rocm-wheel.yaml, dispatchable and "
        "named after lmcache; its input lmcache_commit given the commit"
    )


# A config its maintainer keeps by hand: a comment before the component, a table after it.
MINE = """\
# ATOM's wheels, kept by hand

[[component]]
name = "lmcache"
upstream = { repo = "https://github.com/LMCache/LMCache", branch = "dev" }
build = { command = "make wheel" }
image = { repository = "rocm/atom-dev", tag = "lmcache-{version}" }
wheel = { distribution = "lmcache" }
pins = [{ file = "docker/Dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE" }]

# when each component is looked at
[defaults]
schedule = "6h"  # ours
"""


@pytest.mark.parametrize("where", [".github/wheelpin.toml", "wheelpin.toml"])
def test_a_component_the_config_has_is_replaced_only_with_force(
    images: Images, tmp_path: Path, env: dict[str, str], where: str
) -> None:
    """Either file the commands look for. Without `--force` init stops before reading any
    image (the pin names a registry that does not answer: reading it would end in 4); with
    it, that component's tables alone are replaced, where they are."""
    from tests.fixtures.servers import free_port

    silent = f"127.0.0.1:{free_port()}/rocm/atom-dev:latest@sha256:{'a' * 64}"
    repo = atom(tmp_path / "atom", silent, images.lmcache_sha256)
    mine = repo / where
    mine.parent.mkdir(exist_ok=True)
    mine.write_text(MINE)
    args = ("--upstream", str(images.upstream.path), "--branch", "main", "--build-command", "make wheel")
    refused = init(repo, env, *args, "--component", "lmcache")
    assert refused.code == 2
    assert refused.stderr.strip() == (
        f"wheelpin: {mine} has a component lmcache already: wheelpin init leaves it as it is "
        "(pass --force to replace that component's tables, and only those)"
    )
    assert mine.read_text() == MINE
    for name in ("docker/Dockerfile", "docker/atom_release.dockerfile"):
        (repo / name).write_text((repo / name).read_text().replace(silent, images.lmcache["wheelpin"]))
    assert init(repo, env, *args).code == 2 and mine.read_text() == MINE  # the one pinned here: the same
    forced = init(repo, env, *args, "--force")
    assert forced.code == 0, forced.stderr
    assert f"Replaced in {mine}: component lmcache (lmcache, tag {LMCACHE_TEMPLATE})," in forced.stdout
    text = mine.read_text()
    assert text.startswith(
        '# ATOM\'s wheels, kept by hand\n\n[[component]]\nname = "lmcache"\n# from docker/Dockerfile:3'
    )
    assert text.endswith('\n\n# when each component is looked at\n[defaults]\nschedule = "6h"  # ours\n')
    component = component_of(repo, mine)
    assert component["upstream"] == {"repo": str(images.upstream.path), "branch": "main"}
    assert len(component["pins"]) == 2 and component["image"]["tag"] == LMCACHE_TEMPLATE
    assert [p.name for p in mine.parent.iterdir() if "wheelpin" in p.name] == ["wheelpin.toml"]  # no temporary left
    assert not (repo / ".github/wheelpin.toml").exists() or where == ".github/wheelpin.toml"


def test_a_second_component_is_added_to_the_config_as_it_is(
    images: Images, tmp_path: Path, env: dict[str, str]
) -> None:
    """Run once per component: the second run adds the component the config lacks after
    every byte of the file as its maintainer left it, and checks the whole before writing."""
    repo = atom(tmp_path / "both", images.lmcache["wheelpin"], images.lmcache_sha256)
    (repo / "docker/mooncake.Dockerfile").write_text(mooncake_dockerfile(images))
    args = ("--branch", "main", "--build-command", "make {out}")
    assert init(repo, env, *args, "--component", "lmcache").code == 0
    config = repo / ".github/wheelpin.toml"
    edited = config.read_text().replace("[component.wheel]\n", "[component.wheel]  # ATOM's\n")
    edited += '\n# looked at every six hours\n[defaults]\nschedule = "6h"\n'
    config.write_text(edited)
    added = init(repo, env, *args)  # no --component: the one the config lacks
    assert added.code == 0, added.stderr
    assert "(also lmcache, at docker/Dockerfile:3, docker/atom_release.dockerfile:2: in the config already)" in (
        added.stdout
    )
    assert f"Added to {config}: component mooncake-transfer-engine-rocm (mooncake-transfer-engine-rocm, " in (
        added.stdout
    )
    assert f"{config}: valid, 2 component(s): lmcache, mooncake-transfer-engine-rocm" in added.stdout
    text = config.read_text()
    assert text.startswith(edited + '\n[[component]]\nname = "mooncake-transfer-engine-rocm"\n')
    assert [c["name"] for c in tomllib.loads(text)["component"]] == ["lmcache", "mooncake-transfer-engine-rocm"]
    replaced = init(repo, env, *args, "--component", "lmcache", "--force", "--json")
    assert replaced.code == 0, replaced.stderr
    assert (replaced.json()["config"], replaced.json()["validate"]["components"]) == (
        "replaced",
        ["lmcache", "mooncake-transfer-engine-rocm"],
    )
    # the same pins read again give the same tables, lmcache's own comment replaced with them
    assert config.read_text() == text.replace("[component.wheel]  # ATOM's\n", "[component.wheel]\n", 1)
    text = config.read_text()
    again = init(repo, env, *args)
    assert again.code == 2 and again.stderr.strip() == (
        f"wheelpin: {config} has a component of every wheel image pinned here (lmcache, "
        "mooncake-transfer-engine-rocm): pass --component NAME --force to replace one's tables"
    )
    assert config.read_text() == text


def test_a_component_that_would_leave_the_config_invalid_is_not_added(
    images: Images, tmp_path: Path, env: dict[str, str]
) -> None:
    """The whole result is checked before a byte is written: a mistake elsewhere in the
    file (a pin naming a file the repository lacks) stops the addition, and says where."""
    repo = atom(tmp_path / "atom", images.lmcache["wheelpin"], images.lmcache_sha256)
    broken = MINE.replace("docker/Dockerfile", "docker/Gone.Dockerfile").replace('"lmcache"', '"other"')
    (repo / "wheelpin.toml").write_text(broken)
    args = ("--upstream", str(images.upstream.path), "--branch", "main", "--build-command", "make wheel")
    result = init(repo, env, *args)
    assert result.code == 2
    (said,) = [line for line in result.stderr.splitlines() if line.startswith("wheelpin: ")]
    assert said.startswith(
        f"wheelpin: the config init would write is not valid, so nothing was written: {repo / 'wheelpin.toml'}:9: "
    ), said
    assert "docker/Gone.Dockerfile" in said
    assert (repo / "wheelpin.toml").read_text() == broken


def test_yes_without_an_upstream_stops_in_one_sentence_and_writes_nothing(
    images: Images, tmp_path: Path, env: dict[str, str]
) -> None:
    """buildah's image names no source: the upstream cannot be inferred."""
    repo = atom(tmp_path / "atom", images.lmcache["buildah"], images.lmcache_sha256)
    result = init(repo, env, "--branch", "main", "--build-command", "make wheel")
    assert result.code == 2
    assert result.stderr.strip().splitlines() == [
        "wheelpin: --upstream URL is needed: the upstream git repository the wheel is built from"
    ]
    assert not (repo / ".github").exists()
    missing_build = init(repo, env, "--upstream", str(images.upstream.path), "--branch", "main")
    assert missing_build.code == 2 and "--build-command '…' or --build-workflow FILE is needed" in missing_build.stderr
    assert not (repo / ".github").exists()


def test_a_repository_with_no_wheel_pin_says_so(tmp_path: Path, env: dict[str, str]) -> None:
    digest = "sha256:" + "a" * 64
    repo = downstream(
        tmp_path / "plain",
        {
            "Dockerfile": "FROM python:3.12-slim\nRUN pip install numpy\n",
            "tools/Containerfile": f"ARG BASE=docker.io/library/ubuntu:24.04@{digest}\nFROM ${{BASE}} AS build\n"
            "RUN make\n",
        },
    )
    result = init(
        repo, env, "--upstream", "https://github.com/LMCache/LMCache", "--branch", "dev", "--build-command", "make"
    )
    assert result.code == 2
    assert (
        "skipped tools/Containerfile:1: ARG BASE: stage build runs RUN: a base image, not a wheel image"
        in result.stderr
    )
    assert (
        f"wheelpin: {repo}: no wheel image pinned by digest in its 2 Dockerfile(s) (2 reference(s) skipped, said above)"
    ) in result.stderr
    assert 'docs/init.md, "Your first pin", says how to get one' in result.stderr
    assert not (repo / ".github").exists()


def test_an_image_another_tool_pushed_infers_the_same(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    proposed = {}
    for kind, image in images.lmcache.items():
        repo = atom(tmp_path / kind, image, images.lmcache_sha256)
        result = init(
            repo,
            env,
            "--json",
            "--upstream",
            str(images.upstream.path),
            "--branch",
            "main",
            "--build-command",
            "make wheel",
        )
        assert result.code == 0, (kind, result.stderr)
        document = result.json()["component"]
        assert document["commit"].startswith(images.upstream.first[:8]), kind
        planned = wheelpin("reconcile", "--once", "--dry-run", "--json", "--repo", str(repo), env=env)
        assert planned.code == 0, (kind, planned.stderr)
        (plan,) = planned.json()["components"]
        assert (plan["pinned"], plan["status"]) == (images.upstream.first, "nothing"), kind  # the head is pinned
        config = component_of(repo)
        del config["image"]["repository"]  # each tool pushed to its own
        proposed[kind] = config
    assert proposed["buildah"] == proposed["wheelpin"] == proposed["skopeo"]
    assert proposed["wheelpin"]["image"]["tag"] == LMCACHE_TEMPLATE


def test_mooncake_pins_one_wheel_per_python_tag(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    repo = downstream(tmp_path / "mooncake", {"docker/Dockerfile": mooncake_dockerfile(images)})
    result = init(
        repo,
        env,
        "--upstream",
        "https://github.com/kvcache-ai/Mooncake",
        "--branch",
        "main",
        "--build-workflow",
        "mooncake-rocm-wheel.yaml",
        "--input",
        "mooncake_commit={sha}",
    )
    assert result.code == 0, result.stderr
    component = component_of(repo)
    assert component["name"] == "mooncake-transfer-engine-rocm"
    assert component["image"]["tag"] == "mooncake-{version}-g{sha8}-rocm7.2.4"
    assert component["wheel"]["python_tags"] == list(MOONCAKE_TAGS)
    assert component["wheel"]["version_carries_commit"] is False
    assert component["wheel"]["archs"] == []  # no device code in Mooncake's libraries
    # the ROCm runtimes its libraries link (not libc, libibverbs…, nor a copy auditwheel grafted in)
    assert component["wheel"]["require_needed"] == ["libamdhip64.so*", "libhsa-runtime64.so*"]
    assert component["consumer"] == {"from_stage": "runtime"}
    assert component["pins"] == [
        {
            "file": "docker/Dockerfile",
            "image_arg": "MOONCAKE_WHEEL_IMAGE",
            "sha256_arg": f"MOONCAKE_WHEEL_SHA256_{tag.upper()}",
            "python_tag": tag,
        }
        for tag in MOONCAKE_TAGS
    ]
    assert wheelpin("config", "validate", "--repo", str(repo), env=env).code == 0


def mooncake_dockerfile(images: Images) -> str:
    lines = [f'ARG MOONCAKE_WHEEL_IMAGE="{images.mooncake}"']
    lines += [f"ARG MOONCAKE_WHEEL_SHA256_{tag.upper()}={images.mooncake_sha256[tag]}" for tag in MOONCAKE_TAGS]
    lines += [
        "FROM ${MOONCAKE_WHEEL_IMAGE} AS mooncake_wheel",
        "FROM rocm/dev-ubuntu-24.04:7.2.4-complete AS runtime",
        "COPY --from=mooncake_wheel / /tmp/mooncake/",
    ]
    return "\n".join(lines) + "\n"


def test_several_components_are_told_apart_by_component(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    repo = atom(tmp_path / "both", images.lmcache["wheelpin"], images.lmcache_sha256)
    (repo / "docker/mooncake.Dockerfile").write_text(mooncake_dockerfile(images))
    args = ("--branch", "main", "--build-command", "python3 -m pip wheel --no-deps -w {out} .")
    unsaid = init(repo, env, *args)
    assert unsaid.code == 2
    assert unsaid.stderr.strip().splitlines() == [
        "wheelpin: --component NAME is needed: several wheel images are pinned here (lmcache at "
        "docker/Dockerfile:3, docker/atom_release.dockerfile:2; mooncake-transfer-engine-rocm at "
        "docker/mooncake.Dockerfile:1); which one is this config's"
    ]
    assert not (repo / ".github").exists()
    chosen = init(repo, env, *args, "--component", "lmcache")
    assert chosen.code == 0, chosen.stderr
    assert "(also mooncake-transfer-engine-rocm, at docker/mooncake.Dockerfile:1: not in this config)" in chosen.stdout
    assert component_of(repo)["name"] == "lmcache"
    assert "built by command `python3 -m pip wheel --no-deps -w {out} .`.\n" in chosen.stdout  # its `.` no period


def test_on_a_terminal_it_asks_offering_what_it_found(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    """The answers typed at the prompts (a pseudo-terminal as stdin): Enter takes the
    upstream the image names and its HEAD branch; the build has no default."""
    repo = atom(tmp_path / "atom", images.lmcache["wheelpin"], images.lmcache_sha256)
    leader, follower = os.openpty()
    try:
        os.write(leader, b"\n\nmake wheel\n")
        done = subprocess.run(
            [sys.executable, "-m", "bot.cli", "init", "--repo", str(repo)],
            stdin=follower,
            capture_output=True,
            text=True,
            env=environment(env),
            timeout=300,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0, done.stderr
    assert f"The upstream git repository the wheel is built from [{images.upstream.path}]: " in done.stderr
    assert (
        f"The branch of {images.upstream.path} to follow (or pass --tags PATTERN for releases) [main]: " in done.stderr
    )
    component = component_of(repo)
    assert component["upstream"] == {"repo": str(images.upstream.path), "branch": "main"}
    assert component["build"] == {"command": "make wheel"}
    assert (
        "# from the image's org.opencontainers.image.source; its HEAD branch"
        in (repo / ".github/wheelpin.toml").read_text()
    )


def test_a_folder_that_is_no_git_repository(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "plain"
    (repo / "docker").mkdir(parents=True)
    (repo / "docker/Dockerfile").write_text(
        ATOM_DOCKERFILE.format(image=images.lmcache["skopeo"], sha256=images.lmcache_sha256)
    )
    result = init(repo, env, "--upstream", str(images.upstream.path), "--branch", "main", "--build-command", "make")
    assert result.code == 0, result.stderr
    assert component_of(repo)["pins"] == [
        {"file": "docker/Dockerfile", "image_arg": "LMCACHE_WHEEL_IMAGE", "sha256_arg": "LMCACHE_WHEEL_SHA256"}
    ]


def test_a_registry_that_does_not_answer_stops_init_once(tmp_path: Path, env: dict[str, str]) -> None:
    from tests.fixtures.servers import free_port

    image = f"127.0.0.1:{free_port()}/rocm/atom-dev:{LMCACHE_TAG.format(sha8='05fc77a0')}@sha256:{'a' * 64}"
    repo = atom(tmp_path / "atom", image, "b" * 64)
    result = init(
        repo, env, "--upstream", "https://github.com/LMCache/LMCache", "--branch", "dev", "--build-command", "make"
    )
    assert result.code == 4, result.stderr
    (said,) = [line for line in result.stderr.splitlines() if line.startswith("wheelpin: ")]
    assert said.startswith("wheelpin: reading the image pinned at docker/Dockerfile:3 (127.0.0.1:")
    assert not (repo / ".github").exists()


def test_a_pinned_digest_missing_from_its_registry_is_skipped_and_said(
    images: Images, tmp_path: Path, env: dict[str, str]
) -> None:
    missing = images.lmcache["wheelpin"].split("@")[0] + "@sha256:" + "a" * 64
    repo = atom(tmp_path / "atom", missing, "b" * 64)
    result = init(
        repo, env, "--upstream", "https://github.com/LMCache/LMCache", "--branch", "dev", "--build-command", "make"
    )
    assert result.code == 2
    assert "skipped docker/Dockerfile:3: ARG LMCACHE_WHEEL_IMAGE: its image cannot be read: " in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"wheelpin: {repo}: none of the 2 wheel pin(s) found names an image "
        "holding wheels that could be read (said above); wheelpin init "
        "starts from one"
    )
    assert not (repo / ".github").exists()


def test_a_config_that_would_not_load_is_not_written(images: Images, tmp_path: Path, env: dict[str, str]) -> None:
    """A sha256 ARG for a python tag the image holds no wheel for (cp39): the pin cannot be
    moved, so the config is refused before anything is written."""
    text = mooncake_dockerfile(images).replace(
        "ARG MOONCAKE_WHEEL_SHA256_CP310", f"ARG MOONCAKE_WHEEL_SHA256_CP39={'c' * 64}\nARG MOONCAKE_WHEEL_SHA256_CP310"
    )
    repo = downstream(tmp_path / "mooncake", {"docker/Dockerfile": text})
    result = init(
        repo, env, "--upstream", "https://github.com/kvcache-ai/Mooncake", "--branch", "main", "--build-command", "make"
    )
    assert result.code == 2
    (said,) = [line for line in result.stderr.splitlines() if line.startswith("wheelpin: ")]
    assert said.startswith(
        f"wheelpin: the config init would write is not valid, so nothing was written: {repo / '.github/wheelpin.toml'}:"
    )
    assert "'cp39' is not in wheel.python_tags" in said
    assert not (repo / ".github").exists()


def test_the_demo_s_downstream_is_read_where_its_images_are_kept(tmp_path: Path, env: dict[str, str]) -> None:
    """The demo's Dockerfile pins `localhost/demo-cache:…@sha256` (what a Dockerfile builds
    from) while its images live in an OCI layout folder: `--image-repository` says where."""
    from bot.app.settings import Settings
    from bot.commands.demo import make_downstream

    upstream, first = make_upstream(tmp_path)
    downstream = make_downstream(tmp_path, first, Settings(cache_dir=tmp_path / "cache"))
    git(["rm", "--quiet", "wheelpin.toml"], cwd=downstream)
    git(["commit", "--quiet", "-m", "No config yet"], cwd=downstream, env=PEOPLE)
    build = f"{sys.executable} build_wheel.py {{out}}"

    where_pinned = init(downstream, env, "--upstream", "../upstream", "--build-command", build)
    assert where_pinned.code == 4, where_pinned.stderr  # the registry `localhost` does not answer
    assert not (downstream / ".github/wheelpin.toml").exists()

    missing = init(
        downstream, env, "--upstream", "../upstream", "--build-command", build, "--image-repository", "oci:../nowhere"
    )
    assert missing.code == 2
    assert missing.stderr.strip().endswith("is not an OCI image layout folder (no oci-layout file)"), missing.stderr
    assert not (downstream / ".github/wheelpin.toml").exists()

    result = init(
        downstream, env, "--upstream", "../upstream", "--build-command", build, "--image-repository", "oci:../images"
    )
    assert result.code == 0, result.stderr
    component = component_of(downstream)
    assert component["image"]["repository"] == "oci:../images"
    assert component["wheel"]["archs"] == ["gfx942", "gfx950"]  # read from the image in the folder
    assert component["wheel"]["require_needed"] == ["libamdhip64.so*"]
    assert (
        "# from --image-repository, where the pinned images were read"
        in (downstream / ".github/wheelpin.toml").read_text()
    )
    planned = wheelpin("reconcile", "--once", "--dry-run", "--json", "--repo", str(downstream), env=env)
    assert planned.code == 0, planned.stderr
    (plan,) = planned.json()["components"]
    assert plan["pinned"] == first and plan["head"] == first and plan["actions"] == []


def test_an_image_copied_from_by_reference_is_said_by_init_validate_and_pins_list(
    images: Images, tmp_path: Path, env: dict[str, str]
) -> None:
    """`COPY --from=` may name an image instead of a stage (Dockerfile reference:
    https://docs.docker.com/reference/dockerfile/#copy---from). No pin format moves it, so
    a test stage copying the wheel image straight from the registry would keep the old
    wheel after every proposal: init skips it with why, and the config it writes says,
    as `config validate` and `pins list` do, that no pin moves that line."""
    image = images.lmcache["wheelpin"]
    wheel = "/lmcache-0.5.6.dev98-cp312-cp312-linux_x86_64.whl"
    dockerfile = ATOM_DOCKERFILE.format(image=image, sha256=images.lmcache_sha256)
    dockerfile += f"\nFROM base AS test\nCOPY --from={image} {wheel} /tmp/\nRUN python3 -c 'import lmcache'\n"
    repo = downstream(tmp_path / "atom", {"docker/Dockerfile": dockerfile})
    line = dockerfile.splitlines().index(f"COPY --from={image} {wheel} /tmp/") + 1
    result = init(repo, env, "--json", "--branch", "main", "--build-command", "make")
    assert result.code == 0, result.stderr
    document = result.json()
    assert document["found"] == ["docker/Dockerfile:3"]
    assert {
        "file": "docker/Dockerfile",
        "line": line,
        "what": f"COPY --from={image}",
        "why": "an image named in the instruction, not through a stage: no pin format moves it (to pin a wheel "
        "image, name it in a stage, FROM … AS NAME, and take it from that stage)",
    } in document["skipped"]
    behind = (
        f"docker/Dockerfile:{line}: COPY --from names {image}, of lmcache's image repository, but no pin moves it: "
        "a bump leaves it as it is"
    )
    (warning,) = document["validate"]["warnings"]
    assert warning.endswith(f": lmcache.pins[0].file: {behind}"), warning
    validated = wheelpin("config", "validate", "--repo", str(repo), env=env)
    assert validated.code == 0 and validated.stderr.endswith(f"lmcache.pins[0].file: {behind}\n"), validated.stderr
    listed = wheelpin("pins", "list", "--repo", str(repo), env=env)
    assert listed.code == 0 and listed.stderr == f"warning: {behind}\n"
    as_json = wheelpin("pins", "list", "--repo", str(repo), "--json", env=env).json()
    assert as_json["left_behind"] == [
        {"component": "lmcache", "file": "docker/Dockerfile", "line": line, "what": "COPY --from", "image": image}
    ]

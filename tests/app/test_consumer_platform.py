"""The consuming image's platform before a build: the pass reads the consuming image for
the architecture of the wheels it built (loop/consumers.py), so before the build the dry
run and `config validate --online` know it only from wheels that name one. An upstream
whose wheels are aarch64 only, pinned today by a pure-Python wheel or by no digest at all,
against a consuming image pushed by buildah and skopeo as an OCI image index of linux/arm64
alone (or of linux/amd64 and linux/arm64): neither refuses what the pass then does, and
the plan says which platform it reads, or that the build decides it."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from bot.adapters.git import git
from tests.app.worlds import HUMAN, World, component, make_world
from tests.cli import wheelpin
from tests.fixtures.foreignpush import push_platforms
from tests.fixtures.servers import Registry

ONE_PLATFORM = (
    "linux/arm64, its index's only linux platform (the build's wheels decide: wheels built for another "
    "architecture fail where it is read; pure-Python ones are checked against it)"
)
PURE = 'platform = "linux_x86_64" if any(path.endswith(".so") for path in files) else "any"'


def aarch64_upstream(world: World) -> str:
    """The upstream's build now makes an aarch64 wheel (as its CI on an arm64 runner would)."""
    script = (world.upstream / "build_wheel.py").read_text()
    assert PURE in script
    return world.commit_upstream(
        "build for aarch64",
        {"VERSION": "0.1.1\n", "build_wheel.py": script.replace(PURE, 'platform = "linux_aarch64"')},
    )


def consuming(world: World, image: str) -> None:
    world.set_config('constraints = ["numpy==2.3.5"]', f'consumer = {{ image = "{image}" }}')


def unpin_digest(world: World) -> None:
    """The base pins the wheel image by its tag alone: no pinned image is read."""
    dockerfile = world.downstream / "docker/Dockerfile"
    dockerfile.write_text(re.sub(r"@sha256:[0-9a-f]{64}", "", dockerfile.read_text()))
    git(["commit", "--quiet", "-am", "pin by tag"], cwd=world.downstream, env=HUMAN)


def published_architecture(world: World) -> str:
    """The architecture of the image the proposal pins, from its config in the OCI layout."""
    pinned = re.search(r"@(sha256:[0-9a-f]{64})", world.branch_file()).group(1)  # type: ignore[union-attr]
    blobs = world.root / "images" / "blobs" / "sha256"
    manifest = json.loads((blobs / pinned.removeprefix("sha256:")).read_text())
    config = json.loads((blobs / manifest["config"]["digest"].removeprefix("sha256:")).read_text())
    return str(config["architecture"])


def test_an_arm64_only_consuming_image_is_read_for_its_one_platform_before_an_aarch64_build(
    registry: Registry, tmp_path: Path
) -> None:
    """The pinned wheel is pure Python: it names no architecture, so the build decides; the
    consuming image's index lists linux/arm64 alone, the one platform a pass can read."""
    world = make_world(tmp_path)
    consuming(
        world, push_platforms(f"{registry.host}/consumers/arm64-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/arm64"])
    )
    aarch64_upstream(world)
    dry = world.reconcile("--dry-run")
    plan = component(dry)["plan"]
    assert dry.code == 0 and plan["refusals"] == [], dry.stdout + dry.stderr
    assert plan["consumer_platform"] == ONE_PLATFORM, plan
    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert f"  consuming image: {plan['consumer_platform']}\n" in text.stdout, text.stdout
    real = world.reconcile()  # dry, then real: the plan held to the pass
    assert real.code == 0 and component(real)["status"] == "done", real.stdout + real.stderr
    assert published_architecture(world) == "arm64"


def test_with_no_pinned_image_read_the_dry_run_does_not_refuse_what_the_pass_does(
    registry: Registry, tmp_path: Path
) -> None:
    world = make_world(tmp_path)
    consuming(
        world, push_platforms(f"{registry.host}/consumers/arm64-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/arm64"])
    )
    unpin_digest(world)
    aarch64_upstream(world)
    dry = world.reconcile("--dry-run")
    plan = component(dry)["plan"]
    assert dry.code == 0 and plan["refusals"] == [] and plan["pinned"]["version"] is None, dry.stdout + dry.stderr
    assert plan["consumer_platform"] == ONE_PLATFORM, plan
    real = world.reconcile()
    assert real.code == 0 and world.branch() is not None, real.stdout + real.stderr
    assert published_architecture(world) == "arm64"


def test_a_consuming_index_of_two_platforms_is_left_to_the_build(registry: Registry, tmp_path: Path) -> None:
    """Which of its platforms the pass reads is the built wheels' architecture: the plan says
    so, and asks the registry for the index alone."""
    world = make_world(tmp_path)
    image = push_platforms(
        f"{registry.host}/consumers/multi-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/amd64", "linux/arm64"]
    )
    consuming(world, image)
    aarch64_upstream(world)
    dry = world.reconcile("--dry-run")
    plan = component(dry)["plan"]
    assert dry.code == 0 and plan["refusals"] == [], dry.stdout + dry.stderr
    assert plan["consumer_platform"] == (
        "decided after the build: the linux image of each architecture the built wheels name, "
        "each of them for pure-Python wheels (its index lists linux/amd64, linux/arm64)"
    ), plan
    assert dry.json()["requests"]["registry"] == 1, dry.json()["requests"]  # the index, no platform's manifest
    real = world.reconcile()
    assert real.code == 0 and world.branch() is not None, real.stdout + real.stderr
    assert published_architecture(world) == "arm64"


def test_config_validate_online_reads_an_arm64_only_consuming_image_for_its_one_platform(
    registry: Registry, tmp_path: Path
) -> None:
    world = make_world(tmp_path)
    image = push_platforms(f"{registry.host}/consumers/arm64-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/arm64"])
    consuming(world, image)
    result = wheelpin("config", "validate", "--online", "--json", "--repo", str(world.downstream), env=world.env)
    (check,) = [c for c in result.json()["online"]["checks"] if c["check"] == "consumer"]
    assert result.code == 0 and check["outcome"] == "ok", (result.stderr, check)
    assert check["asked"].endswith(" (the built wheels' architecture)"), check
    assert check["sentence"].endswith(f"(1 layer(s), read by the pass); its platform: {ONE_PLATFORM}"), check

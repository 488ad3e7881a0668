"""The pass checks the wheels against the consuming image's real platform (loop/consumers.py,
core/image/consumer.wrong_platform): pure-Python wheels against the one linux image of an
index, or each of an index's linux images; wheels naming an architecture against the image of
it, whose config must say that architecture too, or they are refused before anything is
published. Consuming images pushed by buildah and skopeo to the loopback registry, as an
arm64-only index, a two-platform index and a lone arm64 image (tests/fixtures/foreignpush.py);
each pass run dry first, the plan held to it (tests/fixtures/dryreal.py)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import requests

from bot.adapters.git import git
from tests.app.test_consumer_platform import PURE, consuming
from tests.app.worlds import BRANCH, NEW_VERSION, World, component, make_world
from tests.cli import wheelpin
from tests.fixtures.foreignpush import push_platforms
from tests.fixtures.servers import Registry
from tests.fixtures.wheels import build_wheel


def platform_digests(registry: Registry, image: str) -> dict[str, str]:
    """The linux architectures of the index `image` (host/path:tag@digest), each to the
    digest of its image, read from the registry as any client reads them."""
    path, digest = repository(image).split("/", 1)[1], image.split("@")[1]
    index = requests.get(
        f"http://{registry.host}/v2/{path}/manifests/{digest}",
        headers={"Accept": "application/vnd.oci.image.index.v1+json"},
        timeout=30,
    ).json()
    return {entry["platform"]["architecture"]: entry["digest"] for entry in index["manifests"]}


def repository(image: str) -> str:
    """host/path of host/path:tag@digest: the name the pass gives the image it reads."""
    return image.split("@")[0].rsplit(":", 1)[0]


def proposal_message(world: World) -> str:
    return git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)


def lone_arm64(registry: Registry, tmp_path: Path) -> str:
    return push_platforms(
        f"{registry.host}/consumers/lone-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/arm64"], index=False
    )


def test_a_pure_python_wheel_is_published_against_an_arm64_only_consuming_image(
    registry: Registry, tmp_path: Path
) -> None:
    """A pure wheel installs on any platform: the index's only linux image is the one read."""
    world = make_world(tmp_path)
    image = push_platforms(f"{registry.host}/consumers/arm64-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/arm64"])
    consuming(world, image)
    world.commit_upstream("work", NEW_VERSION)
    result = world.reconcile()
    assert result.code == 0 and component(result)["status"] == "done", result.stdout + result.stderr
    arm64 = platform_digests(registry, image)["arm64"]
    assert f"### Against the consuming image\nAgainst `{repository(image)}@{arm64}`" in proposal_message(world)


def test_pure_python_wheels_are_checked_against_each_platform_of_a_consuming_index(
    registry: Registry, tmp_path: Path
) -> None:
    world = make_world(tmp_path)
    image = push_platforms(
        f"{registry.host}/consumers/multi-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/amd64", "linux/arm64"]
    )
    consuming(world, image)
    world.commit_upstream("work", NEW_VERSION)
    result = world.reconcile()
    assert result.code == 0 and component(result)["status"] == "done", result.stdout + result.stderr
    message, name = proposal_message(world), repository(image)
    digests = platform_digests(registry, image)
    against = message.split("### Against the consuming image\n", 1)[1].split("\n###", 1)[0]
    assert [f"`{name}@{digests['amd64']}`", f"`{name}@{digests['arm64']}`"] == re.findall(
        r"^Against (`[^`]+`)", against, re.MULTILINE
    ), against


def test_wheels_of_another_architecture_than_a_lone_consuming_image_are_refused(
    registry: Registry, tmp_path: Path
) -> None:
    """An amd64 wheel against one image (no index) whose config says linux/arm64: pip there
    would refuse it, so the pass refuses it before publishing, in one sentence naming both."""
    world = make_world(tmp_path)
    image = lone_arm64(registry, tmp_path)
    consuming(world, image)
    script = (world.upstream / "build_wheel.py").read_text()
    assert PURE in script
    head = world.commit_upstream(
        "build for x86_64",
        {"VERSION": "0.1.1\n", "build_wheel.py": script.replace(PURE, 'platform = "linux_x86_64"')},
    )
    tags = world.layout_tags()
    result = world.reconcile()
    assert result.code == 1 and component(result)["error_kind"] == "verification", result.stdout + result.stderr
    said = component(result)["messages"][-1]
    assert re.search(
        rf"verification of {head[:8]} failed, nothing published: platform: demo_cache-0\.1\.1\+g{head[:8]}"
        rf"[^ ]*-linux_x86_64\.whl is built for linux/amd64, and the consuming image "
        rf"{re.escape(repository(image))}@sha256:[0-9a-f]{{64}} is linux/arm64: pip there would refuse it "
        r"\(the platform tag does not match\)$",
        said,
    ), said
    assert world.layout_tags() == tags and world.branch() is None


def test_the_dry_run_refuses_adopting_wheels_of_another_architecture_than_the_consuming_image(
    registry: Registry, tmp_path: Path
) -> None:
    """An image of the head found under its tag: its wheels are known before the pass, so the
    plan refuses its adoption where the pass does, by the same rule."""
    world = make_world(tmp_path)
    consuming(world, lone_arm64(registry, tmp_path))
    head = world.commit_upstream("work", NEW_VERSION)
    wheel = build_wheel(
        tmp_path / "theirs",
        name="demo-cache",
        version=f"0.1.1+g{head[:8]}.rocm7.2.4",
        files={"demo_cache/__init__.py": b"x = 1\n"},
        tag="py3-none-linux_x86_64",
    )
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    published = wheelpin("image", "publish", str(wheel), "--to", f"oci:{world.root / 'images'}:{tag}", env=world.env)
    assert published.code == 0, published.stderr
    dry = world.reconcile("--dry-run")
    plan = component(dry)["plan"]
    assert (dry.code, plan["fails_at"], plan["error_kind"]) == (1, "adopt", "verification"), dry.stdout
    assert plan["refusals"] == [
        f"{wheel.name} is built for linux/amd64, and the consuming image {plan['refusals'][0].split(' image ')[1]}"
    ] and plan["refusals"][0].endswith(" is linux/arm64: pip there would refuse it (the platform tag does not match)")
    real = world.reconcile()  # dry, then real: the plan held to the pass
    assert real.code == 1 and [a["kind"] for a in component(real)["actions"]] == ["adopt"], real.stdout
    assert "platform: " + plan["refusals"][0] in component(real)["messages"][-1], component(real)
    assert world.branch() is None


def test_the_plan_says_a_lone_consuming_image_is_not_the_platform_of_the_wheels_pinned_today(
    registry: Registry, tmp_path: Path
) -> None:
    """x86_64 wheels pinned (a first pass, merged), then the consuming image named is a lone
    arm64 image: before the next build the plan and `config validate --online` say that
    wheels built alike are refused; the pass then refuses them after the build."""
    world = make_world(tmp_path)
    script = (world.upstream / "build_wheel.py").read_text()
    x86_64 = {"build_wheel.py": script.replace(PURE, 'platform = "linux_x86_64"')}
    world.commit_upstream("build for x86_64", {"VERSION": "0.1.1\n", **x86_64})
    assert world.reconcile().code == 0
    git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream)  # the maintainer merges
    image = lone_arm64(registry, tmp_path)
    consuming(world, image)
    head = world.commit_upstream("work", {"VERSION": "0.1.2\n"})
    dry = world.reconcile("--dry-run")
    plan = component(dry)["plan"]
    assert dry.code == 0 and plan["refusals"] == [] and plan["after_build"], dry.stdout
    assert re.fullmatch(
        r"not the platform of the wheels pinned today: built so again, demo_cache-0\.1\.1\+g[0-9a-f]{8}"
        rf"[^ ]*-linux_x86_64\.whl is built for linux/amd64, and the consuming image {re.escape(repository(image))}"
        r"@sha256:[0-9a-f]{64} is linux/arm64: pip there would refuse it \(the platform tag does not match\)",
        plan["consumer_platform"],
    ), plan["consumer_platform"]
    # a forecast of a refusal, as the rules check makes one: a problem, so a CI gate on validate stops
    online = wheelpin("config", "validate", "--online", "--json", "--repo", str(world.downstream), env=world.env)
    (check,) = [c for c in online.json()["online"]["checks"] if c["check"] == "consumer"]
    assert online.code == 2 and check["outcome"] == "problem", online.stdout
    assert check["sentence"].endswith(
        f"its platform: {plan['consumer_platform']}; the pass refuses its next build if it makes wheels like these"
    ), check
    assert check["sentence"] in online.json()["problems"]
    real = world.reconcile()  # dry, then real: failing after the build, as the plan allows
    assert real.code == 1 and component(real)["error_kind"] == "verification", real.stdout
    assert f"verification of {head[:8]} failed, nothing published: platform: " in component(real)["messages"][-1]


def test_an_image_of_pure_python_wheels_found_is_adopted_against_each_platform_of_a_consuming_index(
    registry: Registry, tmp_path: Path
) -> None:
    """Its wheels known before the pass, the plan lists the platforms the adoption reads."""
    world = make_world(tmp_path)
    image = push_platforms(
        f"{registry.host}/consumers/multi-{uuid.uuid4().hex[:8]}:1", tmp_path, ["linux/amd64", "linux/arm64"]
    )
    consuming(world, image)
    head = world.commit_upstream("work", NEW_VERSION)
    wheel = build_wheel(
        tmp_path / "theirs",
        name="demo-cache",
        version=f"0.1.1+g{head[:8]}.rocm7.2.4",
        files={"demo_cache/__init__.py": b"x = 1\n"},
    )
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    published = wheelpin("image", "publish", str(wheel), "--to", f"oci:{world.root / 'images'}:{tag}", env=world.env)
    assert published.code == 0, published.stderr
    dry = world.reconcile("--dry-run")
    plan = component(dry)["plan"]
    assert dry.code == 0 and plan["refusals"] == [], dry.stdout
    assert plan["consumer_platform"] == (
        "each linux platform of its index, the wheels being pure Python: linux/amd64, linux/arm64"
    ), plan
    real = world.reconcile()
    assert real.code == 0 and [a["kind"] for a in component(real)["actions"]] == ["adopt", "propose"], real.stdout
    digests = platform_digests(registry, image)
    against = proposal_message(world).split("### Against the consuming image\n", 1)[1]
    assert all(f"Against `{repository(image)}@{digests[arch]}`" in against for arch in ("amd64", "arm64")), against


def test_image_check_reads_the_consuming_image_as_a_pass_does(
    registry: Registry, tmp_path: Path, env: dict[str, str]
) -> None:
    """`wheelpin image check` is the pass's check by hand: a pure wheel against an arm64-only
    index reads its one image (not "no linux/amd64 image"), and against a two-platform
    index reads each; an x86_64 wheel against a lone arm64 image is refused in the pass's
    sentence, exit 1."""
    pure = build_wheel(tmp_path / "pure", name="demo", version="1.0", files={"demo/__init__.py": b""})
    x86_64 = build_wheel(
        tmp_path / "x86", name="demo", version="1.0", files={"demo/_c.so": b""}, tag="py3-none-linux_x86_64"
    )
    arm64_only = push_platforms(
        f"{registry.host}/consumers/check-{uuid.uuid4().hex[:8]}:one", tmp_path, ["linux/arm64"]
    )
    one = wheelpin("image", "check", str(pure), "--consumer", arm64_only, "--json", env=env)
    assert one.code == 0, one.stdout + one.stderr
    arm64 = platform_digests(registry, arm64_only)["arm64"]
    assert [said["image"] for said in one.json()["images"]] == [f"{repository(arm64_only)}@{arm64}"]
    both = push_platforms(
        f"{registry.host}/consumers/check-{uuid.uuid4().hex[:8]}:both", tmp_path, ["linux/amd64", "linux/arm64"]
    )
    each = wheelpin("image", "check", str(pure), "--consumer", both, env=env)
    assert each.code == 0, each.stdout + each.stderr
    digests = platform_digests(registry, both)
    headers = [line for line in each.stdout.splitlines() if line.startswith("Against ")]
    assert [header.split(" ")[1] for header in headers] == [
        f"{repository(both)}@{digests['amd64']}",
        f"{repository(both)}@{digests['arm64']}",
    ]
    lone = lone_arm64(registry, tmp_path)
    refused = wheelpin("image", "check", str(x86_64), "--consumer", lone, "--json", env=env)
    assert refused.code == 1, refused.stdout + refused.stderr
    assert re.fullmatch(
        rf"[^ ]*-linux_x86_64\.whl is built for linux/amd64, and the consuming image {re.escape(repository(lone))}"
        r"@sha256:[0-9a-f]{64} is linux/arm64: .*",
        refused.json()["images"][0]["platform"],
    ), refused.json()

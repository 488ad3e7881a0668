"""Failures a pass meets outside itself, said once and with what it was doing: a registry
that refuses connections (a closed loopback port: nothing listens, so the kernel answers
the SYN with a RST and connect(2) fails with ECONNREFUSED), a pinned digest deleted from a
real registry (the Distribution API answers 404 MANIFEST_UNKNOWN), a build that fails
(when it is tried again), and what a proposal is loud about, in the pass's own summary."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from pathlib import Path

import pytest

from bot.adapters.git import git
from bot.adapters.registry import RegistryClient
from bot.loop.observation import PINNED_NOT_FOUND
from tests.app.worlds import BRANCH, HUMAN, NEW_VERSION, World, component, make_world
from tests.cli import Result, wheelpin
from tests.fixtures.consumerimages import ConsumerImages
from tests.fixtures.servers import Registry, free_port

PINNED_AT = "reading the image pinned at docker/Dockerfile:2 (to compare its wheels)"
RETRY = (
    r"tried again by the first pass after \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in (?:10|9) min\); "
    r"`wheelpin reconcile --retry-failed` tries it now"
)


def said(result: Result) -> str:
    return result.stdout + result.stderr


def pinned_on(world: World, repository: str) -> None:
    """The base's pin moved (by a human) to the same tag and digest in `repository`."""
    dockerfile = world.downstream / "docker/Dockerfile"
    dockerfile.write_text(
        re.sub(r'(DEMO_WHEEL_IMAGE=")[^"]*?(:[^:/"]+@sha256:)', rf"\g<1>{repository}\g<2>", dockerfile.read_text())
    )
    git(["commit", "--quiet", "-am", "pin from another registry"], cwd=world.downstream, env=HUMAN)


def test_a_registry_that_refuses_is_said_once_with_what_for_and_exits_4(registry: Registry, tmp_path: Path) -> None:
    path = f"refused-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    closed = f"127.0.0.1:{free_port()}"
    pinned_on(world, f"{closed}/{path}")
    world.commit_upstream("work", {"VERSION": "0.1.1\n"})
    env = {"WHEELPIN_REGISTRY_ATTEMPTS": "4"}

    text = wheelpin("reconcile", "--once", "--repo", str(world.downstream), env={**world.env, **env})
    assert text.code == 4, said(text)
    assert re.search(
        re.escape(f"{PINNED_AT}: {closed} refused the connection, 4 tries in ") + r"\d+(\.\d)? s\n", text.stdout
    ), said(text)
    assert said(text).count("refused the connection") == 1, said(text)

    report = world.reconcile(**env)
    assert report.code == 4 and component(report)["error_kind"] == "transient"
    assert report.json()["requests"]["registry"] == 4  # each try on the wire, on the pinned image's host too


def test_a_dry_run_says_why_the_pinned_image_was_not_read(registry: Registry, tmp_path: Path) -> None:
    """The pin's line of the plan says the registry's sentence, not that the image names
    no commit."""
    path = f"refused-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    closed = f"127.0.0.1:{free_port()}"
    pinned_on(world, f"{closed}/{path}")
    world.commit_upstream("work", {"VERSION": "0.1.1\n"})
    env = {**world.env, "WHEELPIN_REGISTRY_ATTEMPTS": "2"}
    planned = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), "--json", env=env)
    assert planned.code == 4, said(planned)
    pinned = component(planned)["plan"]["pinned"]
    refused = re.escape(f"not read: {closed} refused the connection, 2 tries in ") + r"\d+(\.\d)? s"
    assert re.fullmatch(refused, pinned["why"]), pinned


def test_a_registry_stopped_after_the_pinned_image_was_read_keeps_its_commit(tmp_path: Path) -> None:
    """The pinned image's manifest is in the digest cache from an earlier pass; the
    registry then stops. The plan still names the commit the image was built from (it was
    read), and says where the pass stops: asking the registry whether it still holds that
    image (as an empty cache would stop reading it), refused the connection."""
    own = Registry(tmp_path / "registry")
    try:
        world = make_world(tmp_path, registry=f"{own.host}/stopped/demo-cache")
        first = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
        assert first.code == 0, said(first)
    finally:
        own.stop()
    pinned_commit = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    head = world.commit_upstream("work", {"VERSION": "0.1.1\n"})
    env = {**world.env, "WHEELPIN_REGISTRY_ATTEMPTS": "2"}
    planned = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=env)
    assert planned.code == 4, said(planned)
    assert f"    its wheel 0.1.0+g{pinned_commit[:8]}.rocm7.2.4, built from {pinned_commit[:8]}\n" in planned.stdout
    assert "commit is not known" not in planned.stdout and "no revision" not in planned.stdout
    asked = f"asking {own.host}/stopped/demo-cache whether it still holds the image pinned at docker/Dockerfile:2"
    assert f"  refused: {asked}: " in planned.stdout, said(planned)
    assert head[:8] not in planned.stdout.split("  refused:", 1)[1]  # nothing looked for after it
    assert f"{own.host} refused the connection, 2 tries in " in planned.stdout
    document = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), "--json", env=env)
    assert component(document)["plan"]["pinned"]["commit"] == pinned_commit


def test_a_tag_guard_or_a_check_failing_beside_an_outside_failure_exits_1() -> None:
    from bot.commands.reconcile_cmd import exit_code
    from bot.loop.results import ComponentResult, PassResult, Status

    def ended(*kinds: str) -> int:
        results = [ComponentResult(f"c{i}", Status.FAILED, error_kind=kind) for i, kind in enumerate(kinds)]
        return exit_code(PassResult(results, False))

    assert ended("transient", "transient") == 4
    assert ended("transient", "verification") == 1
    assert ended("reported") == 1


@pytest.mark.parametrize(
    "command",
    [
        ("image", "show", "{host}/x/demo@sha256:" + "0" * 64),
        ("wheel", "diff", "{host}/x/demo@sha256:" + "0" * 64, "{wheel}"),
        ("image", "check", "{wheel}", "--consumer", "{host}/x/vllm@sha256:" + "0" * 64),
        (
            "pins",
            "bump",
            "--repo",
            "{repo}",
            "--component",
            "demo-cache",
            "--image",
            "{host}/x/demo@sha256:" + "0" * 64,
        ),
    ],
)
def test_every_command_that_reads_a_registry_exits_4_when_it_refuses(
    command: tuple[str, ...], tmp_path: Path, small_wheels: tuple[Path, Path]
) -> None:
    world = make_world(tmp_path)
    closed = f"127.0.0.1:{free_port()}"
    pinned_on(world, f"{closed}/x/demo")
    args = [part.format(host=closed, wheel=small_wheels[0], repo=world.downstream) for part in command]
    result = wheelpin(*args, env={**world.env, "WHEELPIN_REGISTRY_ATTEMPTS": "2"})
    assert result.code == 4, said(result)
    assert re.search(re.escape(f"{closed} refused the connection, 2 tries in ") + r"\d\.\d s\n", result.stderr), said(
        result
    )
    assert said(result).count("refused the connection") == 1
    assert "  4  a transient outside failure" in wheelpin(*command[:2], "--help").stdout


def test_a_pinned_digest_the_registry_lost_is_said_so_not_none_pinned(registry: Registry, tmp_path: Path) -> None:
    path = f"lost-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    pinned = re.search(r'DEMO_WHEEL_IMAGE="([^"]+)"', (world.downstream / "docker/Dockerfile").read_text())
    assert pinned is not None
    ref = pinned.group(1)
    assert RegistryClient(registry.host).delete_manifest(path, ref.rsplit("@", 1)[1])
    world.commit_upstream("work", {"VERSION": "0.1.1\n"})

    first = git(["rev-list", "--max-parents=0", "HEAD"], cwd=world.upstream).strip()
    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert f"    not read: {PINNED_NOT_FOUND}; its tag names {first[:8]}\n" in dry.stdout, said(dry)
    assert f"  commits: 1 commit after {first[:8]} (named by the pinned image's tag), newest first\n" in dry.stdout

    text = wheelpin("reconcile", "--once", "--repo", str(world.downstream), env=world.env)
    assert text.code == 0, said(text)
    sentence = f"the pinned digest is not in the registry (404): {ref}"
    assert f"  ! {sentence}\n" in text.stdout and said(text).count(sentence) == 1, said(text)
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    head = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    short = ref.rsplit("/", 1)[-1].split("@")[0] + "@" + ref.rsplit("@", 1)[1][:19]  # sha256: and 12 hex
    assert f"from `{short}` (the pinned digest is not in the registry (404)), whose tag names `{first[:8]}`, to" in body
    # the image was not read: said once, and nothing compared with it as if it were empty
    section = body.split("### From → to\n", 1)[1].split("\n\n", 1)[0].splitlines()
    held = re.search(r"DEMO_WHEEL_SHA256=([0-9a-f]{64})", (world.downstream / "docker/Dockerfile").read_text())
    new = re.search(r"DEMO_WHEEL_SHA256=([0-9a-f]{64})", world.branch_file())
    assert held is not None and new is not None
    assert section[:3] == [
        f"- ⚠️ **the pinned image could not be read ({PINNED_NOT_FOUND}): nothing below is compared with it**",
        f"- version `0.1.1+g{head[:8]}.rocm7.2.4`",
        # the pin takes the image's only wheel: the value it held is not said to be a py3 wheel's
        f"- sha256 `{held.group(1)[:16]}…` (`docker/Dockerfile:3`, the pinned wheel's) → `py3` `{new.group(1)[:16]}…`",
    ]
    assert len(section) == 3, section
    assert f"### Commits\n1 commit after {first[:8]} (named by the pinned image's tag):\n- `{head[:8]}` work\n" in body
    assert "### Requires-Dist\nThe new wheels' (not compared: the pinned image could not be read):\n- `numpy" in body
    assert "added" not in body and "(none)" not in body and "does not record" not in body
    assert "none pinned" not in body and "nothing pinned" not in body
    assert sentence in component(world.reconcile())["notes"]  # and in --json, and on the dashboard


def test_a_pinned_digest_the_registry_lost_after_it_was_cached_is_said_as_with_an_empty_cache(
    registry: Registry, tmp_path: Path
) -> None:
    """The pinned image read once (its manifest and config now in the digest cache), then
    deleted from the registry, the upstream unchanged: the cache cannot tell, so each pass
    asks the registry (a HEAD); the dry run and the pass say the 404 and repair the pin,
    as they do with an empty cache, instead of "nothing" at the head."""
    path = f"lostcached-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    pinned = re.search(r'DEMO_WHEEL_IMAGE="([^"]+)"', (world.downstream / "docker/Dockerfile").read_text())
    assert pinned is not None
    ref = pinned.group(1)
    held = world.reconcile()
    assert held.code == 0 and component(held)["status"] == "nothing", said(held)
    cached = Path(world.env["WHEELPIN_CACHE_DIR"]) / "content" / "sha256" / ref.rsplit(":", 1)[1]
    assert cached.is_file()  # the pinned manifest, as bot/app/wiring.py's DigestCache keeps it
    assert RegistryClient(registry.host).delete_manifest(path, ref.rsplit("@", 1)[1])

    head = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert dry.code == 0, said(dry)
    assert f"    not read: {PINNED_NOT_FOUND}; its tag names {head[:8]}\n" in dry.stdout, said(dry)
    assert "nothing to do" not in dry.stdout, said(dry)

    text = world.reconcile()  # the dry run before it must predict it (tests/fixtures/dryreal.py)
    assert text.code == 0 and component(text)["status"] == "done", said(text)
    assert f"the pinned digest is not in the registry (404): {ref}" in component(text)["notes"]
    assert f"g{head[:8]}" in world.branch_file() and ref not in world.branch_file()


def test_a_pinned_image_that_cannot_be_read_is_said_by_the_pass_too(registry: Registry, tmp_path: Path) -> None:
    """A pinned digest the registry holds, but whose one layer is no archive (an image
    pushed by a broken tool): the pass says why on its own `!` line, as it says a lost
    digest, not only the proposal."""
    path = f"broken-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    client = RegistryClient(registry.host)
    layer = b"not an archive of any kind\n"
    layer_digest = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.dumps(
        {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [layer_digest]}}
    ).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    for digest, data in ((layer_digest, layer), (config_digest, config)):
        client.upload_blob(path, digest, len(data), lambda data=data: [data])
    # an OCI image manifest (https://github.com/opencontainers/image-spec/blob/main/manifest.md)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": len(layer)}
            ],
        }
    ).encode()
    digest = client.put_manifest(path, "broken", manifest, "application/vnd.oci.image.manifest.v1+json")
    dockerfile = world.downstream / "docker/Dockerfile"
    text = dockerfile.read_text()
    pinned = re.search(r'DEMO_WHEEL_IMAGE="([^"]+)"', text)
    assert pinned is not None
    ref = pinned.group(1).rsplit("@", 1)[0] + "@" + digest
    dockerfile.write_text(text.replace(pinned.group(1), ref))
    git(["commit", "--quiet", "-am", "pin an image another tool broke"], cwd=world.downstream, env=HUMAN)
    world.commit_upstream("work", {"VERSION": "0.1.1\n"})

    result = wheelpin("reconcile", "--once", "--repo", str(world.downstream), env=world.env)
    assert result.code == 0, said(result)
    line = next((line for line in result.stdout.splitlines() if line.startswith("  ! the pinned image ")), None)
    assert line is not None and line.startswith(f"  ! the pinned image {ref} could not be read: "), said(result)
    assert said(result).count(line[4:]) == 1, said(result)


def test_a_consuming_image_the_registry_cannot_give_is_refused_by_the_dry_run(tmp_path: Path) -> None:
    """The consuming image in a registry that refuses the connection: the real pass builds,
    then stops at its publish reading it (exit 4); the dry run asks that registry for the
    image's manifest too, and refuses in the plan, in the pass's own sentence, where it said
    "would build, publish, propose" and exited 0. `world.reconcile` holds the dry run's
    plan to what the real pass then did (tests/fixtures/dryreal.py)."""
    world = make_world(tmp_path)
    closed = f"127.0.0.1:{free_port()}"
    base = f"{closed}/rocm/pytorch@sha256:{'0' * 64}"
    world.set_config(
        'constraints = ["numpy==2.3.5"]', f'constraints = ["numpy==2.3.5"]\nconsumer = {{ image = "{base}" }}'
    )
    world.commit_upstream("work", {"VERSION": "0.1.1\n"})
    env = {"WHEELPIN_REGISTRY_ATTEMPTS": "2"}
    sentence = re.escape(
        f"reading the consuming image {base} (to check the wheels against it): "
        f"{closed} refused the connection, 2 tries in "
    )

    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env={**world.env, **env})
    assert dry.code == 4, said(dry)
    assert re.search(r"  refused: " + sentence + r"\d+(\.\d)? s\n", dry.stdout), said(dry)
    assert "the real pass would fail (exit 4)" in dry.stdout, said(dry)

    real = world.reconcile(**env)  # the dry run before it predicted this
    assert real.code == 4, said(real)
    assert [action["kind"] for action in component(real)["actions"]] == ["build", "publish"]
    assert re.fullmatch(sentence + r"\d+(\.\d)? s", component(real)["messages"][-1]), component(real)


def test_a_consuming_image_the_registry_holds_is_resolved_by_the_dry_run(tmp_path: Path, registry: Registry) -> None:
    """The dry run's asking is counted with its requests: its manifest and config, no layer."""
    from tests.adapters.test_consumer import push_busybox

    world = make_world(tmp_path)  # its images in an OCI layout folder: the registry is the consumer's alone
    base = f"{registry.host}/base/busybox@{push_busybox(registry)}"
    world.set_config(
        'constraints = ["numpy==2.3.5"]', f'constraints = ["numpy==2.3.5"]\nconsumer = {{ image = "{base}" }}'
    )
    world.commit_upstream("work", {"VERSION": "0.1.1\n"})
    dry = world.reconcile("--dry-run")
    assert dry.code == 0, said(dry)
    assert component(dry)["plan"]["refusals"] == [] and dry.json()["requests"]["registry"] == 2, dry.json()
    assert world.reconcile().code == 0


def test_a_failed_build_says_once_when_it_is_tried_again(world: World) -> None:
    world.commit_upstream("broken", {"build_wheel.py": "import sys\nprint('compiler error')\nsys.exit(3)\n"})
    run = ("reconcile", "--once", "--repo", str(world.downstream))
    failed = wheelpin(*run, env=world.env)
    assert failed.code == 1, said(failed)
    assert said(failed).count("failed (exit 3)") == 1, said(failed)
    assert len(re.findall(RETRY, failed.stdout)) == 1 and re.search(RETRY, failed.stderr) is None, said(failed)
    again = wheelpin(*run, env=world.env)
    assert again.code == 1 and said(again).count("failed (exit 3)") == 1, said(again)
    assert len(re.findall(RETRY, again.stdout)) == 1, said(again)
    assert re.fullmatch(RETRY, component(world.reconcile())["retry"])
    assert component(world.reconcile("--retry-failed"))["actions"][0]["kind"] == "build"


def test_the_summary_of_a_pass_says_what_its_proposal_is_loud_about(
    tmp_path: Path, consumer_images: ConsumerImages
) -> None:
    world = make_world(tmp_path)
    world.set_config('constraints = ["numpy==2.3.5"]', f'consumer = {{ image = "{consumer_images.rocm7}" }}')
    world.commit_upstream("work", {"VERSION": "0.1.1\n", "requirements.txt": "numpy<=2.2.6\ntorch>=2.9\nmsgspec\n"})
    text = wheelpin("reconcile", "--once", "--repo", str(world.downstream), env=world.env)
    assert text.code == 0, said(text)
    conflict = "  ! constraint conflict: `numpy<=2.2.6` (the new wheel) vs `numpy==2.3.5` (the image) — new\n"
    # one parenthetical, and no claim of how the image installs the wheel (no config says)
    absent = (
        "new to the consuming image: `msgspec` (nothing installed there provides it; pip brings it in with the "
        "wheel, `--no-deps` leaves it out)"
    )
    assert conflict in text.stdout and f"  ! {absent}\n" in text.stdout, text.stdout
    assert text.stdout.count(conflict) == 1 and text.stdout.count("`msgspec`") == 1, text.stdout
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5` — **new**" in body and f"\n- {absent}\n" in body
    # a pure Python wheel: no library check to pass, said as such
    assert "- ✅ no ELF file in the wheels needs a shared library\n" in body and "ELF files need" not in body


def test_a_pass_that_fails_at_the_consuming_image_lists_its_publish_as_failed(world: World) -> None:
    """The consuming image is read before publishing (its libraries are checked): a registry
    that refuses fails the publish, which the pass lists as tried, not done; nothing is
    published."""
    closed = f"127.0.0.1:{free_port()}"
    world.set_config(
        'constraints = ["numpy==2.3.5"]', f'consumer = {{ image = "{closed}/rocm/base@sha256:{"0" * 64}" }}'
    )
    head = world.commit_upstream("work", NEW_VERSION)
    tags = world.layout_tags()
    text = wheelpin("reconcile", "--once", "--repo", str(world.downstream), env=world.env)
    assert text.code == 4, said(text)
    assert f"demo-cache: failed at {head[:8]}\n  build\n  publish (failed)\n" in text.stdout, said(text)
    assert world.layout_tags() == tags and world.branch() is None
    again = wheelpin("reconcile", "--once", "--json", "--repo", str(world.downstream), env=world.env)
    assert (component(again)["failed_at"], component(again)["error_kind"]) == ("publish", "transient")


def test_an_upstream_that_refuses_is_said_once_and_exits_4(world: World) -> None:
    closed = f"http://127.0.0.1:{free_port()}/upstream.git"
    world.set_config('repo = "../upstream"', f'repo = "{closed}"')
    text = wheelpin("reconcile", "--once", "--repo", str(world.downstream), env=world.env)
    assert text.code == 4, said(text)
    assert (
        f"  - asking the upstream for its head (to find what to build): {closed}: git ls-remote failed (" in text.stdout
    ), said(text)
    assert said(text).count("ls-remote") == 1, said(text)


def test_a_dry_run_meets_the_refusals_of_a_proposal_in_the_pass_s_order(registry: Registry, tmp_path: Path) -> None:
    """An image published and a proposal to write only: the pass plans its pin edits (a pin
    in another repository is refused there, exit 1) before it reads the consuming image, so
    a consumer's registry that refuses the connection is not what it stops at; the dry run
    says the same first refusal and exit (`world.reconcile` holds it to the pass)."""
    path = f"order-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    pinned_on(world, f"{registry.host}/elsewhere-{uuid.uuid4().hex[:8]}/demo-cache")  # the registry answers 404
    world.commit_upstream("work", NEW_VERSION)
    published = world.reconcile()
    assert published.code == 1, said(published)
    assert [action["kind"] for action in component(published)["actions"]] == ["build", "publish", "propose"]
    closed = f"127.0.0.1:{free_port()}"
    world.set_config(
        'constraints = ["numpy==2.3.5"]',
        f'constraints = ["numpy==2.3.5"]\nconsumer = {{ image = "{closed}/rocm/pytorch@sha256:{"0" * 64}" }}',
    )
    env = {"WHEELPIN_REGISTRY_ATTEMPTS": "2"}

    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env={**world.env, **env})
    assert dry.code == 1, said(dry)
    refusals = [line for line in dry.stdout.splitlines() if line.startswith("  refused: ")]
    assert len(refusals) == 2 and "but docker/Dockerfile:2 pins " in refusals[0], said(dry)
    assert f"{closed} refused the connection" in refusals[1], said(dry)  # after it, as the pass would meet it

    real = world.reconcile(**env)  # the dry run before it predicted this
    assert real.code == 1 and component(real)["error_kind"] == "usage", said(real)
    assert [action["kind"] for action in component(real)["actions"]] == ["propose"]

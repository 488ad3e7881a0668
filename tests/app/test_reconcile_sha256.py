"""A pin's sha256 ARG through a pass, end to end on the local platform (real git repositories,
the upstream's own build script, an OCI layout folder), when the image holds two wheels of
the python tag the ARG names.

wheelpin's own build never gets there: the wheel set check (one wheel per python tag)
refuses such a build before anything is published. An image under the commit's tag that
carries wheelpin's annotations for this commit, component and rules is taken as verified
without a check, though (loop/observe.py `_found`): pushed by another wheelpin whose checks
differ, or by a tool copying the annotations. Its proposal is refused in the sentence `pins
bump --image` says, the dry run says it too, and dropping the sha256 ARG from the pin lets
the same image be proposed."""

from __future__ import annotations

import re
from pathlib import Path

from bot.adapters.configdisk import load_config
from bot.adapters.git import git
from bot.adapters.imageread import read_image
from bot.adapters.imagestore import LayoutStore
from bot.adapters.publisher import publish
from bot.commands.demo import BUILD_SCRIPT
from bot.core.checks.digest import rules_digest
from bot.core.wheel.report import inspect_wheel
from tests.app.worlds import BRANCH, World, component, runner_build
from tests.cli import wheelpin

# The demo's build script, building its wheel for two manylinux platforms of CPython 3.12,
# as a build matrix over glibc versions yields them: two wheels of one python tag.
_EACH_PLATFORM = 'platform = "linux_x86_64" if any(path.endswith(".so") for path in files) else "any"\n'
_HEAD, _TAIL = BUILD_SCRIPT.split(_EACH_PLATFORM)
TWO_CP312_WHEELS = (
    _HEAD
    + "sources = dict(files)\n"
    + 'for platform in ("manylinux_2_28_x86_64", "manylinux_2_34_x86_64"):\n'
    + "    files = dict(sources)\n"
    + "".join(f"    {line}\n" if line else "\n" for line in _TAIL.replace("py3-none-", "cp312-cp312-").splitlines())
)
ONE_CP312_WHEEL = TWO_CP312_WHEELS.replace(', "manylinux_2_34_x86_64")', ",)")
PIN = 'sha256_arg = "DEMO_WHEEL_SHA256"'
CP312_PIN = 'sha256_arg = "DEMO_WHEEL_SHA256_CP312", python_tag = "cp312"'
CHECKED = (
    "checked before the proposal, the image published: one wheel in it for each sha256 ARG (DEMO_WHEEL_SHA256_CP312)"
)


def pin_the_cp312_wheel(world: World) -> None:
    """The maintainer pins the sha256 of the cp312 wheel: the ARG and the config say so."""
    dockerfile = world.downstream / "docker" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("DEMO_WHEEL_SHA256", "DEMO_WHEEL_SHA256_CP312"))
    world.set_config(PIN, CP312_PIN)  # commits the Dockerfile too


def test_a_build_of_two_wheels_of_one_python_tag_is_refused_before_publishing(world: World) -> None:
    pin_the_cp312_wheel(world)
    world.set_config('distribution = "demo-cache"', 'distribution = "demo-cache", python_tags = ["cp312"]')
    world.commit_upstream("two glibc builds", {"VERSION": "0.1.1\n", "build_wheel.py": TWO_CP312_WHEELS})
    planned = component(world.reconcile("--dry-run"))["plan"]
    assert not planned["fails"] and CHECKED in planned["after_build"]
    refused = world.reconcile()
    assert refused.code == 1
    message = component(refused)["messages"][-1]
    assert "nothing published" in message and "expected one wheel for cp312, found 2" in message
    assert world.branch() is None and len(world.layout_tags()) == 1


def publish_build(world: World, tmp_path: Path, head: str, version: str) -> list[Path]:
    """Publish a runner's build of `head` to the world's layout under the tag a pass gives
    it, with the component's name and rules digest, as if a pass had verified it."""
    wheels = runner_build(world, tmp_path, head)
    demo = load_config(world.downstream / "wheelpin.toml", root=world.downstream).config.components[0]
    publish(
        LayoutStore(world.root / "images"),
        f"demo-cache-v{version}-g{head[:8]}",
        wheels,
        [inspect_wheel(wheel) for wheel in wheels],
        revision=head,
        component=demo.name,
        rules=rules_digest(demo),
        settle=0,
    )
    return wheels


def test_an_image_taken_as_verified_with_two_wheels_of_the_pins_tag_is_not_proposed(
    world: World, tmp_path: Path
) -> None:
    pin_the_cp312_wheel(world)
    head = world.commit_upstream("two glibc builds", {"VERSION": "0.1.1\n", "build_wheel.py": TWO_CP312_WHEELS})
    wheels = publish_build(world, tmp_path, head, "0.1.1")
    sentence = (
        "docker/Dockerfile:3: DEMO_WHEEL_SHA256_CP312 takes the sha256 of the cp312 wheel, but the image "
        f"holds 2 cp312 wheels ({', '.join(wheel.name for wheel in wheels)}), and a sha256 ARG names its wheel "
        "by python tag alone: the component's image must hold one cp312 wheel for this pin to be written, "
        "or the pin must drop its sha256_arg"
    )
    foreseen = component(world.reconcile("--dry-run"))["plan"]
    assert (foreseen["fails_at"], foreseen["error_kind"], foreseen["refusals"]) == (
        "propose",
        "verification",
        [sentence],
    )
    for _ in range(2):  # not recorded: each pass meets it again, until the pin or the image changes
        refused = world.reconcile()
        said = component(refused)
        assert refused.code == 1 and [a["kind"] for a in said["actions"]] == ["propose"], refused.stdout
        assert (said["error_kind"], said["messages"][-1], said["problems"]) == ("verification", sentence, [sentence])
        assert world.branch() is None  # no sha256 was guessed

    # what the sentence says resolves it: the pin drops its sha256 ARG, the same image is proposed
    dockerfile = world.downstream / "docker" / "Dockerfile"
    dockerfile.write_text("".join(line for line in dockerfile.read_text().splitlines(True) if "SHA256" not in line))
    world.set_config(", " + CP312_PIN, "")
    proposed = world.reconcile()
    assert component(proposed)["status"] == "done", proposed.stdout + proposed.stderr
    assert f"g{head[:8]}@sha256:" in world.branch_file()


def test_one_wheel_of_the_pins_tag_is_proposed_with_its_own_sha256(world: World) -> None:
    pin_the_cp312_wheel(world)
    head = world.commit_upstream("one glibc build", {"VERSION": "0.1.1\n", "build_wheel.py": ONE_CP312_WHEEL})
    proposed = world.reconcile()
    assert component(proposed)["status"] == "done", proposed.stdout + proposed.stderr
    text = world.branch_file()
    digest = re.search(rf"g{head[:8]}@(sha256:[0-9a-f]{{64}})", text)
    assert digest is not None, text
    (wheel,) = read_image(LayoutStore(world.root / "images"), digest.group(1)).wheels
    assert wheel.file.endswith("-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert f"ARG DEMO_WHEEL_SHA256_CP312={wheel.sha256}\n" in text


def test_the_dry_run_says_an_only_wheel_sha256_arg_moving_from_a_cp312_wheel_to_a_py3_one(
    world: World, tmp_path: Path
) -> None:
    """The pin takes the image's only wheel; a cp312 wheel was proposed and merged, then
    the upstream builds a py3 wheel again, its image already published: the dry run's pin
    lines say that DEMO_WHEEL_SHA256 moves to the py3 wheel's sha256, as `pins bump` says
    it (core/pins/sha256.py tag_moved), and its --json lists it under `tags_moved`."""
    world.commit_upstream("one glibc build", {"VERSION": "0.1.1\n", "build_wheel.py": ONE_CP312_WHEEL})
    assert component(world.reconcile())["status"] == "done"
    git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream)  # the maintainer merges
    head = world.commit_upstream("pure Python again", {"VERSION": "0.1.2\n", "build_wheel.py": BUILD_SCRIPT})
    publish_build(world, tmp_path, head, "0.1.2")
    line = next(
        number
        for number, text in enumerate((world.downstream / "docker" / "Dockerfile").read_text().splitlines(), start=1)
        if text.startswith("ARG DEMO_WHEEL_SHA256=")
    )
    sentence = (
        f"docker/Dockerfile:{line} DEMO_WHEEL_SHA256 now holds the py3 wheel's sha256: no cp312 wheel in the image "
        "(the pin takes its only wheel)"
    )
    assert component(world.reconcile("--dry-run"))["plan"]["tags_moved"] == [sentence]
    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert f"\n    ! {sentence}\n" in text.stdout, text.stdout

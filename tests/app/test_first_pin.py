"""The first pin, end to end: an image published with an abbreviated revision (as an
older wheelpin's `image publish --revision 6e30b3198` stored it) is that commit's build,
`image publish` records only a full commit, and a tag holding other content is said with
what to do about it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from bot.adapters.git import git
from bot.adapters.imagestore import ImageStore, LayoutStore, RegistryRepository
from bot.adapters.inspectpool import inspect_wheel
from bot.adapters.publisher import publish
from bot.adapters.registry import RegistryClient
from tests.app.worlds import BRANCH, HUMAN, NEW_VERSION, World, component, make_world, runner_build
from tests.cli import wheelpin
from tests.fixtures.servers import Registry


def _pin_short_revision(world: World, store: ImageStore, wheels: list[Path], tag: str, commit: str) -> str:
    """The world's first pin replaced by an image of `wheels` whose revision annotation is
    `commit`'s first 9 hex, pushed through the publish code path as an older wheelpin's
    `image publish --revision` pushed it; the digest pinned now."""
    dockerfile = world.downstream / "docker" / "Dockerfile"
    text = dockerfile.read_text()
    old = text.split("@", 1)[1].split('"', 1)[0]
    assert store.delete(old)  # the image pinned by hand, and so its tag
    reports = [inspect_wheel(wheel) for wheel in wheels]
    published = publish(store, tag, wheels, reports, source="../upstream", revision=commit[:9], component="demo-cache")
    dockerfile.write_text(text.replace(old, published.digest))
    git(["commit", "--quiet", "-am", "Pin the first image"], cwd=world.downstream, env=HUMAN)
    return published.digest


@pytest.mark.parametrize("where", ["layout", "registry"])
def test_the_first_hour_with_a_short_revision_is_nothing_to_do(where: str, registry: Registry, tmp_path: Path) -> None:
    """Upstream's head is the pinned commit, whose image records its revision abbreviated:
    the base pins the head, so the pass has nothing to do (it once read the tag as holding
    another commit's build and exited 1)."""
    path = f"first-{uuid.uuid4().hex[:8]}/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}" if where == "registry" else None)
    store: ImageStore = (
        LayoutStore(world.root / "images")
        if where == "layout"
        else RegistryRepository(RegistryClient(registry.host), path)
    )
    first = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    wheels = sorted((world.root / "first-build").glob("*.whl"))
    _pin_short_revision(world, store, wheels, f"demo-cache-v0.1.0-g{first[:8]}", first)
    # a new user's first pass: no mirror of the upstream yet, so the abbreviation is not
    # resolved by luck against one made earlier
    shutil.rmtree(Path(world.env["WHEELPIN_CACHE_DIR"]) / "upstream")
    result = world.reconcile()
    assert result.code == 0, result.stdout + result.stderr
    assert (component(result)["status"], component(result)["pinned"]) == ("nothing", first), result.stdout
    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert text.code == 0, text.stdout + text.stderr
    assert "not the build of" not in text.stdout
    head = world.commit_upstream("work", NEW_VERSION)  # then upstream moves on: proposed from the pinned commit
    moved = world.reconcile()
    assert moved.code == 0, moved.stdout + moved.stderr
    assert component(moved)["pinned"] == first
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert f"from `{first[:8]}` to `{head[:8]}`" in message, message


def test_an_image_of_the_head_with_a_short_revision_is_its_build(world: World, tmp_path: Path) -> None:
    """The head's image, published by hand with an abbreviated revision before the base
    pins it: it is the head's build (adopted and proposed), not a tag holding other content."""
    head = world.commit_upstream("work", NEW_VERSION)
    wheels = runner_build(world, tmp_path, head)
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    store = LayoutStore(world.root / "images")
    publish(store, tag, wheels, [inspect_wheel(w) for w in wheels], revision=head[:9], component="demo-cache")
    result = world.reconcile()
    assert result.code == 0, result.stdout + result.stderr
    assert [a["kind"] for a in component(result)["actions"]] == ["adopt", "propose"]
    assert f"{tag}@sha256:" in git(["show", "wheelpin/demo-cache:docker/Dockerfile"], cwd=world.downstream)


def test_publish_refuses_an_abbreviated_revision(world: World) -> None:
    """The revision an image records is its build's identity for good: `image publish`
    takes the whole commit and says how to get it, writing nothing otherwise."""
    first = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    wheels = sorted((world.root / "first-build").glob("*.whl"))
    layout = world.root / "fresh-images"
    to = f"oci:{layout}:demo-cache-v0.1.0-g{first[:8]}"
    refused = wheelpin("image", "publish", *map(str, wheels), "--to", to, "--revision", first[:9], env=world.env)
    assert refused.code == 2, refused.stdout + refused.stderr
    assert (
        f"--revision {first[:9]} is not a whole commit: give all 40 hex of the commit the wheels were built from "
        f"(`git rev-parse {first[:9]}` in the upstream's repository prints them)"
    ) in refused.stderr
    assert not layout.exists()
    # as a script may pass it: git prints lowercase, a copy from elsewhere may not be
    done = wheelpin("image", "publish", *map(str, wheels), "--to", to, "--revision", first.upper(), env=world.env)
    assert done.code == 0, done.stderr
    shown = wheelpin("image", "show", to, "--json", env=world.env)
    assert shown.json()["annotations"]["org.opencontainers.image.revision"] == first


def test_a_tag_holding_other_content_says_what_to_do(world: World, tmp_path: Path) -> None:
    """Another wheel under the tag the head's build would take: one sentence saying the two
    ways on, each pass while the tag holds it (reading the tag costs no build); once that
    tag is deleted, the next pass builds."""
    from tests.fixtures.wheels import build_wheel

    head = world.commit_upstream("work", NEW_VERSION)
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    other = build_wheel(tmp_path / "other", name="demo-cache", version=f"0.0.9+g{head[:8]}", files={"x.py": b"other"})
    store = LayoutStore(world.root / "images")
    publish(store, tag, [other], [inspect_wheel(other)])
    said = (
        f"oci:{world.root / 'images'}:{tag} holds {other.name}, whose version 0.0.9+g{head[:8]} takes the tag "
        f"demo-cache-v0.0.9-g{head[:8]}, and wheelpin never overwrites a tag with other content: delete that tag if "
        "it is stale, or change "
        f"demo-cache's image.tag so that the build of {head[:8]} gets another tag"
    )
    for _ in range(2):
        refused = world.reconcile()
        assert refused.code == 1 and component(refused)["messages"] == [said], refused.stdout
        assert world.branch() is None
    store.delete(tag)
    done = world.reconcile()
    assert done.code == 0, done.stdout + done.stderr
    assert [a["kind"] for a in component(done)["actions"]] == ["build", "publish", "propose"]


def test_an_upstream_that_cannot_be_fetched_is_not_said_to_lack_the_pinned_commit(world: World) -> None:
    """The pinned image says its commit abbreviated: finding it fetches the upstream's head.
    The upstream lists its head (`git ls-remote` reads only its refs) but cannot give it
    (the commit's object is gone, so its `git upload-pack` refuses the want, "not our ref",
    and `git fetch` exits non-zero as from an upstream that drops the connection). An outside
    failure, said as such, where the pass stops (exit 4): never that the image's revision
    names no commit the upstream has."""
    first = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    wheels = sorted((world.root / "first-build").glob("*.whl"))
    _pin_short_revision(world, LayoutStore(world.root / "images"), wheels, f"demo-cache-v0.1.0-g{first[:8]}", first)
    shutil.rmtree(Path(world.env["WHEELPIN_CACHE_DIR"]) / "upstream", ignore_errors=True)
    head = world.commit_upstream("work", NEW_VERSION)
    (world.upstream / ".git" / "objects" / head[:2] / head[2:]).unlink()  # listed, and not given

    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert text.code == 4, text.stdout + text.stderr
    sentence = f"fetching {head[:8]} to find the commit the pinned image was built from: "
    unknown = "its upstream commit is not known: the upstream could not be fetched (the pass stops there: see below)"
    assert f"    {unknown}\n" in text.stdout, text.stdout
    assert f"  refused: {sentence}" in text.stdout and f"fetching {head[:8]} failed (" in text.stdout, text.stdout
    assert "names a commit the upstream has" not in text.stdout
    result = world.reconcile()  # the pass stops there too (the dry run before it predicted so)
    assert result.code == 4 and component(result)["error_kind"] == "transient", result.stdout + result.stderr
    assert [action["kind"] for action in component(result)["actions"]] == ["report"], result.stdout


def test_an_ancestry_the_upstream_cannot_tell_stops_the_pass(world: World) -> None:
    """Whether the base already pins a descendant of the head is asked of the upstream's
    history; when the head cannot be fetched (listed, and not given) that is not known, an
    outside failure where the pass stops (exit 4), never a "no" that would have it take the
    head for newer than the pin and go on to build or propose it."""
    shutil.rmtree(Path(world.env["WHEELPIN_CACHE_DIR"]) / "upstream", ignore_errors=True)
    head = world.commit_upstream("work", NEW_VERSION)
    (world.upstream / ".git" / "objects" / head[:2] / head[2:]).unlink()  # listed, and not given

    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert text.code == 4, text.stdout + text.stderr
    assert "to tell whether the base pins a descendant: " in text.stdout, text.stdout
    assert f"fetching {head[:8]} failed (" in text.stdout, text.stdout
    result = world.reconcile()
    assert result.code == 4 and component(result)["error_kind"] == "transient", result.stdout + result.stderr
    assert [action["kind"] for action in component(result)["actions"]] == ["report"], result.stdout

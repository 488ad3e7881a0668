"""Superseded wheel images deleted (`image.prune_after_days`), end to end on
the local platform with the real registry: an image goes once no branch pins it and its
grace period has passed; one a human's branch pins stays, as does one re-tagged by someone
else. Time passing is the state file's clock moved back (`age`)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from bot.adapters.git import git
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.referrers import list_referrers
from bot.adapters.registry import RegistryClient
from tests.app.worlds import BRANCH, HUMAN, World, component, make_world
from tests.fixtures.servers import Registry

DAY = 86_400


def age(world: World, days: float) -> None:
    """As if `days` had passed since wheelpin last looked at its tags."""
    with sqlite3.connect(Path(world.env["WHEELPIN_CACHE_DIR"]) / "state.sqlite") as db:
        db.execute("update unpinned set since = since - ?", (days * DAY,))
        db.execute("update prunes set at = at - ?", (days * DAY,))


def skopeo_tags(host: str, path: str) -> list[str]:
    """The image tags, without the referrers fallback tags (`sha256-…`) that list each
    image's attached provenance and SBOM (fallback_tags says those)."""
    return [tag for tag in all_tags(host, path) if not tag.startswith("sha256-")]


def fallback_tags(host: str, path: str) -> list[str]:
    return [tag for tag in all_tags(host, path) if tag.startswith("sha256-")]


def all_tags(host: str, path: str) -> list[str]:
    out = subprocess.run(
        ["skopeo", "list-tags", "--tls-verify=false", f"docker://{host}/{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    import json

    return sorted(json.loads(out)["Tags"])


def test_an_image_no_branch_pins_goes_after_its_grace_and_one_a_branch_pins_stays(
    registry: Registry, tmp_path: Path
) -> None:
    path = "prune/demo-cache"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    world.set_config(
        'tag = "demo-cache-v{version_base}-g{sha8}" }',
        'tag = "demo-cache-v{version_base}-g{sha8}", prune_after_days = 2 }',
    )
    (first_tag,) = skopeo_tags(registry.host, path)  # the one the base pins by hand
    one = world.commit_upstream("one", {"VERSION": "0.2.0\n"})
    assert world.reconcile().code == 0
    proposed_one = world.branch()
    two = world.commit_upstream("two", {"VERSION": "0.2.1\n"})
    result = world.reconcile()
    assert result.code == 0, result.stderr
    tag_one, tag_two = f"demo-cache-v0.2.0-g{one[:8]}", f"demo-cache-v0.2.1-g{two[:8]}"
    assert skopeo_tags(registry.host, path) == sorted([first_tag, tag_one, tag_two])
    store = RegistryRepository(RegistryClient(registry.host), path)
    digest_one = store.tag_digest(tag_one)
    assert digest_one is not None
    assert len(fallback_tags(registry.host, path)) == 2  # the two images wheelpin published carry documents
    documents_one = [referrer.digest for referrer in list_referrers(store, digest_one)]
    assert len(documents_one) == 2
    assert component(result)["pruned"] == []  # tag one is unpinned from now on: its grace starts

    git(["branch", "try-one", proposed_one], cwd=world.downstream)  # a maintainer tries the first proposal
    age(world, 3)
    kept = world.reconcile()
    assert kept.code == 0 and component(kept)["pruned"] == []
    assert tag_one in skopeo_tags(registry.host, path)

    git(["branch", "-D", "try-one"], cwd=world.downstream)
    age(world, 1)  # unpinned again from here: a new grace, not the days counted before
    assert component(world.reconcile())["pruned"] == []
    age(world, 2)
    pruned = world.reconcile()
    assert pruned.code == 0, pruned.stderr
    assert component(pruned)["pruned"] == [tag_one]
    assert any(tag_one in message for message in component(pruned)["messages"])
    assert skopeo_tags(registry.host, path) == sorted([first_tag, tag_two])  # the base's and the proposal's
    # the pruned image's provenance and SBOM went with it; tag two's stay
    assert digest_one.replace(":", "-") not in fallback_tags(registry.host, path)
    assert len(fallback_tags(registry.host, path)) == 1
    assert [store.tag_digest(document) for document in documents_one] == [None, None]
    assert store.tag_digest(tag_two) is not None and store.tag_digest(first_tag) is not None

    # merged: the first image is no one's now, but someone re-tagged it, so it stays
    git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream, env=HUMAN)
    first_digest = store.tag_digest(first_tag)
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--quiet",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            f"docker://{registry.host}/{path}@{first_digest}",
            f"docker://{registry.host}/{path}:golden",
        ],
        check=True,
        capture_output=True,
    )
    world.reconcile()  # closes the merged proposal
    age(world, 1)
    world.reconcile()  # the first tag's grace starts
    age(world, 3)
    shared = world.reconcile()
    assert component(shared)["pruned"] == []
    assert any("kept " + first_tag in note for note in component(shared)["notes"])
    assert skopeo_tags(registry.host, path) == sorted([first_tag, "golden", tag_two])
    assert component(world.reconcile())["pruned"] == []  # not looked at again before PRUNE_EVERY


def test_pruning_is_off_unless_asked(registry: Registry, tmp_path: Path) -> None:
    path = "prune/off"
    world = make_world(tmp_path, registry=f"{registry.host}/{path}")
    world.commit_upstream("one", {"VERSION": "0.2.0\n"})
    world.reconcile()
    world.commit_upstream("two", {"VERSION": "0.2.1\n"})
    world.reconcile()
    with sqlite3.connect(Path(world.env["WHEELPIN_CACHE_DIR"]) / "state.sqlite") as db:
        assert db.execute("select count(*) from prunes").fetchone() == (0,)
    assert len(skopeo_tags(registry.host, path)) == 3

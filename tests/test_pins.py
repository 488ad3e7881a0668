"""`wheelpin pins list|bump` on golden folders: original/ → expected/, byte for byte."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bot.adapters import checkoutfiles
from bot.core.errors import UsageError
from tests.cli import wheelpin

GOLDEN = Path(__file__).parent / "golden" / "pins"
CASES = sorted(path.name for path in GOLDEN.iterdir())


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def bump(repo: Path, component: str, image: str, sha256: list[str], *extra: str):  # type: ignore[no-untyped-def]
    args = ["pins", "bump", "--repo", str(repo), "--component", component, "--image", image]
    for value in sha256:
        args += ["--sha256", value]
    return wheelpin(*args, *extra)


@pytest.mark.parametrize("case", CASES)
def test_golden_bump(case: str, tmp_path: Path) -> None:
    spec = json.loads((GOLDEN / case / "bump.json").read_text())
    repo = tmp_path / "repo"
    shutil.copytree(GOLDEN / case / "original", repo)
    result = bump(repo, spec["component"], spec["image"], spec["sha256"], "--json")
    assert result.code == 0, result.stderr
    assert result.json()["changed"] is True
    assert tree(repo) == tree(GOLDEN / case / "expected")
    # a second bump to the same values changes nothing and says so
    again = bump(repo, spec["component"], spec["image"], spec["sha256"])
    assert again.code == 0 and "nothing changed" in again.stdout
    assert tree(repo) == tree(GOLDEN / case / "expected")
    # and the reverse bump gives back the original bytes
    back = bump(repo, spec["component"], spec["reverse"]["image"], spec["reverse"]["sha256"])
    assert back.code == 0, back.stderr
    assert tree(repo) == tree(GOLDEN / case / "original")


def test_pins_list(tmp_path: Path) -> None:
    result = wheelpin("pins", "list", "--repo", str(GOLDEN / "atom" / "original"), "--json")
    assert result.code == 0, result.stderr
    pins = result.json()["pins"]
    assert [(p["file"], p["line"], p["sha256_line"]) for p in pins] == [
        ("docker/Dockerfile", 3, 4),
        ("docker/atom_release.dockerfile", 3, 4),
    ]
    assert pins[0]["repository"] == "rocm/atom-dev"
    assert pins[0]["tag"] == "lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210"
    assert pins[0]["digest"].startswith("sha256:259e8f0a") and pins[0]["sha256"].startswith("ecd95a3f")
    text = wheelpin("pins", "list", "--repo", str(GOLDEN / "mooncake" / "original"))
    assert text.code == 0 and text.stdout.count("[cp31") == 4


ATOM = GOLDEN / "atom"
NEW = json.loads((ATOM / "bump.json").read_text())


@pytest.fixture()
def atom(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ATOM / "original", repo)
    return repo


@pytest.mark.parametrize(
    ("image", "sha256", "message"),
    [
        ("rocm/atom-dev:lmcache-v0.5.7-g3d3aa833-rocm-torch210", [NEW["sha256"][0]], "not pinned by digest"),
        ("rocm/atom-dev:latest@sha256:" + "a" * 64, [NEW["sha256"][0]], "does not fit the tag template"),
        (
            "rocm/other:lmcache-v0.5.7-g3d3aa833-rocm-torch210@sha256:" + "a" * 64,
            [NEW["sha256"][0]],
            "pins docker.io/rocm/atom-dev",
        ),
        (NEW["image"], ["abc"], "64 hex digits"),
        ("Rocm/Atom:x@sha256:" + "a" * 64, [NEW["sha256"][0]], "invalid repository path"),
    ],
)
def test_refused_bumps_change_nothing(atom: Path, image: str, sha256: list[str], message: str) -> None:
    before = tree(atom)
    result = bump(atom, "lmcache", image, sha256)
    assert result.code == 2 and message in result.stderr, result.stderr
    assert tree(atom) == before


def test_unknown_component(atom: Path) -> None:
    result = bump(atom, "nope", NEW["image"], NEW["sha256"])
    assert result.code == 2 and "no component 'nope'" in result.stderr


def test_a_misspelt_component_gets_one_sentence_from_every_command(atom: Path) -> None:
    """`pins bump` and `reconcile` name a component the same way, the closest one offered."""
    from bot.adapters.git import git
    from bot.commands.demo import MAINTAINER

    git(["init", "--quiet", "-b", "main"], cwd=atom)
    git(["add", "-A"], cwd=atom)
    git(["commit", "--quiet", "-m", "Pin LMCache"], cwd=atom, env=MAINTAINER)
    said = f"wheelpin: {atom / 'wheelpin.toml'}: no component 'lmcach' (its components: lmcache; did you mean lmcache?)"
    bumped = bump(atom, "lmcach", NEW["image"], NEW["sha256"])
    assert (bumped.code, bumped.stderr.strip()) == (2, said)
    planned = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(atom), "--component", "lmcach")
    assert (planned.code, planned.stderr.strip()) == (2, said)
    two = wheelpin("reconcile", "--once", "--repo", str(atom), "--component", "lmcach", "--component", "zzz")
    assert two.stderr.strip().endswith(
        ": no component 'lmcach', 'zzz' (its components: lmcache; did you mean lmcache?)"
    )


def test_half_bumped_tree_is_impossible(atom: Path) -> None:
    """The second file lost its sha256 ARG: nothing is written to the first one either."""
    release = atom / "docker" / "atom_release.dockerfile"
    release.write_text(release.read_text().replace("ARG LMCACHE_WHEEL_SHA256=", "ARG OTHER_SHA256="))
    before = tree(atom)
    result = bump(atom, "lmcache", NEW["image"], NEW["sha256"])
    assert result.code == 2
    assert "docker/atom_release.dockerfile" in result.stderr and "LMCACHE_WHEEL_SHA256" in result.stderr
    assert tree(atom) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace('ARG LMCACHE_WHEEL_IMAGE="', 'ARG OTHER_IMAGE="'),
            "ARG LMCACHE_WHEEL_IMAGE is not declared",
        ),
        (
            lambda t: t.replace('ARG LMCACHE_WHEEL_IMAGE="rocm', 'ARG LMCACHE_WHEEL_IMAGE\nARG X="rocm'),
            "has no default",
        ),
        (lambda t: t + "ARG LMCACHE_WHEEL_SHA256=" + "f" * 64 + "\n", "defaults that disagree"),
        (
            lambda t: t.replace(
                'ARG LMCACHE_WHEEL_IMAGE="rocm/atom-dev', 'ARG LMCACHE_WHEEL_IMAGE="${REG}/rocm/atom-dev'
            ),
            "uses a variable",
        ),
    ],
)
def test_broken_pins_name_the_file(atom: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    dockerfile = atom / "docker" / "Dockerfile"
    dockerfile.write_text(edit(dockerfile.read_text()))
    before = tree(atom)
    result = bump(atom, "lmcache", NEW["image"], NEW["sha256"])
    assert result.code == 2 and "docker/Dockerfile" in result.stderr and message in result.stderr, result.stderr
    assert tree(atom) == before


def test_a_failed_rename_puts_everything_back(atom: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = tree(atom)
    real_replace = os.replace
    calls = []

    def failing_replace(source, target):  # type: ignore[no-untyped-def]
        calls.append(target)
        if len(calls) == 2:
            raise PermissionError(13, "Permission denied", str(target))
        return real_replace(source, target)

    monkeypatch.setattr(checkoutfiles.os, "replace", failing_replace)
    new = {"docker/Dockerfile": "changed\n", "docker/atom_release.dockerfile": "changed\n"}
    with pytest.raises(UsageError, match="nothing changed"):
        checkoutfiles.write_texts_atomically(atom, new)
    monkeypatch.setattr(checkoutfiles.os, "replace", real_replace)
    assert tree(atom) == before  # no target changed, no temporary file left behind

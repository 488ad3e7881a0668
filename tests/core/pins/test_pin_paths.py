"""Pins never half-bump or escape: path spellings, symlinks, a file edited meanwhile, NUL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.adapters import checkoutfiles
from bot.core.config.model import Component, pin_path
from bot.core.errors import UsageError
from bot.core.pins.bump import plan_bump
from bot.core.pins.locate import DockerfileError, parse
from tests.cli import wheelpin

OLD = "rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:" + "1" * 64
NEW = "rocm/atom-dev:lmcache-v0.5.6.dev103-g3d3aa833-rocm-torch210@sha256:" + "2" * 64
DOCKERFILE = f'FROM base\nARG IMG_A="{OLD}"\nRUN true\nARG IMG_B={OLD}\n'


def component(files: tuple[str, str]) -> Component:
    return Component.model_validate(
        {
            "name": "lmcache",
            "upstream": {"repo": "https://github.com/LMCache/LMCache", "branch": "dev"},
            "wheel": {"distribution": "lmcache"},
            "build": {"command": "make"},
            "image": {"repository": "rocm/atom-dev", "tag": "lmcache-v{version_base}-g{sha8}-rocm-torch210"},
            "pins": [{"file": files[0], "image_arg": "IMG_A"}, {"file": files[1], "image_arg": "IMG_B"}],
        }
    )


def bump_in(root: Path, comp: Component) -> None:
    """What `pins bump` does, without the process."""
    comp = checkoutfiles.canonical_component(comp, root)
    texts = checkoutfiles.read_texts(root, sorted({pin.file for pin in comp.pins}))
    plan = plan_bump(comp, texts, NEW, {})
    checkoutfiles.write_texts_atomically(root, plan.new_texts, expected=texts)


PART = st.sampled_from(["", ".", "./"])
SPELLING = st.builds(
    lambda a, b, c, trail: f"{a}docker/{b}{'/' if b else ''}{c}Dockerfile{trail}",
    st.sampled_from(["", "./", "././"]),
    PART,
    st.sampled_from(["", "/", "./"]),
    st.sampled_from(["", "/", "/."]),
)


@given(SPELLING)
def test_every_spelling_is_one_key(spelling: str) -> None:
    assert pin_path(spelling) == "docker/Dockerfile"


@pytest.mark.parametrize("bad", ["docker/../docker/Dockerfile", "../x", "/etc/passwd", ".", "a\x00b", "a\\b"])
def test_paths_that_cannot_be_one_key_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="must be a path inside the repository"):
        pin_path(bad)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(SPELLING, SPELLING)
def test_two_spellings_of_one_file_keep_both_edits(tmp_path: Path, first: str, second: str) -> None:
    (tmp_path / "docker").mkdir(exist_ok=True)
    (tmp_path / "docker" / "Dockerfile").write_text(DOCKERFILE)
    bump_in(tmp_path, component((first, second)))
    text = (tmp_path / "docker" / "Dockerfile").read_text()
    assert OLD not in text and text.count(NEW) == 2


def test_a_symlink_inside_is_followed_and_edited_once(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text(DOCKERFILE)
    (tmp_path / "alias").symlink_to("docker")
    bump_in(tmp_path, component(("alias/Dockerfile", "docker/Dockerfile")))
    assert (tmp_path / "alias").is_symlink()
    assert (tmp_path / "docker" / "Dockerfile").read_text().count(NEW) == 2


def test_a_hard_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    os.link(tmp_path / "Dockerfile", tmp_path / "Other")
    with pytest.raises(UsageError, match="one file under two paths"):
        bump_in(tmp_path, component(("Dockerfile", "Other")))
    assert (tmp_path / "Dockerfile").read_text() == DOCKERFILE


CONFIG = """[[component]]
name = "lmcache"
upstream = {{ repo = "https://github.com/LMCache/LMCache", branch = "dev" }}
wheel = {{ distribution = "lmcache" }}
build = {{ command = "make" }}
image = {{ repository = "rocm/atom-dev", tag = "lmcache-v{{version_base}}-g{{sha8}}-rocm-torch210" }}
pins = [ {{ file = "{first}", image_arg = "IMG_A" }}, {{ file = "{second}", image_arg = "IMG_B" }} ]
"""


@pytest.mark.parametrize("link", ["folder", "file"])
def test_a_symlink_out_of_the_repository_is_refused(tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Dockerfile").write_text(DOCKERFILE)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "inside").write_text(DOCKERFILE)
    if link == "folder":
        (repo / "docker").symlink_to(outside)
    else:
        (repo / "docker").mkdir()
        (repo / "docker" / "Dockerfile").symlink_to(outside / "Dockerfile")
    (repo / "wheelpin.toml").write_text(CONFIG.format(first="inside", second="docker/Dockerfile"))
    result = wheelpin("pins", "bump", "--repo", str(repo), "--component", "lmcache", "--image", NEW)
    assert result.code == 2 and "outside the repository" in result.stderr, result.stderr
    assert (outside / "Dockerfile").read_text() == DOCKERFILE
    assert (repo / "inside").read_text() == DOCKERFILE  # nothing of the bump written
    validate = wheelpin("config", "validate", "--repo", str(repo))
    assert validate.code == 2 and "outside the repository" in validate.stderr, validate.stderr


def test_a_symlink_appearing_before_the_write_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Dockerfile").write_text("x\n")
    repo = tmp_path / "repo"
    (repo / "docker").mkdir(parents=True)
    (repo / "docker" / "Dockerfile").write_text(DOCKERFILE)
    texts = checkoutfiles.read_texts(repo, ["docker/Dockerfile"])
    (repo / "docker" / "Dockerfile").unlink()
    (repo / "docker" / "Dockerfile").symlink_to(outside / "Dockerfile")
    with pytest.raises(UsageError, match="outside the repository"):
        checkoutfiles.write_texts_atomically(repo, {"docker/Dockerfile": "new\n"}, expected=texts)
    assert (outside / "Dockerfile").read_text() == "x\n"


def test_a_file_edited_meanwhile_is_left_alone_and_so_are_the_others(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old a\n")
    (tmp_path / "b").write_text("old b\n")
    os.chmod(tmp_path / "a", 0o640)
    texts = checkoutfiles.read_texts(tmp_path, ["a", "b"])
    (tmp_path / "b").write_text("a human's edit\n")  # while the bump waited on the registry
    with pytest.raises(UsageError, match="b changed on disk while wheelpin was bumping it"):
        checkoutfiles.write_texts_atomically(tmp_path, {"a": "new a\n", "b": "new b\n"}, expected=texts)
    assert (tmp_path / "a").read_text() == "old a\n" and (tmp_path / "b").read_text() == "a human's edit\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no temporary left
    checkoutfiles.write_texts_atomically(tmp_path, {"a": "new a\n"}, expected=texts)
    assert (tmp_path / "a").read_text() == "new a\n" and (tmp_path / "a").stat().st_mode & 0o777 == 0o640


@given(st.text(alphabet="AR G=x\n#", max_size=40), st.text(alphabet="AR G=x\n#", max_size=40))
def test_a_nul_anywhere_is_refused_with_its_line(before: str, after: str) -> None:
    text = f"FROM a\n{before}\0{after}\nARG IMG_B={OLD}\n"
    with pytest.raises(DockerfileError, match=rf"^D:{text[: text.index(chr(0))].count(chr(10)) + 1}: holds a NUL"):
        parse(text, where="D")

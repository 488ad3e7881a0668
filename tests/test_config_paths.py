"""Paths and addresses a user configures, said back in one sentence when they are wrong: a
pin file or constraints file that is a directory (every command that loads the config),
and WHEELPIN_GITHUB_API_URL written with or without `/api/v3`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.adapters.configdisk import load_config
from bot.app.settings import Settings, load_settings, normalize_github_api_url
from bot.core.config.load import ConfigInvalid
from bot.core.errors import ConfigError
from tests.cli import wheelpin
from tests.core.config.test_config import GOOD

DIGEST = "sha256:" + "a" * 64


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A git checkout whose config pins `docker/Dockerfile`, where `docker` is a folder."""
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker/Dockerfile").write_text(
        f"ARG LMCACHE_WHEEL_IMAGE=docker.io/rocm/atom-dev:x@{DIGEST}\nARG LMCACHE_WHEEL_SHA256={'b' * 64}\nFROM a\n"
    )
    (tmp_path / "docker/atom_release.dockerfile").write_text((tmp_path / "docker/Dockerfile").read_text())
    (tmp_path / ".github").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def configure(repo: Path, old: str, new: str) -> None:
    assert old in GOOD
    (repo / ".github/wheelpin.toml").write_text(GOOD.replace(old, new))


A_FOLDER_AS_PIN = ('{ file = "docker/atom_release.dockerfile",', '{ file = "docker",')
A_FOLDER_AS_CONSTRAINTS = ('constraints = ["numpy==2.3.5"]', 'constraints_file = "docker"')
A_FOLDER_WITH_A_SLASH = ('{ file = "docker/atom_release.dockerfile",', '{ file = "docker/",')


def commands(repo: Path) -> dict[str, list[str]]:
    return {
        "config validate": ["config", "validate", "--repo", str(repo)],
        "pins list": ["pins", "list", "--repo", str(repo)],
        "pins bump": [
            "pins",
            "bump",
            "--repo",
            str(repo),
            "--component",
            "lmcache",
            "--image",
            f"docker.io/rocm/atom-dev:y@{DIGEST}",
            "--sha256",
            "c" * 64,
        ],
        "reconcile": ["reconcile", "--once", "--repo", str(repo)],
    }


@pytest.mark.parametrize("command", ["config validate", "pins list", "pins bump", "reconcile"])
@pytest.mark.parametrize(
    ("change", "what", "key"),
    [
        (A_FOLDER_AS_PIN, "pin file docker", "lmcache.pins[1].file"),
        (A_FOLDER_WITH_A_SLASH, "pin file docker/", "lmcache.pins[1].file"),
        (A_FOLDER_AS_CONSTRAINTS, "constraints file docker", "lmcache.constraints_file"),
    ],
    ids=["pin", "pin-with-slash", "constraints"],
)
def test_a_directory_is_one_sentence(repo: Path, command: str, change: tuple[str, str], what: str, key: str) -> None:
    configure(repo, *change)
    before = (repo / "docker/Dockerfile").read_bytes()
    result = wheelpin(*commands(repo)[command])
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    sentence = f"{key}: {what} is a directory in {repo}, not a file"
    lines = result.stderr.splitlines()
    if command == "config validate":  # each problem on its line, then how many
        assert lines == [
            f"{repo}/.github/wheelpin.toml:{lines[0].split(':')[1]}: {sentence}",
            f"wheelpin: {repo}/.github/wheelpin.toml: 1 problem(s)",
        ]
    else:
        (line,) = lines
        assert line.startswith(f"wheelpin: {repo}/.github/wheelpin.toml:")
        assert line.endswith(f"{sentence} (`wheelpin config validate --repo {repo}` checks the whole config)")
    assert (repo / "docker/Dockerfile").read_bytes() == before


def test_a_directory_in_the_json_of_validate(repo: Path) -> None:
    configure(repo, *A_FOLDER_AS_PIN)
    result = wheelpin("config", "validate", "--repo", str(repo), "--json")
    assert result.code == 2
    (problem,) = result.json()["problems"]
    assert problem.endswith(f"lmcache.pins[1].file: pin file docker is a directory in {repo}, not a file")


def test_a_missing_file_is_still_said_to_be_missing(repo: Path) -> None:
    configure(repo, *('{ file = "docker/atom_release.dockerfile",', '{ file = "docker/nothing",'))
    with pytest.raises(ConfigInvalid) as caught:
        load_config(repo / ".github/wheelpin.toml", root=repo)
    (problem,) = caught.value.problems
    assert problem.endswith(f"pin file docker/nothing does not exist in {repo}")


def test_a_config_that_is_a_directory(repo: Path) -> None:
    result = wheelpin("config", "validate", str(repo / "docker"))
    assert result.code == 2
    assert result.stderr.splitlines() == [f"wheelpin: {repo / 'docker'} is a directory, not a config file"]


# WHEELPIN_GITHUB_API_URL: github3 adds /api/v3 itself, so the setting is https://HOST


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("https://ghe.example.com", "https://ghe.example.com"),
        ("https://ghe.example.com/", "https://ghe.example.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com"),
        ("https://ghe.example.com//api/v3//", "https://ghe.example.com"),
        (" https://ghe.example.com/API/V3 ", "https://ghe.example.com"),
        ("http://127.0.0.1:8123", "http://127.0.0.1:8123"),
        ("http://127.0.0.1:8123/api/v3", "http://127.0.0.1:8123"),
        ("https://ghe.example.com/github", "https://ghe.example.com/github"),
        ("https://api.github.com", None),
        ("https://api.github.com/", None),
        ("https://github.com", None),
        ("https://api.octo.ghe.com", "https://octo.ghe.com"),  # GHE.com: no /api/v3 (adapters/github/host.py)
        ("https://octo.ghe.com/", "https://octo.ghe.com"),
        ("", None),
        (None, None),
    ],
)
def test_github_api_url_is_normalised(given: str | None, meant: str | None) -> None:
    assert normalize_github_api_url(given) == meant
    assert Settings(github_api_url=given).github_api_url == meant


def test_github_api_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHEELPIN_GITHUB_API_URL", "https://ghe.example.com/api/v3/")
    assert load_settings().github_api_url == "https://ghe.example.com"
    monkeypatch.setenv("WHEELPIN_GITHUB_API_URL", "https://api.github.com")
    assert load_settings().github_api_url is None
    monkeypatch.setenv("WHEELPIN_GITHUB_API_URL", "ghe.example.com")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "WHEELPIN_GITHUB_API_URL" in caught.value.message and "https://HOST" in caught.value.message


def test_a_bad_github_api_url_is_one_sentence() -> None:
    # a command that reads the settings (`config` reads none: it checks a file, and starts fast)
    result = wheelpin(
        "pins", "list", "--repo", "/nonexistent", env={"WHEELPIN_GITHUB_API_URL": "ftp://ghe.example.com"}
    )
    assert result.code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("wheelpin: bad setting in the environment: WHEELPIN_GITHUB_API_URL:")


# Where the config is found, and where a command stopping at it points


def test_validate_takes_the_config_as_elsewhere(repo: Path) -> None:
    """`--config FILE` as `pins list` and `reconcile` take it; FILE and --config at once is
    one sentence."""
    configure(repo, 'name = "lmcache"', 'name = "lmcache"')
    path = repo / ".github/wheelpin.toml"
    by_option = wheelpin("config", "validate", "--config", str(path))
    assert by_option.code == 0, by_option.stderr
    assert by_option.stdout == f"{path}: valid, 1 component(s): lmcache\n"
    assert wheelpin("config", "validate", str(path)).stdout == by_option.stdout
    both = wheelpin("config", "validate", str(path), "--config", str(path))
    assert both.code == 2
    assert both.stderr == "wheelpin: give the config file once: as FILE or as --config FILE\n"


@pytest.mark.parametrize("command", [["config", "validate"], ["pins", "list", "--json"]])
def test_the_config_is_found_from_a_subfolder(repo: Path, command: list[str]) -> None:
    """As git finds its repository: from `docker/`, the checkout's `.github/wheelpin.toml`,
    with the pins' paths from the checkout's top."""
    configure(repo, 'name = "lmcache"', 'name = "lmcache"')
    result = wheelpin(*command, cwd=repo / "docker")
    assert result.code == 0, result.stderr
    if command[0] == "pins":
        assert result.json()["root"] == str(repo)
        assert [pin["file"] for pin in result.json()["pins"]] == ["docker/Dockerfile", "docker/atom_release.dockerfile"]
    else:
        assert result.stdout == f"{repo}/.github/wheelpin.toml: valid, 1 component(s): lmcache\n"


def test_no_config_is_looked_for_above_a_checkout(tmp_path: Path) -> None:
    """Outside a git checkout only the folder itself is looked at: a config in a folder
    above belongs to nothing here."""
    (tmp_path / "wheelpin.toml").write_text("")
    (tmp_path / "work").mkdir()
    result = wheelpin("config", "validate", cwd=tmp_path / "work")
    assert result.code == 2
    assert result.stderr == (
        f"wheelpin: {tmp_path / 'work'}: no config found (looked for .github/wheelpin.toml "
        "and wheelpin.toml; or pass --config FILE)\n"
    )


@pytest.mark.parametrize("command", ["pins list", "reconcile"])
def test_a_command_stopping_at_the_config_points_to_validate(repo: Path, command: str) -> None:
    configure(repo, "constraints = [", "constrants = [")
    result = wheelpin(*commands(repo)[command])
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"wheelpin: {repo}/.github/wheelpin.toml:")
    assert result.stderr.endswith(
        f"unknown key, did you mean `constraints`? (`wheelpin config validate --repo {repo}` checks the whole config)\n"
    )


def test_a_pin_that_cannot_be_read_points_to_validate(repo: Path) -> None:
    configure(repo, 'image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg', 'image_arg = "LMCACHE_WHEEL_IMG", sha256_arg')
    config = repo / ".github/wheelpin.toml"
    result = wheelpin("pins", "list", "--config", str(config), "--json")
    assert result.code == 2
    assert result.stderr == (
        "wheelpin: docker/Dockerfile: ARG LMCACHE_WHEEL_IMG is not declared (ARGs here: "
        "LMCACHE_WHEEL_IMAGE, LMCACHE_WHEEL_SHA256; did you mean LMCACHE_WHEEL_IMAGE?) "
        f"(`wheelpin config validate --config {config}` checks the whole config)\n"
    )
    assert result.json()["kind"] == "usage" and "config validate" in result.json()["error"]


def test_reconcile_finds_the_config_from_a_subfolder(tmp_path: Path) -> None:
    """The demo's downstream, a dry run from its `docker/` folder: the pass of the checkout."""
    from tests.app.worlds import make_world

    world = make_world(tmp_path)
    from_top = wheelpin("reconcile", "--once", "--dry-run", "--json", "--repo", str(world.downstream), env=world.env)
    from_below = wheelpin("reconcile", "--once", "--dry-run", "--json", env=world.env, cwd=world.downstream / "docker")
    assert from_below.code == from_top.code == 0, from_below.stderr
    assert from_below.json()["components"] == from_top.json()["components"]
    assert [c["component"] for c in from_below.json()["components"]] == ["demo-cache"]

"""A config read from GitHub names only remote git URLs and registry references
(core/config/hostreach.py): nothing in it reaches the bot's host unless the operator allows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.config.load import ConfigInvalid, load_config_text

CONFIG = """\
[[component]]
name = "lmcache"
upstream = {{ repo = "{repo}", branch = "dev" }}
wheel = {{ distribution = "lmcache" }}
build = {{ workflow = "build.yml", inputs = {{ commit = "{{sha}}" }} }}
image = {{ repository = "{image}", tag = "lmcache-{{sha8}}" }}
pins = [{{ file = "Dockerfile", image_arg = "LMCACHE_IMAGE" }}]
"""


def load(repo: str, image: str = "ghcr.io/rocm/lmcache-wheel", *, github: bool = True, host_paths: bool = False):  # type: ignore[no-untyped-def]
    text = CONFIG.format(repo=repo, image=image)
    return load_config_text(
        text,
        path=Path("rocm/atom/wheelpin.toml"),
        root=Path("/dev/null/rocm/atom"),
        exists=None,
        from_github=github,
        host_paths=host_paths,
    )


@pytest.mark.parametrize(
    "repo",
    [
        "https://github.com/LMCache/LMCache",
        "ssh://git@github.com/LMCache/LMCache.git",
        "git@github.com:LMCache/LMCache.git",
        "deploy@git.example.org:rocm/lmcache.git",
        "github.com:LMCache/LMCache.git",  # scp-like without a user: ssh too (git-clone(1), "GIT URLS")
        "git://example.com/x.git",
    ],
)
def test_remote_git_urls_pass(repo: str) -> None:
    assert load(repo).config.components[0].upstream.repo == repo


@pytest.mark.parametrize(
    "repo",
    [
        "file:///srv/private.git",
        "/srv/private.git",
        "../upstream",
        "private.git",
        "ext::sh -c touch% /tmp/pwned",
        "fd::17",
        "./host:path",
        "/srv/host:path",
        "https:///nohost",
        "ssh://-oProxyCommand=x/y",
    ],
)
def test_a_path_on_the_host_is_refused_in_one_sentence(repo: str) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load(repo)
    (problem,) = caught.value.problems
    assert "lmcache.upstream.repo: a config read from GitHub names a remote git URL" in problem
    assert problem.startswith("rocm/atom/wheelpin.toml:3:")


@pytest.mark.parametrize("image", ["oci:/srv/images", "oci:../images"])
def test_an_oci_layout_is_refused(image: str) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        load("https://github.com/LMCache/LMCache", image)
    (problem,) = caught.value.problems
    assert "lmcache.image.repository: a config read from GitHub names a registry repository" in problem


def test_the_operators_setting_lets_absolute_host_paths_through_never_relative_ones() -> None:
    loaded = load("file:///srv/up.git", "oci:/srv/images", host_paths=True)
    assert loaded.config.components[0].image.is_layout
    assert load("/srv/up.git", host_paths=True).root == Path("/dev/null/rocm/atom")
    for repo, image in (("../upstream", "ghcr.io/a/b"), ("https://x.org/a", "oci:images")):
        with pytest.raises(ConfigInvalid) as caught:
            load(repo, image, host_paths=True)
        assert "no folder on wheelpin's host to start from" in caught.value.problems[0]


def test_the_local_platform_keeps_host_paths() -> None:
    assert load("../upstream", "oci:../images", github=False).config.components[0].image.is_layout

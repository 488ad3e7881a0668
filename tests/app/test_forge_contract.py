"""The forge contract: every forge of the registry (bot/app/forges.py), made from the settings
as `wheelpin serve` makes it, answers the service's questions (bot/app/forge.py) alike —
which repositories to watch, a repository's platform, config, reconciler and conversation,
the webhook door, and whether it takes the bot's credentials. GitHub is the GitHub emulator,
reached as an App installation and with a token, its answers then held to GitHub's
OpenAPI description. A new forge adds how a repository is hosted on it to `HOSTS` and
passes the same tests. (mypy holds each entry's type to the Protocol: FORGES is typed.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.app.forge import RepositoryConfig, WatchedRepository
from bot.app.forges import FORGES, forge_of
from bot.app.service import Service
from bot.app.settings import Settings
from bot.core.config.load import LoadedConfig
from bot.core.errors import ConfigError, CredentialsError
from tests.app.bots import APP_ID, SECRET, app_on_emulator, github_world, settings_for
from tests.app.worlds import World
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.openapi import validate_recorded

TOKEN = "ghp_forge_contract"


@dataclass
class Hosted:
    """A repository on a forge, and the settings that reach it."""

    forge: str  # its name in FORGES
    repository: str  # OWNER/NAME
    grant: int | None  # the grant the forge should say reaches it
    settings: Settings  # credentials and webhook secret as an operator gives them
    refused: Settings  # the same, with credentials the forge refuses
    config: str  # the config file's text on the default branch


@contextmanager
def github_app(world: World, tmp_path: Path) -> Iterator[Hosted]:
    emulator, _repo, _private = app_on_emulator(world, tmp_path)
    wrong = tmp_path / "wrong.pem"  # an App key GitHub never registered: the JWT is refused (401)
    wrong.write_bytes(_other_key())
    given = {
        "github_api_url": emulator.url,
        "github_app_id": APP_ID,
        "webhook_secret_file": tmp_path / "webhook-secret",
    }
    try:
        yield Hosted(
            "github",
            "rocm/atom",
            emulator.installations["rocm"],
            settings_for(tmp_path, **given, github_private_key_file=tmp_path / "app.pem"),
            settings_for(tmp_path, **given, github_private_key_file=wrong),
            (world.downstream / "wheelpin.toml").read_text(),
        )
    finally:
        _stop(emulator)


@contextmanager
def github_token(world: World, tmp_path: Path) -> Iterator[Hosted]:
    github_world(world)
    emulator = GitHubEmulator(tmp_path / "github", tokens={TOKEN})
    emulator.create_repo("rocm", "atom", world.downstream)
    given = {"github_api_url": emulator.url, "repositories": "rocm/atom", "webhook_secret": SECRET.decode()}
    try:
        yield Hosted(
            "github",
            "rocm/atom",
            None,
            settings_for(tmp_path, **given, github_token=TOKEN),
            settings_for(tmp_path, **given, github_token="ghp_revoked"),
            (world.downstream / "wheelpin.toml").read_text(),
        )
    finally:
        _stop(emulator)


def _other_key() -> bytes:
    from tests.app.bots import app_key

    return app_key()[0]


def _stop(emulator: GitHubEmulator) -> None:
    emulator.stop()
    assert emulator.errors == []
    validate_recorded(emulator.recorded)  # every answer drawn held to GitHub's schema (a refusal is not recorded)


# How a repository is hosted on each forge, in every way the forge is reached
HOSTS: dict[str, list[Callable[[World, Path], Any]]] = {"github": [github_app, github_token]}
WAYS = [pytest.param(way, id=f"{name}-{way.__name__}") for name, ways in sorted(HOSTS.items()) for way in ways]


def test_every_forge_is_held_to_the_contract() -> None:
    assert sorted(HOSTS) == sorted(FORGES) and all(HOSTS.values())


@pytest.mark.parametrize("name", sorted(FORGES))
def test_without_credentials_a_forge_says_what_it_lacks_and_keeps_its_door(name: str, tmp_path: Path) -> None:
    bare = forge_of(Settings(cache_dir=tmp_path), name)
    missing = bare.missing_credentials()
    assert missing and "\n" not in missing  # one sentence, the one /readyz says
    assert bare.door() is None  # no webhook secret: deliveries refused
    service = Service(Settings(cache_dir=tmp_path), forge=bare)
    assert service.ready() == (False, missing)
    assert service.watchlist.refresh(passes=False, cause="test") and service.watched == {}  # nothing to list
    door = forge_of(Settings(cache_dir=tmp_path, webhook_secret=SECRET.decode()), name).door()
    assert door is not None and door.max_body > 0 and door.event_of({}) == ""


@pytest.mark.parametrize("way", WAYS)
def test_the_forge_lists_the_repository_and_reads_its_config(way: Any, world: World, tmp_path: Path) -> None:
    with way(world, tmp_path) as hosted:
        forge = forge_of(hosted.settings, hosted.forge)
        assert forge.name and forge.missing_credentials() is None and forge.door() is not None
        forge.check()
        answer = forge.repositories()
        watched = WatchedRepository(hosted.repository, hosted.grant)
        assert answer.repositories == [watched] and answer.unread == frozenset()
        platform = forge.platform(watched)
        found = forge.config(platform, hosted.repository)
        assert found == RepositoryConfig(hosted.config, "wheelpin.toml", str(platform.resolve("refs/heads/main")))
        assert forge.config(platform, hosted.repository, reread=True) == found  # the default branch read again
        with pytest.raises(ConfigError, match=f"{hosted.repository}: no elsewhere.toml on main"):
            forge.config(platform, hosted.repository, "elsewhere.toml")
        made: list[tuple[LoadedConfig, dict[str, Any]]] = []
        result = forge.reconciler(
            platform,
            hosted.repository,
            found,
            host_paths=True,
            make=lambda loaded, **given: made.append((loaded, given)) or "the reconciler",
        )
        assert result == "the reconciler"
        ((loaded, given),) = made
        assert [c.name for c in loaded.config.components] == ["demo-cache"]
        assert given["platform"] is platform and given["state_scope"].endswith(":")
        # a repository's state outlives its name; what was recorded under the name is taken over
        assert f"{hosted.repository}:" in given["state_formerly"]
        assert given["local_commands"] is False  # a tenant's command never runs on the bot's host
        conversation = forge.conversation(platform)
        assert conversation.open_proposals() == {}
        assert hosted.repository in conversation.dashboard_text([], repository=hosted.repository, config_error=None)
        forge.permissions_granted()
        forge.share_writes(1)


@pytest.mark.parametrize("way", WAYS)
def test_the_watch_list_is_the_forges_answer(way: Any, world: World, tmp_path: Path) -> None:
    """What the service makes of a forge's answer: the repository watched through its grant,
    its config loaded into a reconciler, the forge ready."""
    with way(world, tmp_path) as hosted:
        service = Service(hosted.settings, forge=forge_of(hosted.settings, hosted.forge))
        assert service.ready()[1].endswith("not reached yet")
        assert service.watchlist.refresh(passes=False, cause="test")
        watched = service.watched[hosted.repository]
        assert watched.where == WatchedRepository(hosted.repository, hosted.grant) and service.forge_ok
        assert service.watchlist.load(watched, passes=False, cause="test")
        assert watched.reconciler is not None and watched.config_text == hosted.config
        assert watched.reconciler.platform is watched.platform
        watched.reconciler.state.close()


@pytest.mark.parametrize("way", WAYS)
def test_credentials_the_forge_refuses_are_said(way: Any, world: World, tmp_path: Path) -> None:
    with way(world, tmp_path) as hosted:
        forge = forge_of(hosted.refused, hosted.forge)
        assert forge.missing_credentials() is None  # given, but refused
        with pytest.raises(CredentialsError):
            forge.check()
        with pytest.raises(CredentialsError):
            forge.repositories()
        service = Service(hosted.refused, forge=forge)
        with pytest.raises(CredentialsError):
            service.watchlist.refresh(passes=False, cause="test")
        assert service.forge_ok is False and f"{forge.name} refused the bot" in service.ready()[1]

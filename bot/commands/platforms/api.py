"""The platforms by name, as `wheelpin reconcile --platform` says them (its choices are
this table's keys): the one place the command asks for a kind. Each name maps to the
`Downstream` class of its module (base.py), made from what the command line says. A new
kind is its module and its line below (docs/reconcile.md, "Add a platform");
tests/adapters/test_platform_contract.py holds every entry to the platform's verbs."""

from __future__ import annotations

from . import github, local
from .base import Downstream, Where

DEFAULT_PLATFORM = "local"  # a command that names no platform works on a checkout here
PLATFORMS: dict[str, type[Downstream]] = {
    "local": local.LocalDownstream,
    "github": github.GitHubDownstream,
}


def downstream_of(platform: str, where: Where) -> Downstream:
    """The downstream repository the command line names, on the `platform` kind."""
    return PLATFORMS[platform](where)


def config_on_this_host(platform: str) -> bool:
    """Whether the `platform` kind reads its config from a file on this host (False for a
    name that is no kind)."""
    kind = PLATFORMS.get(platform)
    return kind is not None and kind.config_on_this_host

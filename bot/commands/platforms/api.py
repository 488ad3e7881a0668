"""The platforms by name, as `wheelpin reconcile --platform` says them (its choices are
this table's keys): the one place the command asks for a kind. Each name maps to the
factory of its module here, which makes the kind's `Downstream` (base.py) from what the
command line says. A new kind is its module and its line below;
tests/adapters/test_platform_contract.py holds every entry to the platform's verbs."""

from __future__ import annotations

from collections.abc import Callable

from . import github, local
from .base import Downstream, Where

Factory = Callable[[Where], Downstream]

PLATFORMS: dict[str, Factory] = {
    "local": local.LocalDownstream,
    "github": github.GitHubDownstream,
}


def downstream_of(platform: str, where: Where) -> Downstream:
    """The downstream repository the command line names, on the `platform` kind."""
    return PLATFORMS[platform](where)

"""The build kinds by name: the one place the runner asks for a component's builder.

Each name is a `kind` of the config's `build` table (core/config/model.py `BUILD_KINDS`, its
model) and maps to the factory of its module here, which makes the kind's `Builder`
(base.py) from the component and the `BuildSite`. Adding a kind is its module, its line
below and its config model (docs/reconcile.md, "Add a build kind");
tests/loop/test_builder_contract.py holds every entry to the interface.
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.config.model import Component
from . import command, github_actions
from .base import Builder, BuildSite

Factory = Callable[[Component, BuildSite], Builder]

BUILDERS: dict[str, Factory] = {
    "command": command.make,
    "github-actions": github_actions.make,
}


def builder_for(component: Component, site: BuildSite) -> Builder:
    """The builder of the component's build kind."""
    return BUILDERS[component.build.kind](component, site)

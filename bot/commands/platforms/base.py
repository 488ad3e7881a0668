"""What a `--platform` kind (api.py) is given and what it gives `wheelpin reconcile`.

`Where` is what the command line says of the downstream repository; `Downstream` is the
kind's answer: the `Platform` proposals are written through (adapters/platform.py, the
verbs every kind meets), the reconciler of the repository's config as it reads now, and
that config's text, which the reconcile loop reads before each pass to see if it changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

if TYPE_CHECKING:  # the loop and the settings load when a pass runs, not with `--help`
    from ...adapters.platform import Platform
    from ...app.settings import Settings
    from ...loop.runner import Reconciler


class Where(NamedTuple):  # not a dataclass: `import bot.cli` stays light (tests/test_startup.py)
    """The downstream repository and the passes over it, as the command line says them."""

    settings: Settings
    repo: Path | None = None  # --repo: the local checkout (default: the repository here)
    config: Path | None = None  # --config: a file on this host, or a path in the repository on GitHub
    github_repo: str | None = None  # --github-repo OWNER/NAME
    retry_failed: bool = False


class Downstream(Protocol):
    """A kind is its class: api.PLATFORMS makes one from what the command line says."""

    # Whether the kind's config is a file on this host, which `wheelpin config validate`
    # reads too: a command stopped by a config problem then points there (bot/cli.py).
    config_on_this_host: ClassVar[bool]
    where: str  # the repository, as the pass's summary names it

    def __init__(self, where: Where) -> None: ...

    @property
    def platform(self) -> Platform:
        """Where proposals are written; one for every reconciler this downstream makes."""

    def reconciler(self) -> Reconciler:
        """A reconciler of the repository's config as it reads now (a config that cannot
        be used raises its WheelpinError)."""

    def config_text(self) -> str:
        """The config's text as it reads now."""

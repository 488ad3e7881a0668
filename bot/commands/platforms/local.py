"""`--platform local` (the default): the downstream repository is a git checkout on this
host, its config a file in it, and proposals branches in it (adapters/localplatform.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ...core.errors import UsageError
from .base import Where

if TYPE_CHECKING:  # the loop and the settings load when a pass runs, not with `--help`
    from ...adapters.github.attestations import AttestationsReader
    from ...adapters.localplatform import LocalPlatform
    from ...app.settings import Settings
    from ...core.config.model import Defaults
    from ...loop.runner import Reconciler


def _platform(repo: Path, defaults: Defaults | None = None) -> LocalPlatform:
    from ...adapters.localplatform import LocalPlatform
    from ...core.config.model import Defaults

    defaults = defaults or Defaults()
    return LocalPlatform(repo, author=defaults.author, branch_prefix=defaults.branch_prefix, signoff=defaults.signoff)


def local_reconciler(*, repo: Path, config: Path | None, settings: Settings, retry_failed: bool) -> Reconciler:
    """A reconciler of the config in the checkout `repo` (or `config`), writing through a
    platform of its own that takes the config's author and branch prefix."""
    return _made(repo=repo, config=config, settings=settings, retry_failed=retry_failed)[0]


def _made(
    *, repo: Path, config: Path | None, settings: Settings, retry_failed: bool
) -> tuple[Reconciler, LocalPlatform]:
    from ...app.wiring import Registries, signing_key
    from ...loop.runner import Reconciler
    from ..repo import load

    loaded = load(config=config, repo=repo)
    platform = _platform(repo, loaded.config.defaults)  # after the config: a missing one is said first
    return Reconciler(
        loaded,
        platform=platform,
        registries=Registries(settings),
        cache=settings.cache_dir,
        database_url=settings.database_url.get_secret_value() if settings.database_url else None,
        retry_failed=retry_failed,
        state_scope=f"{loaded.root.resolve()}:",
        attestations=lambda: _attestations(settings),
        signing_key=signing_key(settings),
    ), platform


class LocalDownstream:
    """The checkout `--repo` names, else the repository the working folder is in."""

    config_on_this_host: ClassVar[bool] = True

    def __init__(self, where: Where) -> None:
        from ...adapters.configdisk import repository_root

        self.folder = where.repo or repository_root(Path.cwd())
        if not self.folder.is_dir():
            raise UsageError(f"{self.folder}: no such repository folder")
        self.given = where
        self.where = str(where.repo or Path.cwd())
        self._platform: LocalPlatform | None = None

    @property
    def platform(self) -> LocalPlatform:
        """The last reconciler's platform (a new one for each config read, as the config says
        its author and branch prefix); before any, one with the defaults' author and prefix."""
        if self._platform is None:
            self._platform = _platform(self.folder)
        return self._platform

    def reconciler(self) -> Reconciler:
        made, self._platform = _made(
            repo=self.folder,
            config=self.given.config,
            settings=self.given.settings,
            retry_failed=self.given.retry_failed,
        )
        return made

    def config_text(self) -> str:
        from ...adapters.configdisk import find_config, read_config_text

        return read_config_text(find_config(self.folder, self.given.config))


def _attestations(settings: Settings) -> AttestationsReader:
    from ...app.forges import attestations_reader  # GitHub's: at a component's first trust check

    return attestations_reader(settings)

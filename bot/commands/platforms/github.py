"""`--platform github`: the downstream repository is on GitHub (`--github-repo
OWNER/NAME`), its config read from its default branch, and proposals draft pull requests
(adapters/github/platform.py), through GitHub's forge (adapters/github/forge.py) with the
credentials the settings give (app/forges.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from ...core.errors import UsageError
from .base import Where

if TYPE_CHECKING:  # GitHub's modules load only for a repository on GitHub
    from ...adapters.github import GitHubPlatform
    from ...loop.runner import Reconciler


class GitHubDownstream:
    """One platform for every pass: its token and ETag cache serve them all."""

    config_on_this_host: ClassVar[bool] = False

    def __init__(self, where: Where) -> None:
        from ...adapters.github.forge import GitHubForge
        from ...app.forge import WatchedRepository
        from ...app.forges import github_access

        if where.github_repo is None:
            raise UsageError("--platform github needs --github-repo OWNER/NAME")
        self.given = where
        self.where = where.github_repo
        self.forge = GitHubForge(github_access(where.settings))
        self._platform = self.forge.platform(WatchedRepository(where.github_repo))
        self._path = where.config.as_posix() if where.config is not None else None  # in the repository

    @property
    def platform(self) -> GitHubPlatform:
        return self._platform

    def reconciler(self) -> Reconciler:
        from ...app.wiring import reconciler_maker

        settings = self.given.settings
        return self.forge.reconciler(
            self._platform,
            self.where,
            self.forge.config(self._platform, self.where, self._path),
            host_paths=settings.allow_host_paths,
            make=reconciler_maker(settings, retry_failed=self.given.retry_failed),
        )

    def config_text(self) -> str:
        return self.forge.config(self._platform, self.where, self._path).text

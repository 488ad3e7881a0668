"""`--platform github`: the downstream repository is on GitHub (`--github-repo
OWNER/NAME`), its config read from its default branch, and proposals draft pull requests
(adapters/github/platform.py), with the credentials the settings give (app/githubrepo.py)."""

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
        from ...app.githubrepo import GitHubAccess, github_platform

        if where.github_repo is None:
            raise UsageError("--platform github needs --github-repo OWNER/NAME")
        self.given = where
        self.where = where.github_repo
        self.access = GitHubAccess.from_settings(where.settings)
        self._platform = github_platform(self.access, where.github_repo)
        self._path = where.config.as_posix() if where.config is not None else None  # in the repository

    @property
    def platform(self) -> GitHubPlatform:
        return self._platform

    def reconciler(self) -> Reconciler:
        from ...app.githubrepo import github_reconciler

        return github_reconciler(
            access=self.access,
            repository=self.where,
            settings=self.given.settings,
            retry_failed=self.given.retry_failed,
            platform=self._platform,
            config_path=self._path,
        )

    def config_text(self) -> str:
        from ...app.githubrepo import read_repository_config

        return read_repository_config(self._platform, self.where, self._path).text

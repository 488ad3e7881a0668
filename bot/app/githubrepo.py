"""A repository on GitHub, wired for the loop: the credentials the settings give (a token,
or a GitHub App and one of its installations), the platform for one repository, and a
reconciler built from the config on its default branch. Shared by `reconcile --platform
github` and the service."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..adapters import logs
from ..adapters.github import (
    AppCredentials,
    GitHubPlatform,
    Installation,
    app_installations,
    check_token,
    installation_repositories,
)
from ..adapters.github.actions import ActionsClient
from ..adapters.github.attestations import AttestationsReader
from ..adapters.github.workflowfile import components_warnings
from ..core.config.load import LoadedConfig, load_config_text
from ..core.config.model import CONFIG_FILES, Author
from ..core.errors import ConfigError, CredentialsError, UsageError, WheelpinError
from ..loop.runner import Reconciler
from .settings import Settings
from .wiring import Registries, signing_key

log = logs.get_logger("wheelpin.github")


@dataclass(frozen=True)
class GitHubAccess:
    """How to speak to GitHub: exactly one of a token or an App (id + private key)."""

    api_url: str | None
    token: str | None = field(default=None, repr=False)
    app_id: int | None = None
    private_key: bytes | None = field(default=None, repr=False)
    installation_id: int | None = None
    login: str | None = None  # with a token: who it acts as (WHEELPIN_GITHUB_LOGIN)

    @classmethod
    def from_settings(cls, settings: Settings) -> GitHubAccess:
        if settings.github_app_id is not None:
            if settings.github_private_key_file is None:
                raise UsageError("a GitHub App needs WHEELPIN_GITHUB_PRIVATE_KEY_FILE")
            try:
                key = settings.github_private_key_file.read_bytes()
            except OSError as exc:
                raise UsageError(
                    f"{settings.github_private_key_file}: cannot read the App's private key ({exc.strerror})"
                ) from None
            return cls(
                settings.github_api_url,
                app_id=settings.github_app_id,
                private_key=key,
                installation_id=settings.github_installation_id,
            )
        if settings.github_token is None:
            raise UsageError(
                "GitHub needs WHEELPIN_GITHUB_TOKEN, or a GitHub App (WHEELPIN_GITHUB_APP_ID, "
                "WHEELPIN_GITHUB_PRIVATE_KEY_FILE)"
            )
        return cls(
            settings.github_api_url, token=settings.github_token.get_secret_value(), login=settings.github_login or None
        )  # an empty input is none given

    @property
    def is_app(self) -> bool:
        return self.app_id is not None

    def app(self, installation_id: int | None = None) -> AppCredentials:
        chosen = installation_id if installation_id is not None else self.installation_id
        if self.app_id is None or self.private_key is None:
            raise CredentialsError("this needs GitHub App credentials")
        if chosen is None:
            raise UsageError("a GitHub App needs WHEELPIN_GITHUB_INSTALLATION_ID here")
        return AppCredentials(self.app_id, self.private_key, chosen)

    def for_installation(self, installation_id: int) -> GitHubAccess:
        return replace(self, installation_id=installation_id)

    def installations(self) -> list[Installation]:
        """Every installation of the App."""
        return app_installations(api_url=self.api_url, app=self.app(0))

    def check(self) -> None:
        """CredentialsError unless GitHub accepts these credentials (a token; an App's
        are proven by listing its installations)."""
        if self.token is not None:
            check_token(api_url=self.api_url, token=self.token)
        else:
            self.installations()

    def repositories(self) -> list[str]:
        """`owner/name` of every repository this installation may see."""
        return installation_repositories(api_url=self.api_url, app=self.app())


def github_platform(access: GitHubAccess, repository: str, author: Author | None = None) -> GitHubPlatform:
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        raise UsageError(f"{repository!r}: give OWNER/NAME")
    app = access.app() if access.is_app else None
    return GitHubPlatform(
        api_url=access.api_url,
        owner=owner,
        repo=name,
        token=None if app else access.token,
        app=app,
        author=author or Author(),
        login=None if app else access.login,
    )


@dataclass(frozen=True)
class RepositoryConfig:
    text: str
    path: str  # the candidate file found
    base: str  # the commit it was read at


def read_repository_config(
    platform: GitHubPlatform, repository: str, path: str | None = None, *, reread: bool = False
) -> RepositoryConfig:
    """The repository's config file (`path`, else the first of CONFIG_FILES there is), from
    its default branch. The repository (its default branch) is read again when `reread`, and
    when the branch it named is gone: a renamed default branch is followed without a restart."""
    if reread:
        platform.reread_repository()
    base_name = str(platform.repo.default_branch)
    base = platform.resolve(f"refs/heads/{base_name}")
    if base is None and not reread:
        platform.reread_repository()
        base_name = str(platform.repo.default_branch)
        base = platform.resolve(f"refs/heads/{base_name}")
    if base is None:
        raise ConfigError(f"{repository}: no branch {base_name}")
    for candidate in (path,) if path else CONFIG_FILES:
        text = platform.read_file(base, candidate)
        if text is not None:
            return RepositoryConfig(text, candidate, base)
    raise ConfigError(f"{repository}: no {path or ' or '.join(CONFIG_FILES)} on {base_name}")


# The root of a config read from GitHub: it has no folder on the host (never the process's
# working directory, which a relative path would otherwise reach), and /dev/null, a
# device, can hold nothing beneath it. It also names the repository in messages and keys.
GITHUB_ROOT = Path("/dev/null")


def load_repository_config(
    platform: GitHubPlatform, repository: str, found: RepositoryConfig, *, host_paths: bool = False
) -> LoadedConfig:
    """The config a tenant wrote: nothing in it reaches the bot's host (core/config/hostreach.py),
    unless the operator allows absolute host paths (`host_paths`, WHEELPIN_ALLOW_HOST_PATHS)."""
    return load_config_text(
        found.text,
        path=Path(f"{repository}/{found.path}"),
        root=GITHUB_ROOT / repository,
        exists=lambda file: platform.read_file(found.base, file) is not None,
        from_github=True,
        host_paths=host_paths,
    )


def _text_or_none(platform: GitHubPlatform, base: str, path: str) -> str | None:
    try:
        return platform.read_file(base, path)
    except WheelpinError as exc:  # a folder, too large, not UTF-8: a warning, not a stop
        raise OSError(exc.message) from None


def github_reconciler(
    *,
    access: GitHubAccess,
    repository: str,
    settings: Settings,
    retry_failed: bool = False,
    registries: Registries | None = None,
    found: RepositoryConfig | None = None,
    platform: GitHubPlatform | None = None,
    config_path: str | None = None,
) -> Reconciler:
    """A reconciler for `repository`, its config read from its default branch on GitHub
    (through `platform`, when one is kept). A config's `build.command` is never run for it
    (that would run the repository's code on the bot's host)."""
    platform = platform or github_platform(access, repository)
    found = found or read_repository_config(platform, repository, config_path)
    loaded = load_repository_config(platform, repository, found, host_paths=settings.allow_host_paths)
    defaults = loaded.config.defaults
    warnings = components_warnings(
        loaded.config.components,
        lambda path: _text_or_none(platform, found.base, path),
        where=f"{repository} at {found.base[:8]}",
    )
    for names, warning in warnings:  # said once, when the config is (re)loaded
        log.warning("config.warning", component=", ".join(names), warning=warning)
    platform.author = defaults.author
    platform.prefix, platform.signoff = defaults.branch_prefix, defaults.signoff
    return Reconciler(
        loaded,
        platform=platform,
        registries=registries or Registries(settings),
        database_url=settings.database_url.get_secret_value() if settings.database_url else None,
        cache=settings.cache_dir,
        retry_failed=retry_failed,
        state_scope=f"{repository}:",
        actions=ActionsClient(platform),
        local_commands=False,
        attestations=lambda: AttestationsReader(platform.client),
        signing_key=signing_key(settings),
    )

"""The service's forge on GitHub (app/forge.py's `Forge`), shared with `reconcile --platform
github` and `config validate --github-repo`: the credentials (a token, or a GitHub App and
its installations), which repositories to watch (the App's installations, or the configured
list checked with the token), the platform and the config on a repository's default branch,
its reconciler's GitHub parts (the Actions client, the attestations reader), the
conversation with its people and the webhook door. app/forges.py makes it from the settings."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from ...app.conversation import Conversation
from ...app.forge import RepositoryConfig, WatchedRepository, Watching
from ...app.jobs import repository_key
from ...core.config.load import LoadedConfig, load_config_text
from ...core.config.model import CONFIG_FILES, Author
from ...core.errors import ConfigError, CredentialsError, TransientError, UsageError, WheelpinError
from .. import logs
from ..platform import Platform
from .app import Installation, app_installations, canonical_name, check_token, installation_repositories
from .client import AppCredentials, forget_installation_tokens
from .door import GitHubDoor
from .platform import GitHubPlatform
from .transport import WRITE_GAP, share_writes, space_writes
from .workflowfile import components_warnings

log = logs.get_logger("wheelpin.github")
R = TypeVar("R")

# The root of a config read from GitHub: it has no folder on the host (never the process's
# working directory, which a relative path would otherwise reach), and /dev/null, a
# device, can hold nothing beneath it. It also names the repository in messages and keys.
GITHUB_ROOT = Path("/dev/null")


@dataclass(frozen=True)
class GitHubAccess:
    """How to speak to GitHub: exactly one of a token or an App (id + private key)."""

    api_url: str | None
    token: str | None = field(default=None, repr=False)
    app_id: int | None = None
    private_key: bytes | None = field(default=None, repr=False)
    installation_id: int | None = None
    login: str | None = None  # with a token: who it acts as (WHEELPIN_GITHUB_LOGIN)
    write_gap: float = WRITE_GAP  # seconds at least between two writes (WHEELPIN_GITHUB_WRITE_GAP)

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

    def for_installation(self, installation_id: int | None) -> GitHubAccess:
        """These credentials for one installation (None: as configured)."""
        return self if installation_id is None else replace(self, installation_id=installation_id)

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


class GitHubForge:
    """GitHub, as the settings reach it: `access` (None: no credentials given), the webhook
    `secret` (None: deliveries refused), the repositories a token watches, and the
    installations this process serves (`shard`, None: all of them)."""

    name = "GitHub"

    def __init__(
        self,
        access: GitHubAccess | None,
        *,
        secret: bytes | None = None,
        repositories: Collection[str] = (),
        shard: Collection[int] | None = None,
    ) -> None:
        self.access = access
        if access is not None:
            space_writes(access.write_gap)
        self.secret = secret
        self.configured = list(repositories)  # a token's: WHEELPIN_REPOSITORIES
        self._renamed: dict[str, str] = {}  # a configured name → GitHub's, once said
        self.shard = None if shard is None else frozenset(shard)
        self._suspended: set[int] = set()  # installations said to be suspended (said again once unsuspended)

    @property
    def _access(self) -> GitHubAccess:
        if self.access is None:
            raise CredentialsError(str(self.missing_credentials()))
        return self.access

    def missing_credentials(self) -> str | None:
        if self.access is not None:
            return None
        return (
            "no GitHub credentials (WHEELPIN_GITHUB_APP_ID and WHEELPIN_GITHUB_PRIVATE_KEY_FILE, "
            "or WHEELPIN_GITHUB_TOKEN)"
        )

    def door(self) -> GitHubDoor | None:
        return GitHubDoor(self.secret) if self.secret is not None else None

    def check(self) -> None:
        access = self._access
        if access.is_app:
            access.installations()
        else:
            access.check()

    def repositories(self) -> Watching:
        """An App's: the repositories of each installation this process serves, a suspended
        one skipped and said once (GitHub refuses all its calls until its owner unsuspends
        it, and says so: an `installation` delivery, `unsuspend`). A token's: the list
        configured, once GitHub takes the token."""
        access = self._access
        if not access.is_app:
            access.check()
            return Watching([WatchedRepository(name) for name in self._configured_as_named(access)])
        installations = access.installations()
        served = [i for i in installations if self.shard is None or i.id in self.shard]
        self._said_suspended({i.id for i in served if i.suspended}, {i.id: i.account for i in installations})
        found: list[WatchedRepository] = []
        unread: set[int] = set()
        for listed in served:
            if listed.suspended:
                continue
            try:
                names = access.for_installation(listed.id).repositories()
            except WheelpinError as exc:
                unread.add(listed.id)
                log.warning(
                    "installation.unreadable", installation=listed.id, account=listed.account, error=exc.message
                )
                continue
            found += [WatchedRepository(name, listed.id) for name in names]
        return Watching(found, frozenset(unread))

    def check_settings(self) -> None:
        """A token's WHEELPIN_REPOSITORIES, each a repository GitHub has: else ConfigError in
        one sentence. An App's repositories are its installations': nothing to check."""
        access = self._access
        if access.is_app:
            return
        for configured in self.configured:
            owner, _, name = configured.partition("/")
            if not owner or not name or "/" in name:
                raise ConfigError(f"WHEELPIN_REPOSITORIES: {configured!r} is not OWNER/NAME")
            try:
                found = canonical_name(api_url=access.api_url, token=str(access.token), repository=configured)
            except (CredentialsError, TransientError):
                return  # the token refused, GitHub not reached: /readyz says so, the list is read again
            if found is None:
                raise ConfigError(
                    f"WHEELPIN_REPOSITORIES names {configured}, which GitHub does not have "
                    "or the token cannot see: check the name and the token's access"
                )

    def _configured_as_named(self, access: GitHubAccess) -> list[str]:
        """WHEELPIN_REPOSITORIES as GitHub names each now: its canonical `full_name`, read
        again at every refresh, so a name in another case, or one a rename or transfer left
        behind, is the repository GitHub's deliveries name. A repository gone (or out of the
        token's reach) is not watched, and said."""
        named: dict[str, str] = {}
        for configured in self.configured:
            found = canonical_name(api_url=access.api_url, token=str(access.token), repository=configured)
            if found is None:
                log.warning(
                    "repository.missing",
                    repository=configured,
                    reason="GitHub does not have it, or the token cannot see it (WHEELPIN_REPOSITORIES): not watched",
                )
                continue
            if found != configured and self._renamed.get(configured) != found:
                self._renamed[configured] = found
                log.info("repository.named", configured=configured, repository=found)
            named.setdefault(repository_key(found), found)
        return list(named.values())

    def _said_suspended(self, suspended: set[int], accounts: dict[int, str]) -> None:
        """Say each installation that became suspended once, not at every refresh."""
        for installation in sorted(suspended - self._suspended):
            log.warning(
                "installation.suspended",
                installation=installation,
                account=accounts.get(installation),
                reason="GitHub refuses its calls until it is unsuspended: its repositories are not watched",
            )
        self._suspended = suspended

    def platform(self, repository: WatchedRepository) -> GitHubPlatform:
        return github_platform(self._access.for_installation(repository.grant), repository.name)

    def config(
        self, platform: Platform, repository: str, path: str | None = None, *, reread: bool = False
    ) -> RepositoryConfig:
        """A renamed default branch is followed without a restart: the repository is read
        again when the branch it named is gone."""
        github = _github(platform)
        if reread:
            github.reread_repository()
        base_name = str(github.repo.default_branch)
        base = github.resolve(f"refs/heads/{base_name}")
        if base is None and not reread:
            github.reread_repository()
            base_name = str(github.repo.default_branch)
            base = github.resolve(f"refs/heads/{base_name}")
        if base is None:
            raise ConfigError(f"{repository}: no branch {base_name}")
        for candidate in (path,) if path else CONFIG_FILES:
            text = github.read_file(base, candidate)
            if text is not None:
                return RepositoryConfig(text, candidate, base)
        raise ConfigError(f"{repository}: no {path or ' or '.join(CONFIG_FILES)} on {base_name}")

    def reconciler(
        self, platform: Platform, repository: str, found: RepositoryConfig, *, host_paths: bool, make: Callable[..., R]
    ) -> R:
        """A config's `build.command` is never run for a repository on GitHub (that would run
        the repository's code on the bot's host); its workflows' problems are said once, as
        the config is (re)loaded."""
        from .actions import ActionsClient
        from .attestations import AttestationsReader

        github = _github(platform)
        loaded = load_repository_config(github, repository, found, host_paths=host_paths)
        defaults = loaded.config.defaults
        warnings = components_warnings(
            loaded.config.components,
            lambda path: _text_or_none(github, found.base, path),
            where=f"{repository} at {found.base[:8]}",
        )
        for names, warning in warnings:
            log.warning("config.warning", component=", ".join(names), warning=warning)
        github.author = defaults.author
        github.prefix, github.signoff = defaults.branch_prefix, defaults.signoff
        return make(
            loaded,
            platform=github,
            state_scope=state_scope(github),
            state_formerly=self._spelt_before(repository),
            actions=ActionsClient(github),
            local_commands=False,
            attestations=lambda: AttestationsReader(github.client),
        )

    def _spelt_before(self, repository: str) -> list[str]:
        """The scopes a repository's state was recorded under by an earlier wheelpin: its name
        as spelt (matched without case) and as WHEELPIN_REPOSITORIES named it before GitHub's
        canonical name replaced it (a name another case or a rename left behind)."""
        key = repository_key(repository)
        return [
            f"{name}:"
            for name in (repository, *(given for given, now in self._renamed.items() if repository_key(now) == key))
        ]

    def conversation(self, platform: Platform) -> Conversation:
        from .conversation import GitHubConversation

        return GitHubConversation(_github(platform))

    def permissions_granted(self) -> None:
        forget_installation_tokens()  # tokens made before keep the permissions of before

    def share_writes(self, replicas: int) -> None:
        share_writes(replicas)  # GitHub's write limits are the App's, whichever replica writes


def state_scope(github: GitHubPlatform) -> str:
    """What a repository's saved state (runs followed, dispatches, failures, refusals, prune
    timers) is kept under: GitHub's id of the repository, which no spelling of its name,
    rename or transfer changes (GitHub keeps a repository's `id` through both: the OpenAPI
    description's `repository` schema, and "Transferring a repository" in its docs)."""
    return f"github#{github.repo.id}:"


def _github(platform: Platform) -> GitHubPlatform:
    """The platform this forge made (a `Forge` is handed back only its own)."""
    assert isinstance(platform, GitHubPlatform), type(platform)
    return platform


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

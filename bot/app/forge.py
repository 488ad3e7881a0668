"""The service's contract with a forge (docs/design.md §2, app/): which repositories to
watch, and for each the loop's `Platform`, the config on its default branch, its
reconciler and the `Conversation` with its people; the webhook `Door`; whether the forge
takes the bot's credentials. The watch list (watchlist.py) and the service (service.py)
speak to a forge through this alone; forges.py names each forge, and a forge's package
(adapters/github/forge.py for GitHub) implements it. It imports core and the other
contracts alone (jobs.py, conversation.py, the loop's adapters/platform.py), so a forge's
package may name it (tests/test_layout.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ..adapters.platform import Platform
from .conversation import Conversation
from .jobs import Door

R = TypeVar("R")


@dataclass(frozen=True)
class WatchedRepository:
    """A repository to watch, and which of the forge's grants reaches it."""

    name: str  # OWNER/NAME
    # The grant whose credentials reach it (a GitHub App's installation id): its rate limit
    # and its permissions are that grant's. None: the forge's one configured token.
    grant: int | None = None


@dataclass(frozen=True)
class Watching:
    """What the forge answered when asked which repositories to watch."""

    repositories: list[WatchedRepository]
    # Grants that could not be read this time (a token refused): their repositories are
    # kept as they were last read, and the list is read again after a backoff.
    unread: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class RepositoryConfig:
    """A repository's config file, as read from its default branch."""

    text: str
    path: str  # the candidate file found
    base: str  # the commit it was read at


class Forge(Protocol):
    """Where the watched repositories live. Every call that speaks to the forge raises
    CredentialsError when it refuses the bot's credentials, TransientError when it cannot
    be reached, and the other WheelpinErrors of what it answered."""

    name: str  # how the service's sentences name it ("GitHub")

    def missing_credentials(self) -> str | None:
        """What the settings lack for the forge to list any repository, in the one sentence
        /readyz says; None when they give it. Without them no other call but `door` is made."""
        ...

    def door(self) -> Door | None:
        """The webhook door deliveries come through; None when no webhook secret is given."""
        ...

    def check(self) -> None:
        """Raise unless the forge takes the bot's credentials; reads no list (readiness)."""
        ...

    def check_settings(self) -> None:
        """At `wheelpin serve`'s start: ConfigError, in one sentence, for a repository the
        settings name that the forge does not have. What cannot be told now (credentials
        refused, the forge not reached) is not raised: /readyz says it, and the watch list
        is read again."""
        ...

    def repositories(self) -> Watching:
        """The repositories to watch now, and why each (its grant)."""
        ...

    def platform(self, repository: WatchedRepository) -> Platform:
        """The loop's platform for one repository; kept by the watch list for every job of it."""
        ...

    def config(
        self, platform: Platform, repository: str, path: str | None = None, *, reread: bool = False
    ) -> RepositoryConfig:
        """The repository's config file (`path`, else the first of the config files there
        is) on its default branch, read through `platform`; the default branch is read
        again when `reread`. ConfigError when there is none."""
        ...

    def reconciler(
        self, platform: Platform, repository: str, found: RepositoryConfig, *, host_paths: bool, make: Callable[..., R]
    ) -> R:
        """The repository's reconciler, from the config `found`: `make` is the Reconciler
        with the process's own settings bound (app/wiring.py `reconciler_maker`), called
        with the loaded config and what the forge alone knows (its platform, its build and
        attestation clients, that a tenant's commands never run on the bot's host, the state's
        scope). `host_paths`: the operator lets a config name absolute paths on the host."""
        ...

    def conversation(self, platform: Platform) -> Conversation:
        """The conversation with the people of the repository `platform` was made for."""
        ...

    def permissions_granted(self) -> None:
        """The bot was granted new permissions: credentials made before are let go."""
        ...

    def share_writes(self, replicas: int) -> None:
        """Pace this process's writes at its share of the forge's write limits, when
        `replicas` processes write for the same bot."""
        ...

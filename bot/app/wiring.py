"""Building adapters from the process's settings: one place that knows both."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from ..adapters.credentials import CredentialStore
from ..adapters.imagestore import DigestCache, ImageStore, open_store
from ..adapters.registrywire import RetryPolicy, Traffic
from ..core.errors import UsageError
from ..core.image.reference import ImageRef, ImageRefError, LayoutTarget, parse_target
from .settings import Settings

if TYPE_CHECKING:
    from ..adapters.registry import RegistryClient
    from ..core.provenance.dsse import SigningKey
    from ..loop.runner import Reconciler


class Registries:
    """One client per registry host (tokens are cached per client), for one process."""

    def __init__(self, settings: Settings, *, anonymous: bool = False) -> None:
        self.settings = settings
        self.anonymous = anonymous
        login = settings.registry_login()
        host, username, password = login if login else (None, None, None)
        self.credentials = CredentialStore(username=username, password=password, host=host)
        self.retry = RetryPolicy(
            attempts=settings.registry_attempts,
            backoff=settings.registry_backoff,
            read_timeout=settings.registry_timeout,
            connect_timeout=settings.registry_connect_timeout,
        )
        self.cache = DigestCache(settings.cache_dir / "content")
        self._clients: dict[str, RegistryClient] = {}

    def client(self, host: str) -> RegistryClient:
        from ..adapters.registry import RegistryClient  # requests: loaded when a registry is spoken to

        if host not in self._clients:
            insecure = [*self.settings.insecure_hosts, *([host] if self.settings.plain_http else [])]
            self._clients[host] = RegistryClient(
                host,
                credentials=self.credentials,
                insecure=insecure,
                retry=self.retry,
                anonymous=self.anonymous,
                tls_verify=self.settings.tls_verify,
            )
        return self._clients[host]

    def store(self, target: ImageRef | LayoutTarget) -> ImageStore:
        return open_store(target, client_for=self.client, cache=self.cache, made=self._clients.get)

    def traffics(self) -> list[Traffic]:
        """Each client's requests from this thread, its retries and redirects included."""
        return [client.traffic for client in list(self._clients.values())]


def target_of(text: str) -> ImageRef | LayoutTarget:
    try:
        return parse_target(text)
    except ImageRefError as exc:
        raise UsageError(str(exc)) from None


def signing_key(settings: Settings) -> SigningKey | None:
    """The key the provenance of published images is signed with, None when none is given;
    ConfigError naming where it came from (never what it holds) when it cannot be used."""
    given = settings.signing_pem()
    if given is None:
        return None
    from ..core.errors import ConfigError
    from ..core.provenance.dsse import load_signing_key  # cryptography: loaded only when a key is given

    try:
        return load_signing_key(*given)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def reconciler_maker(
    settings: Settings, registries: Registries | None = None, *, retry_failed: bool = False
) -> Callable[..., Reconciler]:
    """The Reconciler with what the process's settings say bound (its registries, cache,
    state database, signing key); a forge (app/forge.py) gives the rest."""
    from ..loop.runner import Reconciler  # the loop: loaded when a repository's config is

    return partial(
        Reconciler,
        registries=registries or Registries(settings),
        cache=settings.cache_dir,
        database_url=settings.database_url.get_secret_value() if settings.database_url else None,
        retry_failed=retry_failed,
        signing_key=signing_key(settings),
    )

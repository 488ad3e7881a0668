"""The forges by name: the one place the service (and `reconcile --platform github`) picks the
forge its repositories live on, and the one module of app/ that names a forge's package.
Each name maps to a factory that makes the forge (app/forge.py's `Forge`) from the
process's settings; the forge's package is imported only when its forge is made, so the
service's modules load no forge's client. A new forge is a sibling folder of
adapters/github/ and its line below; tests/app/test_forge_contract.py holds every entry to
the contract."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from .settings import Settings

if TYPE_CHECKING:
    from ..adapters.github.attestations import AttestationsReader
    from ..adapters.github.forge import GitHubAccess, GitHubForge
    from .forge import Forge


def attestations_reader(settings: Settings) -> AttestationsReader:
    """GitHub's attestations API (WHEELPIN_GITHUB_API_URL, else github.com) with the token, if
    one is given: a public repository's attestations are read without one. Whatever forge
    the downstream is on, `trust.attestations` asks GitHub's, where the wheels were built."""
    from ..adapters.github.attestations import AttestationsReader  # GitHub's client: for a component whose `trust` asks
    from ..adapters.github.client import Client

    token = settings.github_token.get_secret_value() if settings.github_token else None
    return AttestationsReader(Client(settings.github_api_url, token=token))


def github_access(settings: Settings) -> GitHubAccess:
    """The GitHub credentials the settings give: a GitHub App (its id and private key, and
    the installation a command acts as), else a token; UsageError when neither is whole."""
    from ..adapters.github.forge import GitHubAccess

    if settings.github_app_id is not None:
        if settings.github_private_key_file is None:
            raise UsageError("a GitHub App needs WHEELPIN_GITHUB_PRIVATE_KEY_FILE")
        try:
            key = settings.github_private_key_file.read_bytes()
        except OSError as exc:
            raise UsageError(
                f"{settings.github_private_key_file}: cannot read the App's private key ({exc.strerror})"
            ) from None
        return GitHubAccess(
            settings.github_api_url,
            app_id=settings.github_app_id,
            private_key=key,
            installation_id=settings.github_installation_id,
            write_gap=settings.github_write_gap,
        )
    if settings.github_token is None:
        raise UsageError(
            "GitHub needs WHEELPIN_GITHUB_TOKEN, or a GitHub App (WHEELPIN_GITHUB_APP_ID, "
            "WHEELPIN_GITHUB_PRIVATE_KEY_FILE)"
        )
    return GitHubAccess(
        settings.github_api_url,
        token=settings.github_token.get_secret_value(),
        login=settings.github_login or None,  # an empty input is none given
        write_gap=settings.github_write_gap,
    )


def github_forge(settings: Settings) -> GitHubForge:
    """GitHub as the settings reach it; without credentials, a forge that only has its door
    (the service then says it is not ready). A token watches the repositories of
    WHEELPIN_REPOSITORIES, which it must name; an App finds them itself."""
    from ..adapters.github.forge import GitHubForge

    secret = settings.webhook_key()
    given = settings.github_app_id is not None or settings.github_token is not None
    access = github_access(settings) if given else None
    if access is not None and not access.is_app and not settings.watched_repositories:
        raise UsageError(
            "with WHEELPIN_GITHUB_TOKEN, name the repositories to watch in WHEELPIN_REPOSITORIES "
            "(OWNER/NAME, comma-separated); a GitHub App finds them itself"
        )
    return GitHubForge(access, secret=secret, repositories=settings.watched_repositories, shard=settings.shard)


FORGES: dict[str, Callable[[Settings], Forge]] = {
    "github": github_forge,
}
DEFAULT_FORGE = "github"


def forge_of(settings: Settings, name: str = DEFAULT_FORGE) -> Forge:
    """The forge `name` names, made from the settings."""
    return FORGES[name](settings)

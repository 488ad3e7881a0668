"""A GitHub App and its installations (docs/design.md §1, "GitHub App"): which accounts
installed it, which repositories each lets it see, and who the bot is when it writes
(`<app slug>[bot]` for an App, the token's user otherwise)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .client import AppCredentials, Client, GitHubError, translate


@dataclass(frozen=True)
class Installation:
    """One installation of the App, as `GET /app/installations` lists it."""

    id: int
    account: str  # a user's or organization's login, an enterprise's slug; "" when GitHub names none
    suspended: bool  # GitHub refuses its tokens (403) until the account unsuspends it


def installation_of(data: Mapping[str, Any]) -> Installation:
    """An installation from its listing. GitHub's description (OpenAPI `installation`):
    `account` is a simple-user or an enterprise, or null, and an enterprise has a `slug`
    and a `name` but no `login`; `suspended_at` is set while the installation is suspended."""
    account = data.get("account")
    name = (account.get("login") or account.get("slug")) if isinstance(account, Mapping) else None
    return Installation(int(data["id"]), str(name or ""), data.get("suspended_at") is not None)


def app_installations(*, api_url: str | None, app: AppCredentials) -> list[Installation]:
    """The installations of a GitHub App: what it watches."""
    try:
        return [installation_of(found) for found in Client(api_url, app=app).app_installations()]
    except GitHubError as exc:
        raise translate(exc, "listing the App's installations") from None


def check_token(*, api_url: str | None, token: str) -> None:
    """CredentialsError unless GitHub accepts `token` (GET /rate_limit: free, any token)."""
    try:
        Client(api_url, token=token).rate_limit()
    except GitHubError as exc:
        raise translate(exc, "checking the token") from None


def canonical_name(*, api_url: str | None, token: str, repository: str) -> str | None:
    """GitHub's own `full_name` of the repository `repository` names (OWNER/NAME, in any
    case, or a name it had before a rename or transfer), None when the token sees none.
    `GET /repos/{owner}/{repo}`: its names "are not case sensitive" (OpenAPI repos/get's
    parameters), and a repository's old name answers 301 to where it is now, which the
    client follows ("Follow redirects" in https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api;
    a rename, an owner's rename and a transfer each move a repository:
    https://developer.github.com/changes/2015-04-17-preview-repository-redirects/)."""
    owner, _, name = repository.partition("/")
    client = Client(api_url, token=token)
    found = client.call("GET", client.url("repos", owner, name), f"reading {repository}", missing=None).data
    return str(found["full_name"]) if isinstance(found, Mapping) and found.get("full_name") else None


def installation_repositories(*, api_url: str | None, app: AppCredentials) -> list[str]:
    """`owner/name` of every repository the installation may see: the repositories to watch."""
    client = Client(api_url, app=app)
    url = client.url("installation", "repositories")
    return [
        str(repo["full_name"])
        for repo in client.paginate(url, "listing the installation's repositories", key="repositories")
    ]


def bot_login(client: Client) -> str:
    """The login the bot writes as: `<app slug>[bot]` for an App, the token's user."""
    try:
        if client.app is not None:
            return f"{Client(client.api_url, app=client.app).app_slug()}[bot]"
        return client.login()
    except GitHubError as exc:
        raise translate(exc, "reading who the bot is") from None

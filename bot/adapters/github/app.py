"""A GitHub App and its installations (docs/design.md §1, "GitHub App"): which accounts
installed it, which repositories each lets it see, and who the bot is when it writes
(`<app slug>[bot]` for an App, the token's user otherwise)."""

from __future__ import annotations

from .client import AppCredentials, Client, GitHubError, translate


def app_installations(*, api_url: str | None, app: AppCredentials) -> list[tuple[int, str]]:
    """The installations of a GitHub App, as (installation id, account login): what it watches."""
    try:
        return Client(api_url, app=app).app_installations()
    except GitHubError as exc:
        raise translate(exc, "listing the App's installations") from None


def check_token(*, api_url: str | None, token: str) -> None:
    """CredentialsError unless GitHub accepts `token` (GET /rate_limit: free, any token)."""
    try:
        Client(api_url, token=token).rate_limit()
    except GitHubError as exc:
        raise translate(exc, "checking the token") from None


def installation_repositories(*, api_url: str | None, app: AppCredentials) -> list[str]:
    """`owner/name` of every repository the installation may see: the repositories to watch."""
    client = Client(api_url, app=app)
    url = client.url("installation", "repositories")
    return [str(repo["full_name"]) for repo in
            client.paginate(url, "listing the installation's repositories", key="repositories")]


def bot_login(client: Client) -> str:
    """The login the bot writes as: `<app slug>[bot]` for an App, the token's user."""
    try:
        if client.app is not None:
            return f"{Client(client.api_url, app=client.app).app_slug()}[bot]"
        return client.login()
    except GitHubError as exc:
        raise translate(exc, "reading who the bot is") from None

"""GitHub's REST API as wheelpin speaks it: the only module that imports github3.py.

One `Client` per repository (or App): a github3 session with the ETag/retry/pacing
transport (`transport.py`) mounted, installation tokens renewed before they expire, and
every answer read by one pure function, `sansio.decipher(status, headers, body)`, into
data and the next page, or one of wheelpin's typed errors (config, credentials,
permission, refused, transient with GitHub's own wait), as gidgethub keeps its rules in
`sansio.py` apart from its I/O. `paginate()` follows `Link: rel="next"` for every
listing. Callers use github3's objects where github3 models the API well (git data, pull
requests, issues) and `Client.call` where it does not; none reaches into github3's
private attributes.
"""

from __future__ import annotations

import datetime
import hashlib
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import github3
import jwt
import requests
from github3.exceptions import GitHubError, NotFoundError, UnprocessableEntity
from github3.issues.issue import ShortIssue
from github3.session import AppBearerTokenAuth

from ...core.errors import CredentialsError, WheelpinError
from .host import github_host
from .sansio import Answer, Page, decipher, refusal
from .transport import GitHubHTTP, answer_of, identity_pacer, retry_after

__all__ = [
    "AppCredentials",
    "Client",
    "GitHubError",
    "NotFoundError",
    "UnprocessableEntity",
    "app_jwt",
    "said",
    "translate",
]

# https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app:
# `iat` 60 seconds in the past against clock drift, `exp` no more than 10 minutes ahead
JWT_BACKDATE = 60
JWT_LIFETIME = 540
RENEW_BEFORE = datetime.timedelta(minutes=5)  # installation tokens live an hour
# installation tokens held by the process: (API, App, installation, key) → the token, when it expires
_TOKENS: dict[tuple[str | None, int, int, str], tuple[dict[str, Any], datetime.datetime]] = {}
_TOKENS_LOCK = threading.Lock()


def forget_installation_tokens() -> None:
    """Drop every token held: the App's permissions changed, and old tokens keep the old ones."""
    with _TOKENS_LOCK:
        _TOKENS.clear()


@dataclass(frozen=True)
class AppCredentials:
    """A GitHub App's identity: installation tokens are made from it, and renewed."""

    app_id: int
    private_key: bytes = field(repr=False)
    installation_id: int


def app_jwt(app: AppCredentials, *, now: float | None = None) -> str:
    """The App's JSON Web Token: RS256, `iss` the App id (as a string: PyJWT 2.10+ wants
    one), issued a minute ago so a host clock a little ahead of GitHub's is not refused."""
    issued = int(time.time() if now is None else now) - JWT_BACKDATE
    return jwt.encode(
        {"iat": issued, "exp": issued + JWT_BACKDATE + JWT_LIFETIME, "iss": str(app.app_id)},
        app.private_key,
        algorithm="RS256",
    )


def said(exc: GitHubError) -> Answer:
    """What GitHub said in an answer github3 raised."""
    return answer_of(getattr(exc, "response", None), getattr(exc, "code", None))


def translate(exc: GitHubError, what: str) -> WheelpinError:
    return refusal(said(exc), what)


# Seconds an answer may take to come. GitHub ends a request it has worked on for 10 seconds
# and answers it with a timeout ("Server Error", 502 or 504: "Troubleshooting the REST API",
# Timeouts, https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api),
# so github3's own 10 s gave up just as that answer was due, and over a slow link before it
# came: a longer wait lets GitHub's answer, which the transport retries (but a POST), arrive.
READ_TIMEOUT = 30.0


def _github(api_url: str | None, token: str | None = None) -> github3.GitHub:
    """A github3 client for the GitHub at `api_url` (None: github.com), speaking to its REST
    API's root as host.py finds it: github3.GitHubEnterprise would add `/api/v3`
    to every host, which GHE.com's API (https://api.SUBDOMAIN.ghe.com) does not have."""
    gh = github3.GitHub(token=token)
    gh.session.base_url = github_host(api_url).api
    gh.session.default_read_timeout = READ_TIMEOUT
    return gh


def writer_identity(api_url: str | None, token: str | None, app: AppCredentials | None) -> str:
    """Whom GitHub counts a write against: the App (all its installations' tokens write as
    its bot), or the token (its digest: which user it is costs a request, and two tokens of
    one user then pace apart), on one GitHub."""
    host = api_url or "github.com"
    if app is not None:
        return f"{host} app {app.app_id}"
    return f"{host} token {hashlib.sha256((token or '').encode()).hexdigest()[:16]}"


class Client:
    def __init__(
        self,
        api_url: str | None,
        *,
        token: str | None = None,
        app: AppCredentials | None = None,
        http: GitHubHTTP | None = None,
    ) -> None:
        if token is not None and app is not None:
            raise CredentialsError("GitHub needs a token or App credentials (exactly one)")
        self.api_url = api_url
        self.app = app
        self.gh = _github(api_url, token)
        self.http = http or GitHubHTTP(pacer=identity_pacer(writer_identity(api_url, token, app)))
        for scheme in ("http://", "https://"):
            self.gh.session.mount(scheme, self.http)

    @property
    def session(self) -> Any:
        """github3's session (a `requests.Session`), for the few calls made by hand."""
        return self.gh.session

    # -- credentials ------------------------------------------------------------------------

    def fresh(self) -> None:
        """With App credentials, an installation token that lives a while longer."""
        if self.app is None:
            return
        expires = getattr(getattr(self.gh.session, "auth", None), "expires_at", None)
        if expires is not None and expires - datetime.datetime.now(datetime.UTC) > RENEW_BEFORE:
            return
        self.as_installation()

    def as_app(self) -> None:
        """Speak to GitHub as the App itself (github3 would issue its JWT at `now`)."""
        assert self.app is not None
        self.gh.session.app_bearer_token_auth(app_jwt(self.app), JWT_LIFETIME)

    def as_installation(self) -> None:
        """Speak to GitHub with a token of the App's installation: one the process already
        holds for it while it has a while to live (every repository of an installation
        shares it), else a new one."""
        app = self.app
        assert app is not None
        key = (self.api_url, app.app_id, app.installation_id, hashlib.sha256(app.private_key).hexdigest())
        with _TOKENS_LOCK:
            held = _TOKENS.get(key)
            if held is None or held[1] - datetime.datetime.now(datetime.UTC) <= RENEW_BEFORE:
                url = self.url("app", "installations", str(app.installation_id), "access_tokens")
                with self.gh.session.no_auth():
                    answer = self.gh.session.post(url, auth=AppBearerTokenAuth(app_jwt(app), JWT_LIFETIME))
                if answer.status_code != 201:
                    raise refusal(answer_of(answer), f"an installation token for installation {app.installation_id}")
                token = answer.json()
                expires = datetime.datetime.fromisoformat(str(token["expires_at"]).replace("Z", "+00:00"))
                held = _TOKENS[key] = (token, expires)
        self.gh.session.app_installation_token_auth(held[0])

    # -- requests ---------------------------------------------------------------------------

    def url(self, *parts: str) -> str:
        """The API URL of `parts` (`"repos", owner, name, "pulls"`)."""
        return str(self.gh._build_url(*parts))

    def call(self, method: str, url: str, what: str, *, missing: Any = ..., **kwargs: Any) -> Page:
        """One request, deciphered. With `missing`, a 404 is that value instead of an error."""
        self.fresh()
        answer = self.gh.session.request(method, url, **kwargs)
        if answer.status_code == 404 and missing is not ...:
            return Page(missing)
        return decipher(answer.status_code, answer.headers, answer.content, what, wait=retry_after(answer))

    def paginate(
        self, url: str, what: str, *, params: Mapping[str, str] | None = None, key: str | None = None
    ) -> Iterator[Any]:
        """Every item of a listing, page after page (GitHub answers 30 a page unless asked:
        100 are asked). `key` names the list in an answer that wraps it (`workflow_runs`)."""
        following: str | None = url
        query: dict[str, str] | None = {"per_page": "100", **(params or {})}
        while following:
            page = self.call("GET", following, what, params=query)
            items = page.data.get(key, []) if key and isinstance(page.data, dict) else page.data
            yield from (items if isinstance(items, list) else [])
            following, query = page.next, None  # the next link carries the query

    def stream(self, url: str, what: str) -> requests.Response:
        """A download followed through its redirect (without the token, to storage)."""
        self.fresh()
        answer: requests.Response = self.gh.session.get(url, allow_redirects=True, stream=True)
        if answer.status_code != 200:
            raise refusal(answer_of(answer), what)
        return answer

    # -- github3's models ---------------------------------------------------------------------

    def repository(self, owner: str, name: str) -> Any:
        self.fresh()
        try:
            found = self.gh.repository(owner, name)
        except GitHubError as exc:
            raise translate(exc, f"reading {owner}/{name}") from None
        if found is None:
            raise CredentialsError(f"GitHub: {owner}/{name} is not visible to this token")
        return found

    def issue(self, data: Mapping[str, Any]) -> Any:
        """An issue of a listing read with `paginate`, as github3 models it."""
        return ShortIssue(dict(data), self.gh.session)

    def app_installations(self) -> list[dict[str, Any]]:
        """Every installation of the App as GitHub lists it (read by `app.installation_of`)."""
        self.as_app()
        return [dict(found.as_dict()) for found in self.gh.app_installations()]

    def app_slug(self) -> str:
        self.as_app()
        return str(self.gh.authenticated_app().slug)

    def login(self) -> str:
        return str(self.gh.me().login)

    def rate_limit(self) -> None:
        self.gh.rate_limit()

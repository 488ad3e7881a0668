"""Which GitHub wheelpin speaks to, and where its web pages and its REST API are: the one
place that tells the three kinds apart (WHEELPIN_GITHUB_API_URL, the Action's
`github.api_url`, `wheelpin app create`).

- github.com: the web at `https://github.com`, the API at `https://api.github.com`.
- GitHub Enterprise Cloud with data residency (GHE.com): the web at `https://SUBDOMAIN.ghe.com`,
  the API at `https://api.SUBDOMAIN.ghe.com`, with no `/api/v3`
  (https://docs.github.com/en/enterprise-cloud@latest/admin/data-residency/about-github-enterprise-cloud-with-data-residency,
  and ".../data-residency/network-details-for-ghecom").
- GitHub Enterprise Server (and the tests' emulator): the web at `https://HOST`, the API at
  `https://HOST/api/v3`.

Either address of each is accepted, with or without trailing slashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

_GITHUB_COM = {"api.github.com", "github.com", "www.github.com"}
_GHE_COM = ".ghe.com"
_SERVER_API = "/api/v3"


@dataclass(frozen=True)
class GitHubHost:
    """One GitHub's web address and its REST API's root, neither with a trailing slash."""

    web: str
    api: str

    @property
    def is_github_com(self) -> bool:
        return self == GITHUB_COM


GITHUB_COM = GitHubHost("https://github.com", "https://api.github.com")


def github_host(address: str | None) -> GitHubHost:
    """The GitHub at `address` (its web or its API address; nothing: github.com). Raises
    ValueError for what is not an http(s) address."""
    if address is None or not address.strip():
        return GITHUB_COM
    url = address.strip().rstrip("/")
    if url.lower().endswith(_SERVER_API):  # written by habit for GHE.com too: its names are all GitHub's
        url = url[: -len(_SERVER_API)].rstrip("/")
    parts = urlsplit(url)
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        raise ValueError(f"give GitHub's address as https://HOST, not {address!r}")
    name = parts.hostname.lower()
    bare = not parts.path and parts.port is None  # a path or a port is somebody's own server
    if bare and name in _GITHUB_COM:
        return GITHUB_COM
    if bare and name.endswith(_GHE_COM):
        subdomain = name[: -len(_GHE_COM)].removeprefix("api.")
        if subdomain and "." not in subdomain:
            return GitHubHost(f"https://{subdomain}{_GHE_COM}", f"https://api.{subdomain}{_GHE_COM}")
    return GitHubHost(url, url + _SERVER_API)

"""Which GitHub an address names, and its web and API addresses: github.com, GHE.com
(GitHub Enterprise Cloud with data residency: `SUBDOMAIN.ghe.com` ↔ `api.SUBDOMAIN.ghe.com`,
no /api/v3) and Enterprise Server (`HOST` ↔ `HOST/api/v3`), from either address."""

from __future__ import annotations

import pytest

from bot.adapters.github.host import GITHUB_COM, GitHubHost, github_host

GHE_COM = GitHubHost("https://octo.ghe.com", "https://api.octo.ghe.com")
SERVER = GitHubHost("https://ghe.example.com", "https://ghe.example.com/api/v3")


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        (None, GITHUB_COM),
        ("", GITHUB_COM),
        ("https://github.com", GITHUB_COM),
        ("https://api.github.com/", GITHUB_COM),
        ("https://API.GitHub.com", GITHUB_COM),
        # GHE.com, from its web address or its API's (what the Action's github.api_url gives)
        ("https://octo.ghe.com", GHE_COM),
        ("https://api.octo.ghe.com", GHE_COM),
        ("https://api.octo.ghe.com/", GHE_COM),
        ("https://OCTO.ghe.com/", GHE_COM),
        # Enterprise Server: anything else, /api/v3 written or not
        ("https://ghe.example.com", SERVER),
        ("https://ghe.example.com/api/v3/", SERVER),
        ("http://127.0.0.1:8123", GitHubHost("http://127.0.0.1:8123", "http://127.0.0.1:8123/api/v3")),
        ("https://octo.ghe.com/api/v3", GHE_COM),  # /api/v3 written by habit: GHE.com has none
        # not GHE.com's shape (a port, a deeper name): somebody's own server
        ("https://octo.ghe.com:8443", GitHubHost("https://octo.ghe.com:8443", "https://octo.ghe.com:8443/api/v3")),
        ("https://a.b.ghe.com", GitHubHost("https://a.b.ghe.com", "https://a.b.ghe.com/api/v3")),
    ],
)
def test_an_address_names_one_github_both_ways(given: str | None, meant: GitHubHost) -> None:
    host = github_host(given)
    assert host == meant
    assert github_host(host.web) == github_host(host.api) == host  # the mapping goes both ways


def test_what_is_not_an_address_is_refused() -> None:
    for bad in ("ghe.example.com", "ftp://ghe.example.com", "https://"):
        with pytest.raises(ValueError, match="https://HOST"):
            github_host(bad)


@pytest.mark.parametrize(
    ("setting", "root"),
    [
        (None, "https://api.github.com"),
        ("https://api.octo.ghe.com", "https://api.octo.ghe.com"),
        ("https://ghe.example.com", "https://ghe.example.com/api/v3"),
    ],
)
def test_the_client_speaks_to_that_githubs_api(setting: str | None, root: str) -> None:
    from bot.adapters.github.client import Client
    from bot.app.settings import Settings

    client = Client(Settings(github_api_url=setting).github_api_url, token="t")
    assert client.url("repos", "rocm", "vllm") == f"{root}/repos/rocm/vllm"

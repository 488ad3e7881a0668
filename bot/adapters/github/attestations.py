"""GitHub's artifact attestations of a digest, as the `trust` check reads them
(loop/trustcheck.py; verified by adapters/sigstoreverify.py).

https://docs.github.com/en/rest/repos/attestations#list-attestations:
`GET /repos/{owner}/{repo}/attestations/{subject_digest}`, the digest as `sha256:HEX`,
answers `{"attestations": [{"bundle": {…a Sigstore bundle…}, "repository_id", "bundle_url"}]}`,
paged by `before`/`after` cursors in the `Link` header (30 a page unless asked, 100 at
most). A digest with no attestation answers 404, as `gh attestation verify` reads it ("no
attestations found"). An entry may carry no inline bundle, only `bundle_url` (a
snappy-compressed copy in storage): that one is said and not fetched, so never counted as
verified.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .client import Client

MAX_ATTESTATIONS = 300  # read at most, three pages of 100: a wheel has one or a few


@dataclass(frozen=True)
class Listed:
    bundle: dict[str, Any] | None  # None: only `bundle_url` was given
    bundle_url: str | None = None


class AttestationsReader:
    def __init__(self, client: Client) -> None:
        self.client = client

    def listed(self, repository: str, sha256: str) -> Iterator[Listed]:
        """Each attestation GitHub lists in `repository` (OWNER/REPO) for the digest, up to
        MAX_ATTESTATIONS."""
        owner, name = repository.split("/", 1)
        url: str | None = self.client.url("repos", owner, name, "attestations", f"sha256:{sha256}")
        query: dict[str, str] | None = {"per_page": "100"}
        what = f"reading the attestations of sha256:{sha256[:12]}… in {repository}"
        read = 0
        while url is not None and read < MAX_ATTESTATIONS:
            page = self.client.call("GET", url, what, missing={"attestations": []}, params=query)
            items = page.data.get("attestations") if isinstance(page.data, dict) else None
            for item in items if isinstance(items, list) else []:
                if read >= MAX_ATTESTATIONS:
                    return
                read += 1
                if isinstance(item, dict):
                    bundle = item.get("bundle")
                    yield Listed(
                        bundle if isinstance(bundle, dict) and bundle else None,
                        str(item["bundle_url"]) if item.get("bundle_url") else None,
                    )
            url, query = page.next, None  # the next link carries the cursor

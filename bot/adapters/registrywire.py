"""The registry client's wire (docs/design.md §3 "Wheel image"): retry policy, traffic
counts, hosts, Retry-After, auth challenges, and the hashed upload body. Pure helpers of
`registry.py`, apart so that each file reads as one thing."""

from __future__ import annotations

import hashlib
import ipaddress
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from ..core.errors import VerificationError
from ..core.image.reach import Reach

if TYPE_CHECKING:  # a type here; the client that sends requests imports it
    import requests

_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    attempts: int = 5
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0
    connect_timeout: float = 10.0
    read_timeout: float = 120.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return float(min(self.backoff * 2.0**attempt, self.max_backoff))


@dataclass
class Traffic:
    """What a client sent and fetched, for `--json` reports and benchmarks."""

    requests: int = 0
    bytes_uploaded: int = 0
    bytes_downloaded: int = 0
    by_method: dict[str, int] = field(default_factory=dict)


def hostname(host: str) -> str:
    """`host[:port]` without its port (`[::1]:5000` gives `::1`)."""
    if host.startswith("["):
        return host[1 : host.index("]")]
    return host.split(":")[0] if host.count(":") <= 1 else host


def is_loopback(host: str) -> bool:
    name = hostname(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def reach_of(host: str, insecure: Iterable[str], *, tls_verify: bool) -> Reach:
    """How a registry is spoken to: plain HTTP to a loopback host and to those named
    `insecure`, HTTPS to every other (checking its certificate unless `tls_verify` is False)."""
    loopback = is_loopback(host)
    return Reach(plain_http=loopback or host in set(insecure), loopback=loopback, tls_verify=tls_verify)


def retry_after_of(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(_CHALLENGE.findall(rest))


def with_digest(location: str, digest: str) -> str:
    return location + ("&" if urlsplit(location).query else "?") + urlencode({"digest": digest})


class HashedBody:
    """An upload body of a known size streamed from `chunks()`, hashed and counted as it goes.

    Its `len()` is what requests sends as Content-Length; a stream that gives more bytes
    than that is cut off with an error rather than sent past the length declared.
    """

    def __init__(self, chunks: Callable[[], Iterable[bytes]], size: int) -> None:
        self._chunks = chunks
        self._size = size
        self._hash = hashlib.sha256()
        self.sent = 0

    def __len__(self) -> int:
        return self._size

    def payload(self) -> HashedBody | bytes:
        """What to hand requests: this stream, or for an empty blob `b""` (requests sends a
        stream whose length is 0 chunked), its chunks checked to be empty."""
        if self._size:
            return self
        for _chunk in self:
            pass
        return b""

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks():
            if self.sent + len(chunk) > self._size:
                raise VerificationError(f"the blob streamed is longer than the {self._size} bytes declared")
            self._hash.update(chunk)
            self.sent += len(chunk)
            yield chunk
        if self.sent != self._size:
            raise VerificationError(f"the blob streamed is {self.sent} bytes, not the {self._size} declared")

    def check(self, digest: str) -> None:
        if "sha256:" + self._hash.hexdigest() != digest:
            raise VerificationError(f"the bytes streamed for {digest} changed while they were uploaded")

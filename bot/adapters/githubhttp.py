"""Being a good GitHub API citizen, under github3.py's own session (a requests adapter).

- Conditional requests: a JSON GET remembers its ETag and body; the next GET of that URL
  with the same token (ETags follow the token, and installation tokens rotate hourly)
  sends If-None-Match, and a 304, which does not count against the rate limit, is
  answered from the remembered body. Only small JSON answers read whole are kept —
  never a streamed download (an artifact) — one per URL, least recently used first out,
  within a byte budget: a bot that runs for months holds a bounded cache.
- Limits: 429, 5xx, and 403 for a primary or secondary rate limit are retried after
  Retry-After or x-ratelimit-reset (capped), with backoff; content-creating requests are
  paced under GitHub's ~80 a minute (at most 70 in any minute).
- Counting: every request is counted, split into counted and free (304).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.adapters import HTTPAdapter

WRITES = {"POST", "PATCH", "PUT", "DELETE"}


@dataclass
class GitHubTraffic:
    counted: int = 0
    free: int = 0  # 304 Not Modified
    retried: int = 0
    rate_remaining: int | None = None  # X-RateLimit-Remaining, as last answered
    by_method: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Cached:
    authorization: str
    etag: str
    content: bytes
    headers: Mapping[str, str]


class _ETagCache:
    """URL → the last 200 answer with an ETag, least recently used out past `budget` bytes."""

    def __init__(self, budget: int, largest: int) -> None:
        self.budget, self.largest = budget, largest
        self._entries: OrderedDict[str, _Cached] = OrderedDict()
        self.size = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, url: str, authorization: str) -> _Cached | None:
        entry = self._entries.get(url)
        if entry is None or entry.authorization != authorization:
            return None
        self._entries.move_to_end(url)
        return entry

    def keep(self, url: str, entry: _Cached) -> None:
        self.drop(url)
        if len(entry.content) > self.largest:
            return
        self._entries[url] = entry
        self.size += len(entry.content)
        while self.size > self.budget:
            self.drop(next(iter(self._entries)))

    def drop(self, url: str) -> None:
        old = self._entries.pop(url, None)
        if old is not None:
            self.size -= len(old.content)


class GitHubHTTP(HTTPAdapter):
    def __init__(self, *, attempts: int = 5, backoff: float = 1.0, max_wait: float = 300.0,
                 writes_per_minute: int = 70, sleep: Callable[[float], None] = time.sleep,
                 cache_bytes: int = 16 << 20, largest_cached: int = 1 << 20) -> None:
        super().__init__()
        self.attempts, self.backoff, self.max_wait = attempts, backoff, max_wait
        self.writes_per_minute = writes_per_minute
        self._sleep = sleep
        self._writes: deque[float] = deque()
        self.cache = _ETagCache(cache_bytes, largest_cached)
        self.traffic = GitHubTraffic()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        url, authorization = str(request.url), str(request.headers.get("Authorization", ""))
        cacheable = request.method == "GET" and not kwargs.get("stream")  # a stream is never read whole here
        cached = self.cache.get(url, authorization) if cacheable else None
        if cached is not None:
            request.headers["If-None-Match"] = cached.etag
        if request.method in WRITES:
            self._pace()
        for attempt in range(self.attempts):
            response = super().send(request, **kwargs)
            method = str(request.method)
            self.traffic.by_method[method] = self.traffic.by_method.get(method, 0) + 1
            if response.status_code == 304 and cached is not None:
                self.traffic.free += 1
                return self._from_cache(request, cached)
            self.traffic.counted += 1
            remaining = response.headers.get("x-ratelimit-remaining")
            if remaining is not None and remaining.isdigit():
                self.traffic.rate_remaining = int(remaining)
            wait = self._wait_for(response, attempt)
            if wait is None or attempt + 1 == self.attempts:
                if cacheable and response.status_code == 200:
                    self._remember(url, authorization, response)
                return response
            self.traffic.retried += 1
            response.close()
            self._sleep(wait)
        raise AssertionError("unreachable")

    def _remember(self, url: str, authorization: str, response: requests.Response) -> None:
        etag = response.headers.get("ETag")
        json_answer = response.headers.get("Content-Type", "").startswith("application/json")
        length = response.headers.get("Content-Length")
        if not etag or not json_answer or (length is not None and length.isdigit()
                                            and int(length) > self.cache.largest):
            self.cache.drop(url)
            return
        self.cache.keep(url, _Cached(authorization, etag, response.content, dict(response.headers)))

    def _pace(self) -> None:
        """At most `writes_per_minute` content-creating requests in any minute."""
        now = time.monotonic()
        while self._writes and now - self._writes[0] > 60:
            self._writes.popleft()
        if len(self._writes) >= self.writes_per_minute:
            self._sleep(60 - (now - self._writes[0]))
            self._writes.popleft()
        self._writes.append(time.monotonic())

    def _wait_for(self, response: requests.Response, attempt: int) -> float | None:
        """How long to wait before trying again, or None when the answer is final."""
        status = response.status_code
        limited = status == 429 or (status == 403 and (
            response.headers.get("x-ratelimit-remaining") == "0" or "rate limit" in response.text.lower()))
        if not (limited or status >= 500):
            return None
        retry_after = response.headers.get("Retry-After")
        if retry_after and retry_after.isdigit():
            return min(float(retry_after), self.max_wait)
        reset = response.headers.get("x-ratelimit-reset")
        if limited and reset and reset.isdigit():
            return min(max(0.0, float(reset) - time.time()), self.max_wait)
        return float(min(self.backoff * 2.0**attempt, self.max_wait))

    @staticmethod
    def _from_cache(request: requests.PreparedRequest, cached: _Cached) -> requests.Response:
        response = requests.Response()
        response.status_code = 200
        response._content = cached.content
        response.headers.update(cached.headers)
        response.url = str(request.url)
        response.request = request
        response.encoding = "utf-8"
        return response

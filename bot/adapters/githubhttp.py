"""Being a good GitHub API citizen, under github3.py's own session (a requests adapter).

- Conditional requests: a GET remembers its ETag (per token: ETags follow the token, and
  installation tokens rotate hourly); the next GET sends If-None-Match and a 304, which
  does not count against the rate limit, is answered from the remembered body.
- Limits: 429, 5xx, and 403 for a primary or secondary rate limit are retried after
  Retry-After or x-ratelimit-reset (capped), with backoff; content-creating requests are
  paced under GitHub's ~80 a minute (at most 70 in any minute).
- Counting: every request is counted, split into counted and free (304).
"""

from __future__ import annotations

import time
from collections import deque
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
    etag: str
    content: bytes
    headers: Mapping[str, str]


class GitHubHTTP(HTTPAdapter):
    def __init__(self, *, attempts: int = 5, backoff: float = 1.0, max_wait: float = 300.0,
                 writes_per_minute: int = 70, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__()
        self.attempts, self.backoff, self.max_wait = attempts, backoff, max_wait
        self.writes_per_minute = writes_per_minute
        self._sleep = sleep
        self._writes: deque[float] = deque()
        self._cache: dict[tuple[str, str], _Cached] = {}
        self.traffic = GitHubTraffic()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        key = (str(request.headers.get("Authorization", "")), str(request.url))
        cached = self._cache.get(key) if request.method == "GET" else None
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
                if request.method == "GET" and response.status_code == 200 and response.headers.get("ETag"):
                    self._cache[key] = _Cached(response.headers["ETag"], response.content, dict(response.headers))
                return response
            self.traffic.retried += 1
            response.close()
            self._sleep(wait)
        raise AssertionError("unreachable")

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

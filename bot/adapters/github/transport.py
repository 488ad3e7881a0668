"""Being a good GitHub API citizen, under github3.py's own session (a requests adapter).

Every request of the GitHub adapter (adapters/github/) passes here; a final non-2xx
answer is handed to sansio.py (`answer_of`, with the wait its attempts leave) and read into
a wheelpin error — a rate limit into TransientError(retry_after=…), waited out by the loop.

- Conditional requests: a JSON GET remembers its ETag and body; the next GET of that URL
  with the same token (ETags follow the token, and installation tokens rotate hourly)
  sends If-None-Match, and a 304, which does not count against the rate limit, is
  answered from the remembered body. Only small JSON answers read whole are kept —
  never a streamed download (an artifact) — one per URL, least recently used first out,
  within a byte budget: a bot that runs for months holds a bounded cache.
- Limits (sansio.limit_wait, as GitHub documents them): Retry-After first; x-ratelimit-reset
  only when x-ratelimit-remaining is 0; else a secondary limit waits a minute, doubling
  with each attempt. 5xx are retried with backoff — except a POST, which may have landed
  (the caller checks before writing again). A wait past `max_wait` is not slept here:
  the answer is returned as final. Content-creating requests are paced under GitHub's
  80 a minute (70 by default) and 500 an hour, and sent one second apart at least, as
  GitHub's REST best practices ask.
- Counting: every request is counted, split into counted and free (304).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter

from ...core.errors import TransientError
from .. import writes
from .sansio import Answer, limit_wait, read_answer, seconds_of

WRITES = {"POST", "PATCH", "PUT", "DELETE"}
WRITE_GAP = 1.0  # seconds at least between two content-creating requests of one identity (WritePacer)
MAX_WAIT = 300.0  # seconds a request may sleep for a limit; a longer wait is said, not slept
_ATTEMPT: weakref.WeakKeyDictionary[requests.Response, int] = weakref.WeakKeyDictionary()  # final answer → its attempt


def retry_after(response: requests.Response, *, now: float | None = None) -> float | None:
    """The documented wait for a final answer of GitHubHTTP (continuing its attempts: a
    secondary limit given up on after waiting 1 and 2 minutes says 4), or None if it is not
    a rate limit and names no Retry-After — for TransientError(retry_after=...)."""
    status, clock = response.status_code, time.time() if now is None else now
    if status >= 500:
        return seconds_of(response.headers.get("Retry-After"), clock)
    text = response.text if status in (403, 429) else ""
    return limit_wait(status, response.headers, text, _ATTEMPT.get(response, 0), now=clock)


def answer_of(response: requests.Response | None, status: int | None = None) -> Answer:
    """The answer `response` is, for sansio.py's rules (None: no answer came, `status` the
    code github3 kept), with the wait GitHub's limits ask after this transport's attempts."""
    if response is None:
        return Answer(status or 0, "", {})
    return read_answer(response.status_code, response.headers, response.content, wait=retry_after(response))


class GitHubUnreachable(TransientError):
    """GitHub did not answer a request: the connection failed or the answer did not come in time."""

    def __init__(self, method: str, url: str, exc: Exception) -> None:
        path = urlsplit(url).path
        why = "no answer in time" if isinstance(exc, requests.Timeout) else "the connection failed"
        super().__init__(f"GitHub did not answer {method} {path} ({why}: {type(exc).__name__})")


class WritesPaced(TransientError):
    """A write would break GitHub's content-creation limits for longer than the adapter waits."""


class WritePacer:
    """At most `per_minute` content-creating requests in any 60 s and `per_hour` in any
    3600 s, and `gap` seconds at least between two; remembers at most max(per_minute,
    per_hour) send times. Its clock is injected (`sleep`, `monotonic`).

    https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits
    ("no more than 80 content-generating requests per minute and no more than 500 ... per hour");
    https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api
    ("If you are making a large number of POST, PATCH, PUT, or DELETE requests ..., wait at
    least one second between each request")
    """

    def __init__(
        self,
        per_minute: int,
        per_hour: int,
        *,
        gap: float = WRITE_GAP,
        sleep: Callable[[float], None],
        monotonic: Callable[[], float],
    ) -> None:
        if per_minute < 1 or per_hour < 1:
            raise ValueError("write limits must be at least 1")
        if gap < 0:
            raise ValueError("the gap between writes cannot be negative")
        self.windows = ((60.0, per_minute), (3600.0, per_hour))
        self.gap = gap
        self._sleep, self._monotonic = sleep, monotonic
        self._sent: deque[float] = deque(maxlen=max(per_minute, per_hour))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sent)

    def wait(self, longest: float = float("inf")) -> None:
        """Sleep until one more write fits both windows, and count it as sent. A wait over
        `longest` seconds (the hourly window full) is not slept: WritesPaced says how long
        it is, so that a service's single worker goes on with other work meanwhile."""
        with self._lock:
            now = self._monotonic()
            while self._sent and now - self._sent[0] >= 3600.0:
                self._sent.popleft()
            # the write `limit` back must be a whole window old before another is sent
            limited = max(
                (self._sent[-limit] + span - now for span, limit in self.windows if len(self._sent) >= limit),
                default=0.0,
            )
            spaced = self._sent[-1] + self.gap - now if self._sent else 0.0  # one write at a time, `gap` apart
            wait = max(limited, spaced)
            if wait > longest:
                # a gap this long is refused at start (Settings.check_write_pacing); said as itself
                reason = (
                    f"GitHub's limit of {self.windows[1][1]} writes an hour is reached"
                    if limited >= spaced
                    else f"writes of one App or token are spaced {self.gap:.0f} s apart"
                )
                raise WritesPaced(f"{reason}; writing again in {wait / 60:.0f} min", retry_after=wait)
            if wait > 0:
                self._sleep(wait)
            self._sent.append(self._monotonic())


# GitHub counts content-creating requests per user or App, across all its repositories (the
# secondary limits above): one pacer per identity in a process, whichever repository writes
_PACERS: dict[str, WritePacer] = {}
_PACERS_LOCK = threading.Lock()
_SHARE = [1]  # the replicas writing as the same identities (PostgreSQL), each paced at 1/N


@dataclass(frozen=True)
class PacingClock:
    """What the pacers of this process sleep on: the real clock, unless a test or a
    benchmark gives one that skips its sleeps."""

    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic


_CLOCK = [PacingClock()]
_GAP = [WRITE_GAP]  # seconds between two writes of one identity, before the replicas' share


def share_writes(replicas: int) -> None:
    """This process is one of `replicas` that write as the same identities: each paces its
    writes at 1/N of the limits, and N seconds apart, so that together they write about one
    a second (no shared counter to keep; docs/sizing.md). Pacers made before are dropped."""
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    with _PACERS_LOCK:
        _SHARE[0] = replicas
        _PACERS.clear()


def space_writes(gap: float) -> None:
    """Two writes of one identity go at least `gap` seconds apart (WHEELPIN_GITHUB_WRITE_GAP)
    from now; pacers made before are dropped when it changes."""
    if gap < 0:
        raise ValueError("the gap between writes cannot be negative")
    with _PACERS_LOCK:
        if _GAP[0] != gap:
            _GAP[0] = gap
            _PACERS.clear()


def pace_on(clock: PacingClock) -> None:
    """The clock the write pacers of this process sleep on from now. Pacers made before are dropped."""
    with _PACERS_LOCK:
        _CLOCK[0] = clock
        _PACERS.clear()


def identity_pacer(identity: str, *, per_minute: int = 70, per_hour: int = 500) -> WritePacer:
    """The one write pacer of `identity` (an App, or a token) in this process."""
    with _PACERS_LOCK:
        pacer = _PACERS.get(identity)
        if pacer is None:
            share, clock = _SHARE[0], _CLOCK[0]
            pacer = _PACERS[identity] = WritePacer(
                max(1, per_minute // share),
                max(1, per_hour // share),
                gap=_GAP[0] * share,
                sleep=clock.sleep,
                monotonic=clock.monotonic,
            )
        return pacer


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
    def __init__(
        self,
        *,
        attempts: int = 5,
        backoff: float = 1.0,
        max_wait: float = MAX_WAIT,
        writes_per_minute: int = 70,
        writes_per_hour: int = 500,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Callable[[], float] = time.time,  # epoch seconds, as x-ratelimit-reset
        cache_bytes: int = 16 << 20,
        largest_cached: int = 1 << 20,
        pacer: WritePacer | None = None,
    ) -> None:
        super().__init__()
        self.attempts, self.backoff, self.max_wait = attempts, backoff, max_wait
        self._sleep, self._clock = sleep, clock
        # `pacer`: its identity's, shared with every client writing as it (`identity_pacer`)
        self.pacer = (
            pacer
            if pacer is not None
            else WritePacer(writes_per_minute, writes_per_hour, sleep=sleep, monotonic=monotonic)
        )  # (an empty pacer is falsy)
        self.cache = _ETagCache(cache_bytes, largest_cached)
        self.traffic = GitHubTraffic()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        url, authorization = str(request.url), str(request.headers.get("Authorization", ""))
        method = str(request.method)
        cacheable = method == "GET" and not kwargs.get("stream")  # a stream is never read whole here
        cached = self.cache.get(url, authorization) if cacheable else None
        if cached is not None:
            request.headers["If-None-Match"] = cached.etag
        for attempt in range(self.attempts):
            if method in WRITES:
                self.pacer.wait(self.max_wait)  # each attempt is a request GitHub counts
            writes.before(method, url)  # after any wait: a fenced job stops here (adapters/writes.py)
            try:
                response = super().send(request, **kwargs)
            except (requests.ConnectionError, requests.Timeout) as exc:
                # an outside failure, said once and tried again by the next pass (github3 lets
                # through what is no requests exception; it wraps what is one in no GitHubError)
                raise GitHubUnreachable(method, url, exc) from None
            self.traffic.by_method[method] = self.traffic.by_method.get(method, 0) + 1
            if response.status_code == 304 and cached is not None:
                self.traffic.free += 1
                return self._from_cache(request, cached)
            self.traffic.counted += 1
            remaining = response.headers.get("x-ratelimit-remaining")
            if remaining is not None and remaining.isdigit():
                self.traffic.rate_remaining = int(remaining)
            wait = self._wait_for(method, response, attempt)
            if wait is None or wait > self.max_wait or attempt + 1 == self.attempts:
                if wait is not None:
                    _ATTEMPT[response] = attempt  # retry_after(response) goes on from here
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
        if (
            not etag
            or not json_answer
            or (length is not None and length.isdigit() and int(length) > self.cache.largest)
        ):
            self.cache.drop(url)
            return
        self.cache.keep(url, _Cached(authorization, etag, response.content, dict(response.headers)))

    def _wait_for(self, method: str, response: requests.Response, attempt: int) -> float | None:
        """How long to wait before trying again, or None when the answer is final."""
        status = response.status_code
        if method == "POST" and status >= 500:
            return None  # it may have landed: the caller reads before it writes again
        text = response.text if status in (403, 429) else ""  # never read a streamed 200 here
        return limit_wait(status, response.headers, text, attempt, now=self._clock(), backoff=self.backoff)

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

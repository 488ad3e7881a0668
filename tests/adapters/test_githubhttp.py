"""The GitHub adapter on a loopback server: its ETag cache (what it keeps, for whom, and how
much), its waits on rate limits and errors as GitHub documents them, and its write pacing."""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from bot.adapters.github.sansio import limit_wait
from bot.adapters.github.transport import GitHubHTTP, WritePacer, WritesPaced, retry_after
from tests.fixtures.clocks import FastForward

ARTIFACT = 8 << 20


Scripted = tuple[int, dict[str, str], str]  # status, headers, body


class Server:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []  # path, If-None-Match
        self.sent: list[str] = []  # "METHOD /path", every request
        self.script: deque[Scripted] = deque()  # answered first, in order, to any request
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACK)

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no delayed-ACK stall

            def scripted(self) -> bool:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.sent.append(f"{self.command} {self.path}")
                if not server.script:
                    return False
                status, headers, text = server.script.popleft()
                self.answer(status, headers, text.encode())
                return True

            def answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_write(self) -> None:
                if not self.scripted():
                    self.answer(201 if self.command == "POST" else 200, {}, b"{}")

            do_POST = do_PATCH = do_PUT = do_DELETE = do_write  # noqa: N815

            def do_GET(self) -> None:  # noqa: N802
                if self.scripted():
                    return
                server.seen.append((self.path, self.headers.get("If-None-Match")))
                etag = f'"{self.path}"'
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == "/artifact.zip":
                    body, kind = b"z" * ARTIFACT, "application/zip"
                else:
                    body, kind = json.dumps({"path": self.path, "pad": "x" * 1000}).encode(), "application/json"
                self.send_response(200)
                self.send_header("ETag", etag)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture()
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.httpd.shutdown()
    running.httpd.server_close()


def session_with(http: GitHubHTTP, token: str = "t1") -> requests.Session:
    session = requests.Session()
    session.mount("http://", http)
    session.headers["Authorization"] = f"token {token}"
    return session


def test_a_json_answer_is_asked_again_with_its_etag_and_served_from_memory(server: Server) -> None:
    http = GitHubHTTP()
    session = session_with(http)
    first = session.get(server.url + "/repos/a").json()
    assert session.get(server.url + "/repos/a").json() == first
    assert server.seen == [("/repos/a", None), ("/repos/a", '"/repos/a"')] and http.traffic.free == 1
    # another token (installation tokens rotate hourly): not its ETag to send; one entry per URL
    session_with(http, "t2").get(server.url + "/repos/a")
    assert server.seen[-1] == ("/repos/a", None) and len(http.cache) == 1


def test_a_streamed_download_is_never_kept(server: Server) -> None:
    http = GitHubHTTP()
    session = session_with(http)
    for _ in range(3):
        with session.get(server.url + "/artifact.zip", stream=True) as answer:
            assert sum(len(chunk) for chunk in answer.iter_content(1 << 20)) == ARTIFACT
    assert len(http.cache) == 0 and http.cache.size == 0
    assert [match for _, match in server.seen] == [None, None, None]
    whole = session.get(server.url + "/artifact.zip")  # read whole, but not JSON: not kept either
    assert len(whole.content) == ARTIFACT and len(http.cache) == 0


def test_the_cache_keeps_within_its_budget_least_recently_used_out(server: Server) -> None:
    http = GitHubHTTP(cache_bytes=10_000)
    session = session_with(http)
    for number in range(50):
        session.get(server.url + f"/repos/{number}")
        session.get(server.url + "/repos/0")  # used all along: kept
    assert http.cache.size <= 10_000 and 0 < len(http.cache) < 50
    assert session.get(server.url + "/repos/0").status_code == 200 and server.seen[-1][1] == '"/repos/0"'
    session.get(server.url + "/repos/1")
    assert server.seen[-1] == ("/repos/1", None)  # long out of the cache


class Clock:
    """Both clocks of the adapter, moved on only by its sleeps."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def paced(clock: Clock, **kwargs: Any) -> GitHubHTTP:
    return GitHubHTTP(sleep=clock.sleep, monotonic=clock.time, clock=clock.time, **kwargs)


SECONDARY = json.dumps({"message": "You have exceeded a secondary rate limit. Please wait a few minutes."})
PRIMARY = json.dumps({"message": "API rate limit exceeded for installation ID 1."})


def test_retry_after_is_waited_as_given(server: Server) -> None:
    clock = Clock()
    server.script += [
        (
            429,
            {"Retry-After": "7", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(clock.now) + 3000)},
            SECONDARY,
        )
    ]
    assert session_with(paced(clock)).get(server.url + "/repos/a").status_code == 200
    assert clock.slept == [7.0] and server.sent == ["GET /repos/a"] * 2


def test_a_secondary_limit_waits_a_minute_not_until_a_reset_an_hour_away(server: Server) -> None:
    clock = Clock()
    server.script += [
        (403, {"x-ratelimit-remaining": "4000", "x-ratelimit-reset": str(int(clock.now) + 3600)}, SECONDARY)
    ]
    http = paced(clock)
    assert session_with(http).get(server.url + "/repos/a").status_code == 200
    assert clock.slept == [60.0] and http.traffic.retried == 1


def test_a_secondary_limit_waits_longer_each_attempt(server: Server) -> None:
    clock = Clock()
    server.script += [(403, {"x-ratelimit-remaining": "4000"}, SECONDARY)] * 3
    assert session_with(paced(clock, max_wait=1000)).get(server.url + "/repos/a").status_code == 200
    assert clock.slept == [60.0, 120.0, 240.0]


def test_an_exhausted_primary_limit_waits_until_its_reset(server: Server) -> None:
    clock = Clock()
    server.script += [(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(clock.now) + 120)}, PRIMARY)]
    assert session_with(paced(clock)).get(server.url + "/repos/a").status_code == 200
    assert clock.slept == [120.0]


def test_a_wait_past_max_wait_is_not_slept_but_returned_with_its_wait(server: Server) -> None:
    clock = Clock()
    reset = int(clock.now) + 1800
    server.script += [(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}, PRIMARY)]
    answer = session_with(paced(clock)).get(server.url + "/repos/a")
    assert answer.status_code == 403 and clock.slept == [] and server.sent == ["GET /repos/a"]
    assert retry_after(answer, now=clock.now) == 1800.0
    # a secondary limit given up on goes on doubling for the caller: 60 s slept, 120 s told
    server.script += [(429, {}, SECONDARY)] * 2
    answer = session_with(paced(clock, max_wait=100)).post(server.url + "/repos/a/pulls", json={})
    assert answer.status_code == 429 and clock.slept == [60.0] and retry_after(answer, now=clock.now) == 120.0


def test_a_post_answered_5xx_is_sent_once(server: Server) -> None:
    clock = Clock()
    server.script += [(502, {}, "Bad Gateway")]
    http = paced(clock)
    answer = session_with(http).post(server.url + "/repos/a/pulls", json={"title": "Bump"})
    assert answer.status_code == 502 and server.sent == ["POST /repos/a/pulls"] and http.traffic.retried == 0
    assert retry_after(answer, now=clock.now) is None


@pytest.mark.parametrize("method", ["GET", "PATCH", "PUT", "DELETE"])
def test_idempotent_requests_are_retried_on_5xx(server: Server, method: str) -> None:
    clock = Clock()
    server.script += [(502, {}, "Bad Gateway"), (503, {}, "Unavailable")]
    answer = session_with(paced(clock, backoff=0.5)).request(method, server.url + "/repos/a/pulls/1", json={})
    assert answer.ok and server.sent == [f"{method} /repos/a/pulls/1"] * 3
    # a write's attempts are writes GitHub counts: the second waits out the rest of its second
    assert clock.slept == ([0.5, 1.0] if method == "GET" else [0.5, 0.5, 1.0])


def test_a_rate_limited_post_is_retried(server: Server) -> None:
    clock = Clock()
    server.script += [(403, {"Retry-After": "30"}, SECONDARY)]
    answer = session_with(paced(clock)).post(server.url + "/repos/a/pulls", json={})
    assert answer.status_code == 201 and server.sent == ["POST /repos/a/pulls"] * 2 and clock.slept == [30.0]


def test_a_403_that_is_no_rate_limit_is_final(server: Server) -> None:
    clock = Clock()
    server.script += [(403, {"x-ratelimit-remaining": "4000"}, '{"message": "Resource not accessible by integration"}')]
    answer = session_with(paced(clock)).post(server.url + "/repos/a/pulls", json={})
    assert answer.status_code == 403 and len(server.sent) == 1 and retry_after(answer, now=clock.now) is None


def test_writes_are_paced_within_a_minute_and_an_hour(server: Server) -> None:
    clock = Clock()
    session = session_with(paced(clock, max_wait=float("inf")))  # 70 a minute, 500 an hour; any wait slept
    times = []  # when each was sent: the clock moves only when the adapter sleeps
    for number in range(501):
        session.patch(server.url + f"/repos/a/issues/{number}", json={})
        times.append(clock.now)
    assert times[499] - times[0] < 600 and times[500] - times[0] >= 3600  # the 501st waited for the hour
    assert all(times[i + 70] - times[i] >= 60 for i in range(len(times) - 70))
    assert session.get(server.url + "/repos/a").ok and clock.now == times[-1]  # reads are never paced


def test_a_write_past_the_hourly_limit_is_not_slept_but_said_with_its_wait(server: Server) -> None:
    """A service's one worker must not sleep most of an hour in a burst: a wait longer than
    the adapter's max_wait is a transient error carrying that wait, and nothing is sent."""
    clock = Clock()
    session = session_with(paced(clock))  # max_wait 300 s
    for number in range(500):
        session.patch(server.url + f"/repos/a/issues/{number}", json={})
    started, sent = clock.now, len(server.sent)
    with pytest.raises(WritesPaced) as raised:
        session.patch(server.url + "/repos/a/issues/500", json={})
    assert len(server.sent) == sent and clock.now == started  # nothing sent, nothing slept
    assert raised.value.exit_code == 4 and "500 writes an hour" in raised.value.message
    assert raised.value.retry_after is not None and 3000 < raised.value.retry_after <= 3600
    clock.now += raised.value.retry_after
    assert session.patch(server.url + "/repos/a/issues/500", json={}).ok  # once the hour has passed


def test_the_memory_of_writes_is_bounded() -> None:
    clock = Clock()
    pacer = WritePacer(80, 500, sleep=clock.sleep, monotonic=clock.time)
    for _ in range(3000):
        pacer.wait()
        clock.now += 1.0
    assert len(pacer) <= 500


def test_limit_wait_reads_headers_in_any_case_and_knows_what_is_no_limit() -> None:
    now = 1_700_000_000.0
    assert limit_wait(429, {"retry-after": "5"}, "", 0, now=now) == 5.0
    assert limit_wait(429, {"Retry-After": "Tue, 14 Nov 2023 22:14:20 GMT"}, "", 0, now=now) == 60.0
    assert (
        limit_wait(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(now) + 9)}, "", 0, now=now) == 9.0
    )
    assert limit_wait(403, {"x-ratelimit-remaining": "12"}, SECONDARY, 2, now=now) == 240.0
    assert limit_wait(403, {"x-ratelimit-remaining": "12"}, "Must have admin rights", 0, now=now) is None
    assert limit_wait(404, {"Retry-After": "5"}, "", 0, now=now) is None
    assert limit_wait(500, {}, "", 3, now=now, backoff=2.0) == 16.0


def test_one_write_pacer_per_identity_across_repositories() -> None:
    """GitHub's content-creation limits (80 a minute, 500 an hour: docs "Rate limits for the
    REST API", secondary rate limits) count an App's or a user's writes across all its
    repositories: every client of one App (any installation) or one token paces with one
    pacer; another App, token or GitHub paces apart; with N replicas each takes 1/N."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from bot.adapters.github.client import AppCredentials, Client
    from bot.adapters.github.transport import share_writes

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    url = "http://127.0.0.1:9"
    try:
        share_writes(1)
        first, second = Client(url, token="t").http.pacer, Client(url, token="t").http.pacer
        assert first is second and first.windows == ((60.0, 70), (3600.0, 500))
        assert Client(url, token="u").http.pacer is not first
        assert Client("http://127.0.0.1:10", token="t").http.pacer is not first
        app = Client(url, app=AppCredentials(5, key, 7)).http.pacer
        assert Client(url, app=AppCredentials(5, key, 8)).http.pacer is app  # another installation, one App
        assert Client(url, app=AppCredentials(6, key, 7)).http.pacer is not app
        share_writes(3)  # a replica of three: its share
        assert Client(url, token="t").http.pacer.windows == ((60.0, 23), (3600.0, 166))
    finally:
        share_writes(1)


def test_a_github_that_does_not_answer_is_an_outside_failure_said_once() -> None:
    """A connection GitHub accepts and never answers (as a stalled load balancer does), and
    a port nobody listens on: each request ends in one TransientError naming the request,
    never a requests or github3 exception that the pass would take for a bug of its own."""
    from bot.adapters.github.transport import GitHubUnreachable

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepted by the kernel, never read nor answered
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nobody listens there now
    try:
        session = session_with(GitHubHTTP(sleep=lambda _seconds: None))
        port = silent.getsockname()[1]
        with pytest.raises(
            GitHubUnreachable, match=r"^GitHub did not answer POST /repos/o/r/git/trees \(no answer in time"
        ):
            session.post(f"http://127.0.0.1:{port}/repos/o/r/git/trees", json={}, timeout=0.3)
        with pytest.raises(GitHubUnreachable, match=r"GET /repos/o/r \(the connection failed"):
            session.get(f"http://127.0.0.1:{closed_port}/repos/o/r", timeout=2)
    finally:
        silent.close()


def test_github3_lets_the_outside_failure_through_as_it_is() -> None:
    """github3 wraps requests' own exceptions in a ConnectionError of its own, which is no
    GitHubError: ours passes through it, so the platform's handlers need none of github3's."""
    import github3

    from bot.adapters.github.transport import GitHubUnreachable
    from bot.core.errors import TransientError

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        session = github3.session.GitHubSession(default_read_timeout=0.3)
        session.mount("http://", GitHubHTTP(sleep=lambda _seconds: None))
        gh = github3.GitHubEnterprise(f"http://127.0.0.1:{silent.getsockname()[1]}/", session=session)
        with pytest.raises(TransientError) as raised:
            gh.repository("o", "r")
        assert isinstance(raised.value, GitHubUnreachable)
    finally:
        silent.close()


def test_the_client_waits_past_githubs_own_time_limit_for_an_answer() -> None:
    """GitHub ends a request it has worked on for 10 seconds and answers it with a timeout
    response ("Troubleshooting the REST API", Timeouts): the client's read timeout is longer,
    so that answer arrives and is handled as GitHub's, where github3's 10 s gave up on it."""
    from bot.adapters.github.client import Client

    connect, read = Client(None, token="t").session.timeout
    assert read > 10 + connect


def test_writes_go_one_second_apart_and_reads_are_not_held(server: Server) -> None:
    """GitHub's REST best practices: "wait at least one second between each" POST, PATCH,
    PUT or DELETE request. A write sent just after another waits out the rest of that
    second; a read waits for nothing."""
    clock = Clock()
    session = session_with(paced(clock))
    times = []
    for number in range(3):
        session.post(server.url + f"/repos/a/issues/{number}/comments", json={})
        times.append(clock.now)
        clock.now += 0.25  # the work between two writes counts toward their gap
    assert [b - a for a, b in zip(times, times[1:], strict=False)] == [1.0, 1.0]
    assert clock.slept == [0.75, 0.75]
    assert session.get(server.url + "/repos/a").ok and clock.slept == [0.75, 0.75]
    clock.now += 5.0  # a write long after the last is sent at once
    session.delete(server.url + "/repos/a/git/refs/heads/x")
    assert clock.slept == [0.75, 0.75]


def test_replicas_space_their_writes_by_their_number(pacing_clock: FastForward) -> None:
    """N replicas writing as one identity each keep 1/N of the limits and write N seconds
    apart: about one write a second together, with no counter shared between them."""
    from bot.adapters.github.transport import identity_pacer, share_writes

    try:
        share_writes(3)
        pacer = identity_pacer("app:5")
        pacer.wait()
        pacer.wait()
        assert pacer.gap == 3.0 and pacing_clock.slept and 2.9 < pacing_clock.slept[-1] <= 3.0
    finally:
        share_writes(1)


def test_the_gap_between_writes_is_the_settings() -> None:
    """WHEELPIN_GITHUB_WRITE_GAP reaches every pacer of the process (GitHub Enterprise Server
    may run without secondary limits; a cautious operator may leave more)."""
    from bot.adapters.github.client import Client
    from bot.adapters.github.forge import GitHubForge
    from bot.adapters.github.transport import WRITE_GAP, space_writes
    from bot.app.forges import github_access
    from bot.app.settings import Settings

    url = "http://127.0.0.1:9"
    try:
        assert Client(url, token="t").http.pacer.gap == WRITE_GAP == 1.0
        settings = Settings.from_environment({"WHEELPIN_GITHUB_TOKEN": "t", "WHEELPIN_GITHUB_WRITE_GAP": "2.5"})
        GitHubForge(github_access(settings))
        assert Client(url, token="t").http.pacer.gap == 2.5
    finally:
        space_writes(WRITE_GAP)


def test_a_gap_longer_than_a_write_may_wait_is_refused_at_start_and_never_said_as_the_hourly_limit() -> None:
    """WHEELPIN_GITHUB_WRITE_GAP × WHEELPIN_REPLICAS is the gap each replica leaves between its
    writes: one longer than a write may wait (300 s) would refuse every write with "GitHub's
    limit of N writes an hour is reached", which is false. The settings are refused at start
    in one sentence; a pacer made with such a gap anyway says the gap."""
    from bot.app.settings import Settings
    from bot.core.errors import ConfigError

    too_long = Settings.from_environment(
        {"WHEELPIN_GITHUB_WRITE_GAP": "60", "WHEELPIN_REPLICAS": "6", "WHEELPIN_DATABASE_URL": "postgresql://x/y"}
    )
    with pytest.raises(ConfigError) as refused:
        too_long.check_write_pacing()
    assert refused.value.message == (
        "WHEELPIN_GITHUB_WRITE_GAP × WHEELPIN_REPLICAS is 60 s × 6 = 360 s between one replica's writes, "
        "longer than the 300 s a write may wait: lower one of them"
    )
    Settings.from_environment({"WHEELPIN_GITHUB_WRITE_GAP": "60", "WHEELPIN_REPLICAS": "5"}).check_write_pacing()
    Settings.from_environment({"WHEELPIN_GITHUB_WRITE_GAP": "60", "WHEELPIN_REPLICAS": "6"}).check_write_pacing()

    clock = Clock()
    pacer = WritePacer(70, 500, gap=360.0, sleep=clock.sleep, monotonic=clock.time)
    pacer.wait(300.0)
    with pytest.raises(WritesPaced) as paced_:
        pacer.wait(300.0)
    assert "writes an hour" not in paced_.value.message
    assert paced_.value.message == "writes of one App or token are spaced 360 s apart; writing again in 6 min"


def test_serve_refuses_a_gap_longer_than_a_write_may_wait(tmp_path: Path) -> None:
    from bot.app.settings import Settings
    from bot.commands.serve_cmd import serve_command
    from bot.core.errors import ConfigError

    settings = Settings.from_environment(
        {
            "WHEELPIN_CACHE_DIR": str(tmp_path),
            "WHEELPIN_GITHUB_WRITE_GAP": "60",
            "WHEELPIN_REPLICAS": "6",
            "WHEELPIN_DATABASE_URL": "postgresql://127.0.0.1:9/none",
        }
    )
    with pytest.raises(ConfigError, match="between one replica's writes"):
        serve_command(host="127.0.0.1", port=0, settings=settings)

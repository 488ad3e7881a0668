"""The webhook door stays open: idle and slow clients on a
real waitress server on loopback cannot make `/healthz` or `/webhook` unreachable, a
chunked delivery may carry GitHub's full 25 MiB, and an `installation` delivery to a
service without GitHub credentials is ignored, not a crashing, retried job."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from structlog.testing import capture_logs

from bot.adapters.github.forge import GitHubForge
from bot.adapters.github.sansio import MAX_BODY
from bot.app import webapp
from bot.app.jobs import Job, JobKind
from bot.app.service import Service
from bot.app.settings import Settings
from bot.app.webapp import HTTPServer, make_app
from tests.app.bots import wait_until
from tests.fixtures.webhooks import deliver, example, sign

SECRET = b"it's a secret to everybody"
MiB = 1 << 20


def serving(tmp_path: Path, *, start_worker: bool = False, **settings: Any) -> Iterator[tuple[Service, HTTPServer]]:
    service = Service(Settings(cache_dir=tmp_path / "cache", **settings), forge=GitHubForge(None, secret=SECRET))
    server = HTTPServer(service, host="127.0.0.1", port=0)
    if start_worker:
        service.start()
    server.start()
    try:
        yield service, server
    finally:
        server.stop()
        service.stop(grace=5)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Service, HTTPServer]]:
    yield from serving(tmp_path)


def push() -> dict[str, Any]:
    payload = example("push")
    payload["ref"] = "refs/heads/main"
    return payload


def connect(server: HTTPServer) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=5)


def answered_quickly(server: HTTPServer, within: float = 5.0) -> None:
    """/healthz and a signed /webhook delivery, each on a fresh connection, answer in time."""
    with requests.Session() as session:
        started = time.monotonic()
        health = session.get(server.url + "/healthz", timeout=within)
        assert health.status_code == 200 and health.json() == {"status": "alive"}
        delivered = deliver(session, server.url, SECRET, "push", push())
        assert delivered.status_code == 202 and delivered.json()["message"] == "queued"
        assert time.monotonic() - started < within


def test_idle_and_slowloris_connections_cannot_close_the_door(served: tuple[Service, HTTPServer]) -> None:
    _service, server = served
    idle = [connect(server) for _ in range(150)]  # waitress's default connection_limit is 100
    slow = [connect(server) for _ in range(20)]
    stop = threading.Event()

    def trickle() -> None:  # slowloris: a header that never ends, one byte a second
        for sock in slow:
            sock.sendall(b"POST /webhook HTTP/1.1\r\nHost: wheelpin\r\nX-Slow: ")
        while not stop.wait(1.0):
            for sock in slow:
                try:
                    sock.sendall(b"a")
                except OSError:
                    pass

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        time.sleep(1.5)  # the server has taken them all in (or stopped accepting)
        answered_quickly(server)
        time.sleep(1.0)
        answered_quickly(server)  # and again, while they all still hang on
    finally:
        stop.set()
        trickler.join(5)
        for sock in idle + slow:
            sock.close()


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_idle_connections_are_closed_and_a_request_that_never_ends_is_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webapp, "CLEANUP_INTERVAL", 1, raising=False)
    monkeypatch.setattr(webapp, "REQUEST_DEADLINE", 3, raising=False)
    for _service, server in serving(tmp_path, http_idle_timeout=2):
        idle, slow = connect(server), connect(server)
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: wheelpin\r\nX-Slow: ")
        stop = threading.Event()

        def trickle(stop: threading.Event = stop, slow: socket.socket = slow) -> None:
            while not stop.wait(0.5):
                try:
                    slow.sendall(b"a")  # never idle: only the deadline can end it
                except OSError:
                    return

        trickler = threading.Thread(target=trickle, daemon=True)
        trickler.start()
        try:
            started = time.monotonic()
            assert closed_by_server(idle, within=8), "an idle connection was kept past the idle timeout"
            assert closed_by_server(slow, within=10), "a request still arriving was never cut"
            assert 3 <= time.monotonic() - started < 15
            answered_quickly(server)
        finally:
            stop.set()
            trickler.join(5)
            idle.close()
            slow.close()


def post_chunked(server: HTTPServer, body: bytes, *, chunk: int, event: str = "star") -> tuple[int, bytes]:
    """POST `body` signed, with Transfer-Encoding: chunked in `chunk`-byte chunks (no
    Content-Length), in large writes; the status and body of the answer."""
    view = memoryview(body)
    wire = (
        b"".join(b"%x\r\n%s\r\n" % (len(view[i : i + chunk]), view[i : i + chunk]) for i in range(0, len(body), chunk))
        + b"0\r\n\r\n"
    )
    head = (
        f"POST /webhook HTTP/1.1\r\nHost: wheelpin\r\nTransfer-Encoding: chunked\r\n"
        f"Content-Type: application/json\r\nX-GitHub-Event: {event}\r\nX-GitHub-Delivery: chunked-1\r\n"
        f"X-Hub-Signature-256: {sign(SECRET, body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((server.host, server.port), timeout=60) as sock:
        sock.sendall(head)
        sock.sendall(wire)
        answer = bytearray()
        while part := sock.recv(65536):
            answer += part
    status_line, _, rest = bytes(answer).partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def payload_of(size: int) -> bytes:
    body = b'{"a": "' + b"x" * (size - 9) + b'"}'
    assert len(body) == size
    return body


def test_a_chunked_delivery_may_carry_the_full_25_mib(served: tuple[Service, HTTPServer]) -> None:
    service, server = served
    # GitHub's cap is on the payload; chunk framing (size lines, CRLFs) is not payload
    status, answer = post_chunked(server, payload_of(MAX_BODY), chunk=1024)
    assert status == 200 and json.loads(answer) == {"message": "ignored"}
    status, answer = post_chunked(server, payload_of(24 * MiB), chunk=64)  # 9 % of framing
    assert status == 200 and json.loads(answer) == {"message": "ignored"}
    # one byte over the cap is refused, framing or not
    for chunk in (64, MiB):
        status, answer = post_chunked(server, payload_of(MAX_BODY + 1), chunk=chunk)
        assert status == 413, chunk
    assert service.queue.puts == 0
    answered_quickly(server)


class EndlessInput:
    """A wsgi.input that never ends, recording each read's size."""

    def __init__(self) -> None:
        self.reads: list[int] = []

    def read(self, size: int = -1) -> bytes:
        assert size >= 0, "an unbounded read"
        self.reads.append(size)
        return b"x" * size


def call(app: Callable[..., Any], environ: dict[str, Any]) -> tuple[str, bytes]:
    statuses: list[str] = []
    body = b"".join(app(environ, lambda status, headers: statuses.append(status)))
    return statuses[0], body


def test_the_body_is_read_in_bounded_chunks_and_never_past_the_cap(tmp_path: Path) -> None:
    app = make_app(Service(Settings(cache_dir=tmp_path), forge=GitHubForge(None, secret=SECRET)))
    stream = EndlessInput()  # no CONTENT_LENGTH: a server that passes a chunked body through
    environ = {
        "PATH_INFO": "/webhook",
        "REQUEST_METHOD": "POST",
        "wsgi.input": stream,
        "HTTP_X_GITHUB_EVENT": "push",
        "HTTP_X_HUB_SIGNATURE_256": "sha256=" + "0" * 64,
    }
    status, _ = call(app, environ)
    assert status.startswith("413")
    assert sum(stream.reads) == MAX_BODY + 1  # stopped at the first byte past the cap
    assert max(stream.reads) <= MiB  # never one read (one buffer) of the whole cap
    stream = EndlessInput()  # a length: never read past it
    status, _ = call(app, {**environ, "wsgi.input": stream, "CONTENT_LENGTH": str(3 * MiB + 5)})
    assert status.startswith("401") and sum(stream.reads) == 3 * MiB + 5 and max(stream.reads) <= MiB


def test_an_installation_delivery_without_credentials_is_ignored_once_not_a_crash(tmp_path: Path) -> None:
    with capture_logs() as logs:
        for service, server in serving(tmp_path, start_worker=True, queue_backoff=0.05):
            with requests.Session() as session:
                for action in ("created", "new_permissions_accepted", "deleted"):
                    runs = service.queue.stats().runs
                    answer = deliver(session, server.url, SECRET, "installation", example("installation", action))
                    assert answer.status_code == 202, answer.text
                    assert answer.json() == {"message": "queued", "jobs": ["installations"]}
                    wait_until(
                        lambda service=service, runs=runs: (
                            service.queue.stats().runs > runs and service.queue.stats().running == 0
                        ),
                        10,
                        "the installations job to run",
                    )
                time.sleep(0.3)  # a failed job would be retried after its 0.05 s backoff
                stats = service.queue.stats()
                assert stats.waiting == stats.backing_off == 0 and stats.runs == 3
                assert service.queue.failures(Job(JobKind.INSTALLATIONS)) == 0
                assert session.get(server.url + "/healthz").status_code == 200
    assert not [entry for entry in logs if entry["event"] == "job.crashed"], logs
    said = [entry for entry in logs if "no GitHub credentials: installation events are ignored" in str(entry)]
    assert len(said) == 1 and said[0]["log_level"] == "warning", said


def test_the_connections_fit_the_open_files_limit(tmp_path: Path) -> None:
    """Too many connections for the open-files limit would be worse than a full door: the
    soft limit is raised as far as the hard one allows, and past that the connections are
    lowered (and said), in a process of their own."""
    import resource
    import subprocess
    import sys

    script = (
        "from bot.app.webapp import fit_connections; import resource; "
        "print(fit_connections(1000), *resource.getrlimit(resource.RLIMIT_NOFILE))"
    )

    def run(soft: int, hard: int) -> tuple[int, ...]:
        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

        done = subprocess.run(
            [sys.executable, "-c", script],
            preexec_fn=limit,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert done.returncode == 0, done.stderr
        *logged, numbers = done.stdout.splitlines()
        return (
            *(int(word) for word in numbers.split()),
            int(any("http.connections_lowered" in line for line in logged)),
        )

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard >= 4096:
        fits, soft_now, _, said = run(512, 4096)
        assert fits == 1000 and soft_now >= 2 * 1000 and not said  # raised (by us, or a Go library's runtime)
    assert run(512, 512) == ((512 - 256) // 2, 512, 512, True)  # lowered, and said


def test_one_address_cannot_take_every_connection(tmp_path: Path) -> None:
    """One client address holds at most WHEELPIN_HTTP_CONNECTIONS_PER_ADDRESS: its next
    connection is closed as soon as it is accepted, and another address is still served."""
    for _service, server in serving(tmp_path, http_connections=40, http_connections_per_address=5):
        held = [connect(server) for _ in range(5)]
        for sock in held:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: wheelpin\r\n")  # never finished
        time.sleep(0.5)
        extra = connect(server)
        assert closed_by_server(extra, 5)
        assert not any(closed_by_server(sock, 0.2) for sock in held)
        other = socket.create_connection((server.host, server.port), timeout=5, source_address=("127.0.0.2", 0))
        other.sendall(b"GET /healthz HTTP/1.1\r\nHost: wheelpin\r\nConnection: close\r\n\r\n")
        assert other.recv(64).startswith(b"HTTP/1.1 200")
        for sock in held + [extra, other]:
            sock.close()


def test_the_health_port_answers_while_the_door_is_full(tmp_path: Path) -> None:
    """With WHEELPIN_HEALTH_PORT, /healthz /readyz /metrics have a listener of their own:
    answered while every slot of the main door is held; nothing else is served there."""
    for service, server in serving(tmp_path, http_connections=10, http_connections_per_address=100):
        health = HTTPServer(service, host="127.0.0.1", port=0, health_only=True)
        health.start()
        held = [connect(server) for _ in range(30)]
        try:
            time.sleep(1.0)
            for path in ("/healthz", "/metrics"):
                assert requests.get(health.url + path, timeout=2).status_code == 200
            assert requests.post(health.url + "/webhook", data=b"{}", timeout=2).status_code == 405
            assert requests.get(health.url + "/webhook", timeout=2).status_code == 404
        finally:
            for sock in held:
                sock.close()
            health.stop()

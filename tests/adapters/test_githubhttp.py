"""The GitHub adapter's ETag cache on a loopback server: what it keeps, for whom, and how much."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from bot.adapters.githubhttp import GitHubHTTP

ARTIFACT = 8 << 20


class Server:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []  # path, If-None-Match
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
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
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


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

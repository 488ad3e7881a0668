"""Benchmark: the memory the GitHub adapter holds while a long-running bot works —
build artifacts streamed through it, and many distinct API answers cached by ETag.

Run from the project root:  python bench/github_memory.py [--artifacts 3] [--artifact-mb 64] [--urls 5000]
A loopback server answers like GitHub (an ETag on everything). Prints the process's
peak RSS and what the ETag cache holds after each phase: streamed downloads must not
stay in memory, and the cache must stay within its byte budget however many URLs it saw.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bot.adapters.github.transport import GitHubHTTP  # noqa: E402


def serve(artifact_bytes: int) -> ThreadingHTTPServer:
    chunk = b"z" * (1 << 20)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (delayed ACK)

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers and body: no delayed ACK

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("ETag", f'"{self.path}"')
            if self.path.startswith("/artifact"):
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(artifact_bytes))
                self.end_headers()
                for _ in range(artifact_bytes // len(chunk)):
                    self.wfile.write(chunk)
                return
            body = json.dumps({"url": self.path, "pad": "x" * 4000}).encode()
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--artifacts", type=int, default=3)
    parser.add_argument("--artifact-mb", type=int, default=64)
    parser.add_argument("--urls", type=int, default=5000)
    args = parser.parse_args()
    server = serve(args.artifact_mb << 20)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    http = GitHubHTTP()
    session = requests.Session()
    session.mount("http://", http)
    session.headers["Authorization"] = "token bench"
    print(f"start: peak RSS {rss_mb():.0f} MB")

    started = time.perf_counter()
    for number in range(args.artifacts):
        with session.get(f"{url}/artifact-{number}.zip", stream=True) as answer:
            received = sum(len(part) for part in answer.iter_content(1 << 20))
        assert received == args.artifact_mb << 20
    took = time.perf_counter() - started
    print(
        f"{args.artifacts} artifacts of {args.artifact_mb} MiB streamed in {took:.1f} s: "
        f"peak RSS {rss_mb():.0f} MB, cache {len(http.cache)} entries / {http.cache.size / 1e6:.1f} MB"
    )

    started = time.perf_counter()
    for number in range(args.urls):
        session.get(f"{url}/repos/rocm/atom/git/ref/heads/branch-{number}").json()
    took = time.perf_counter() - started
    print(
        f"{args.urls} distinct JSON answers in {took:.1f} s ({args.urls / took:.0f}/s): peak RSS {rss_mb():.0f} MB, "
        f"cache {len(http.cache)} entries / {http.cache.size / 1e6:.1f} MB (budget {http.cache.budget / 1e6:.1f} MB)"
    )
    server.shutdown()


if __name__ == "__main__":
    main()

"""Benchmark: how fast `wheelpin serve` takes webhook deliveries — signed pushes POSTed
over loopback by several clients at once — and what they coalesce into.

Run from the project root:  python bench/webhook_intake.py [--deliveries 2000] [--clients 8] [--repositories 10]
(needs `npm install --prefix tests` for the example payloads). The worker is not started,
so this measures intake alone: signature check, parse, routing, queueing, answer.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bot.adapters.github.door import GitHubDoor  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.app.service import Service  # noqa: E402
from bot.app.settings import Settings  # noqa: E402
from bot.app.webapp import HTTPServer  # noqa: E402
from tests.fixtures.webhooks import deliver, example  # noqa: E402

SECRET = b"bench-secret"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repositories", type=int, default=10)
    args = parser.parse_args()
    configure_logging(level="error")
    with tempfile.TemporaryDirectory() as folder:
        service = Service(Settings(cache_dir=Path(folder)), access=None, door=GitHubDoor(SECRET))
        server = HTTPServer(service, port=0)
        server.start()
        payloads = []
        for index in range(args.repositories):
            push = example("push")
            push.update(ref="refs/heads/main", repository={**push["repository"], "full_name": f"rocm/repo{index}"})
            payloads.append(push)
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        lock = threading.Lock()

        def client(count: int, offset: int) -> None:
            session = requests.Session()
            for number in range(count):
                started = time.perf_counter()
                answer = deliver(session, server.url, SECRET, "push", payloads[(offset + number) % len(payloads)])
                with lock:
                    latencies.append(time.perf_counter() - started)
                    statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1

        share = args.deliveries // args.clients
        threads = [threading.Thread(target=client, args=(share, i)) for i in range(args.clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        server.stop()
        latencies.sort()
        stats = service.queue.stats()
        print(
            f"{len(latencies)} deliveries from {args.clients} clients in {elapsed:.2f} s: "
            f"{len(latencies) / elapsed:.0f} a second; answers {statuses}"
        )
        print(
            f"latency p50 {statistics.median(latencies) * 1000:.1f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
        )
        print(f"queued {stats.puts} times → {stats.waiting} jobs waiting ({args.repositories} repositories)")
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (server and clients)")


if __name__ == "__main__":
    main()

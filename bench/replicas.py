"""Benchmark: `wheelpin serve` on PostgreSQL with 1, 2 and 3 replicas, against one
process with its in-process queue: deliveries taken a second, end-to-end passes a minute,
queue latency (from a job's deferral to a worker taking it: p50/p99 under load, and
p50/p95/max of `--idle` deliveries sent one at a time on an idle queue) and GitHub requests
per pass (from the GitHub emulator's own log).

Run from the project root:  python bench/replicas.py [--replicas 0,1,2,3] [--repositories 20]
    [--components 5] [--deliveries 1000] [--workers 2] [--latency 100] [--idle 30]
(0 is the embedded mode: no database; its queue latency is not logged. Needs Debian's
postgresql, as .ci/run installs it, and `npm install --prefix tests` for the emulator's schemas.) Each replica is a
`wheelpin serve` subprocess with its own cache and WHEELPIN_WORKERS workers; the
repositories are installations of one GitHub App on the emulator, each with the same
downstream of `--components` components pinned to the upstream head, so a pass is a no-op
(read the upstream, the base, the pins; nothing to write), as most passes are. The
emulator waits `--latency` ms before each answer, as GitHub over the internet does: a pass
is then bound by waiting on GitHub, not by this machine's cores (with --latency 0 on a
small machine, the replicas, PostgreSQL, the emulator and the clients share its cores).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import psycopg  # noqa: E402
import requests  # noqa: E402
from reconcile_passes import commit, setup  # noqa: E402

from bot.commands.demo import MAINTAINER  # noqa: E402
from tests.app.bots import APP_ID, SECRET, app_key, wait_until  # noqa: E402
from tests.app.test_serve_command import Process  # noqa: E402
from tests.fixtures.github.emulator import GitHubEmulator  # noqa: E402
from tests.fixtures.postgres import Postgres  # noqa: E402
from tests.fixtures.webhooks import deliver, example  # noqa: E402


def mark(processes: list[Process]) -> list[int]:
    """Where each process's log stands now: `events(..., since=mark(...))` is what came after."""
    return [len(process.lines) for process in processes]


def events(processes: list[Process], name: str, since: list[int] | None = None) -> list[dict[str, Any]]:
    """The records of event `name` in the processes' logs (after `since`, each process's own
    offset: the logs are read one process after the other, so a count over all of them is
    no place in time)."""
    found = []
    for index, process in enumerate(processes):
        for line in list(process.lines)[since[index] if since else 0 :]:
            if line.startswith("{") and f'"{name}"' in line:
                record = json.loads(line)
                if record.get("event") == name:
                    found.append(record)
    return found


def ready(address: str) -> bool:
    """/readyz answers 200 (one that does not answer within 5 s, on a busy machine, is not ready yet)."""
    try:
        return requests.get(address + "/readyz", timeout=5).status_code == 200
    except requests.RequestException:
        return False


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)] if ordered else float("nan")


def busy(url: str | None, processes: list[Process]) -> bool:
    if url is None:  # embedded: its queue's depth, from /metrics
        return bool(events(processes, "job.started")) and len(events(processes, "job.started")) != len(
            events(processes, "job.finished")
        )
    with psycopg.connect(url, autocommit=True) as connection:
        (count,) = connection.execute(
            "select count(*) from procrastinate_jobs where task_name = 'wheelpin.job' and status in ('todo', 'doing')"
        ).fetchone() or (0,)
    return bool(count)


def settle(url: str | None, processes: list[Process], timeout: float = 600) -> None:
    """Until no job waits or runs, twice in a row a quarter second apart."""

    def quiet() -> bool:
        if busy(url, processes):
            return False
        time.sleep(0.25)
        return not busy(url, processes)

    wait_until(quiet, timeout, "the queue to drain")


def run(count: int, args: argparse.Namespace, postgres: Postgres, scratch: Path) -> None:
    root = scratch / f"run{count}"
    root.mkdir()
    upstream, downstream, _names, _head = setup(root, args.components)
    config = (downstream / "wheelpin.toml").read_text()
    config = config.replace('"../upstream"', f'"file://{upstream}"').replace(
        '"oci:../images"', f'"oci:{root / "images"}"'
    )
    (downstream / "wheelpin.toml").write_text(config)
    commit(downstream, "absolute paths", MAINTAINER)
    private, public = app_key()
    emulator = GitHubEmulator(root / "github", tokens=set(), app_id=APP_ID, app_public_key=public)
    if args.latency:  # GitHub answers in 100-300 ms over the internet; the emulator on loopback in 1-5
        emulator.before = lambda method, path, token: time.sleep(args.latency / 1000)
    for index in range(args.repositories):
        emulator.create_repo(f"org{index % 4}", f"images{index}", downstream)  # four installations
    (root / "app.pem").write_bytes(private)
    (root / "secret").write_bytes(SECRET)
    url = postgres.database(f"bench_{count}_{int(time.time())}") if count else None
    common = {
        "WHEELPIN_GITHUB_API_URL": emulator.url,
        "WHEELPIN_GITHUB_APP_ID": str(APP_ID),
        "WHEELPIN_GITHUB_PRIVATE_KEY_FILE": str(root / "app.pem"),
        "WHEELPIN_WEBHOOK_SECRET_FILE": str(root / "secret"),
        "WHEELPIN_LOG_LEVEL": "debug",
        "WHEELPIN_LOG_FORMAT": "json",
        "WHEELPIN_SCHEDULE_JITTER": "0",
        "WHEELPIN_TICK_SECONDS": "1",
        "WHEELPIN_WORKERS": str(args.workers),
        "WHEELPIN_ALLOW_HOST_PATHS": "1",
    }  # the upstream and the images are folders on this host
    if url:
        common["WHEELPIN_DATABASE_URL"] = url
    processes = [
        Process({**common, "WHEELPIN_CACHE_DIR": str(root / f"cache{i}")}, "--port", "0") for i in range(max(count, 1))
    ]
    try:
        urls = [process.url() for process in processes]
        for address in urls:
            wait_until(lambda address=address: ready(address), 120, "/readyz")
        total = args.repositories * args.components
        wait_until(lambda: len(events(processes, "component.pass")) >= total, 600, "the first passes")
        settle(url, processes)

        # deliveries a second: pushes to the repositories' default branches, over the replicas
        payloads = []
        for index in range(args.repositories):
            push = example("push")
            push.update(
                ref="refs/heads/main", repository={**push["repository"], "full_name": f"org{index % 4}/images{index}"}
            )
            payloads.append(push)
        answers: list[int] = []
        guard = threading.Lock()

        def client(numbers: range) -> None:
            session = requests.Session()
            for number in numbers:
                answer = deliver(session, urls[number % len(urls)], SECRET, "push", payloads[number % len(payloads)])
                with guard:
                    answers.append(answer.status_code)

        clients = [threading.Thread(target=client, args=(range(i, args.deliveries, 8),)) for i in range(8)]
        started = time.perf_counter()
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        intake = time.perf_counter() - started
        assert set(answers) == {202}, set(answers)
        settle(url, processes)

        # end-to-end passes a minute, and the GitHub requests each costs: one push to each
        # repository's default branch (its config read again, then a pass of each component),
        # sent to the replicas in turn
        before_passes = len(events(processes, "component.pass"))
        before_requests = len(emulator.recorded)
        before_taken = mark(processes)
        started = time.perf_counter()
        session = requests.Session()
        for index in range(args.repositories):
            assert deliver(session, urls[index % len(urls)], SECRET, "push", payloads[index]).status_code == 202
        wait_until(lambda: len(events(processes, "component.pass")) - before_passes >= total, 600, "the passes")
        settle(url, processes)
        seconds = time.perf_counter() - started
        passes = len(events(processes, "component.pass")) - before_passes
        requests_made = len(emulator.recorded) - before_requests
        waits = [r["waited"] for r in events(processes, "job.taken", before_taken) if r.get("waited") is not None]
        # the queue's own latency: one delivery at a time on an idle queue, deferral to a worker taking it
        before_idle = mark(processes)
        for index in range(args.idle):
            assert (
                deliver(session, urls[index % len(urls)], SECRET, "push", payloads[index % len(payloads)]).status_code
                == 202
            )
            settle(url, processes)
        idle = [
            r["waited"]
            for r in events(processes, "job.taken", before_idle)
            if r.get("waited") is not None and r.get("job") == "repository"
        ]
        label = f"{count} replica{'s' if count > 1 else ''} on PostgreSQL" if count else "embedded, one process"
        latency = (
            f"queue latency under that load p50 {percentile(waits, 0.5) * 1000:6.0f} ms, "
            f"p99 {percentile(waits, 0.99) * 1000:6.0f} ms, idle p50 {percentile(idle, 0.5) * 1000:5.1f} ms, "
            f"p95 {percentile(idle, 0.95) * 1000:5.1f} ms, max {max(idle) * 1000:5.1f} ms"
            if waits and idle
            else "queue latency: not logged in this mode"
        )
        print(
            f"{label:28s} ({args.workers} workers each): {args.deliveries / intake:7.0f} deliveries/s; "
            f"{passes} passes in {seconds:5.1f} s = {passes / seconds * 60:6.0f} passes/min; {latency}; "
            f"{requests_made / max(passes, 1):5.2f} GitHub requests a pass",
            flush=True,
        )
        if args.show_requests:  # which requests a pass made, by route
            made = collections.Counter(
                f"{r.method} {r.template} {r.status}" for r in emulator.recorded[before_requests:]
            )
            for route, number in made.most_common():
                print(f"    {number:5d}  {route}")
    finally:
        for process in processes:
            process.stop()
        emulator.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", default="0,1,2,3")
    parser.add_argument("--repositories", type=int, default=20)
    parser.add_argument("--components", type=int, default=5)
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--idle", type=int, default=30, help="deliveries sent one at a time on an idle queue")
    parser.add_argument("--show-requests", action="store_true", help="the passes' GitHub requests by route")
    parser.add_argument("--latency", type=float, default=100.0, help="ms the emulator waits before each answer")
    args = parser.parse_args()
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {args.repositories} repositories × "
        f"{args.components} components; {args.deliveries} deliveries by 8 clients; GitHub answers after "
        f"{args.latency:.0f} ms"
    )
    postgres = Postgres()
    try:
        with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
            for count in (int(part) for part in args.replicas.split(",")):
                run(count, args, postgres, Path(scratch))
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()

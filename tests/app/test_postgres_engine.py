"""The facts about procrastinate on PostgreSQL that wheelpin's multi-replica mode builds on,
checked on the real engine (Debian's PostgreSQL, tests/fixtures/postgres.py),
as the library documents them (procrastinate.readthedocs.io, "Ensure tasks run
sequentially" and "Queueing locks"):

- a job deferred with a `queueing_lock` while another job with that lock is still waiting
  is refused (`AlreadyEnqueued`): a burst for one key coalesces into one waiting job; one
  deferred while the first runs is accepted, so what the burst changed is seen afterwards;
- jobs that share a `lock` never run at the same time, whatever the worker's concurrency.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import procrastinate
from procrastinate.exceptions import AlreadyEnqueued

from tests.fixtures.postgres import Postgres


def test_queueing_locks_coalesce_and_locks_serialise(postgres: Postgres) -> None:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=postgres.database("engine")))
    spans: dict[str, list[tuple[float, float]]] = {}
    guard = threading.Lock()

    @app.task(name="pass_of", queue="wheelpin")
    def pass_of(key: str) -> None:
        started = time.monotonic()
        time.sleep(0.2)
        with guard:
            spans.setdefault(key.split(":")[0], []).append((started, time.monotonic()))

    with app.open():
        app.schema_manager.apply_schema()
        deferred, refused = 0, 0
        for _ in range(50):  # a burst of deliveries for one component
            try:
                pass_of.configure(queueing_lock="rocm/atom:lmcache", lock="rocm/atom").defer(key="rocm/atom:lmcache")
                deferred += 1
            except AlreadyEnqueued:
                refused += 1
        assert (deferred, refused) == (1, 49)
        for key in ("rocm/atom:mooncake", "rocm/vllm:lmcache", "rocm/sglang:lmcache"):
            pass_of.configure(queueing_lock=key, lock=key.split(":")[0]).defer(key=key)

    async def work() -> None:  # a worker, stopped once the four passes ran (a locked job is not "no job")
        async with app.open_async():
            worker = asyncio.create_task(
                app.run_worker_async(queues=["wheelpin"], concurrency=4, install_signal_handlers=False)
            )
            deadline = time.monotonic() + 60
            while sum(map(len, spans.values())) < 4 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    asyncio.run(work())
    assert sorted(spans) == ["rocm/atom", "rocm/sglang", "rocm/vllm"] and len(spans["rocm/atom"]) == 2, spans
    (first, second) = sorted(spans["rocm/atom"])
    assert second[0] >= first[1]  # one repository's jobs one after the other
    others = [span for repository in ("rocm/vllm", "rocm/sglang") for span in spans[repository]]
    assert any(span[0] < first[1] and span[1] > first[0] for span in others)  # other repositories meanwhile

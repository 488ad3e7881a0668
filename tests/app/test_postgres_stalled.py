"""A stalled job whose same job waits already, on the real engine (Debian's PostgreSQL,
tests/fixtures/postgres.py) and the service's own queue (bot/app/pgqueue.py), in process.

A replica took a job and died; meanwhile a delivery for the same key was deferred (a key
that runs takes one more: its queueing lock holds only while a job waits). procrastinate's
"retry stalled jobs" recipe would hand the dead one back, but PostgreSQL refuses a second
waiting job of one queueing lock (UniqueViolation on procrastinate_jobs_queueing_lock_idx_v1,
procrastinate's schema.sql). The tick ends the stalled one instead, the waiting one runs,
and the refusal is not taken for a lost connection (which would start the worker again,
and again: the queue would never drain).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
from structlog.testing import capture_logs

from bot.app.jobs import Job, JobKind
from bot.app.pgqueue import JOB_TASK, QUEUE, PostgresQueue
from bot.app.settings import Settings
from bot.app.shared import Shared
from tests.app.bots import wait_until
from tests.fixtures.postgres import Postgres


def sql(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(query, params)
        return cursor.fetchall() if cursor.description else []


def taken_by_a_replica_that_died(url: str) -> int:
    """The waiting job taken as another replica's worker takes it (procrastinate registers
    the worker, then fetches the job as that worker), that worker's last heartbeat an hour
    ago: the replica died mid-job. Its job's id."""

    async def take() -> int:
        replica = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
        async with replica.open_async():
            worker = await replica.job_manager.register_worker()
            job = await replica.job_manager.fetch_job(queues=[QUEUE], worker_id=worker)
            assert job is not None and job.id is not None
        sql(url, "update procrastinate_workers set last_heartbeat = now() - interval '1 hour' where id = %s", worker)
        return job.id

    return asyncio.run(take())


def test_a_stalled_job_whose_same_job_waits_is_ended_and_the_waiting_one_runs(
    postgres: Postgres, tmp_path: Path
) -> None:
    url = postgres.database(f"stalled_{uuid.uuid4().hex[:10]}")
    shared = Shared(url)
    shared.prepare()
    ran: list[Job] = []
    ticks: list[bool] = []

    def run(job: Job, notes: list[str]) -> tuple[bool, float | None]:
        ran.append(job)
        return True, None

    settings = Settings(cache_dir=tmp_path, tick_seconds=1, stalled_after=5, workers=2, shutdown_grace=5)
    queue = PostgresQueue(settings, url, shared, run=run, tick=lambda: ticks.append(True))
    job = Job(JobKind.COMPONENT, "rocm/atom", "lmcache")
    try:
        queue.put(job)
        stalled = taken_by_a_replica_that_died(url)
        queue.put(job)  # while its key runs: taken, not coalesced
        rows = sql(
            url, "select id, status, queueing_lock from procrastinate_jobs where task_name = %s order by id", JOB_TASK
        )
        assert [(status, lock) for _, status, lock in rows] == [("doing", job.key), ("todo", job.key)]

        with capture_logs() as logs:
            queue.start()
            # the waiting job runs once the stalled one (which holds the repository's lock) is
            # ended, and the tick goes on to the schedule; a worker that stops meanwhile ends
            # the wait too, for the assertions to say why
            wait_until(lambda: (ran and ticks) or queue.worker_error, 30, "the waiting job to run")
            assert queue.stop(5)
        assert ran == [job], queue.worker_error
        assert queue.worker_error is None and queue.restarts == 0
        assert ticks, "the tick went on past the stalled job to the schedule"
        # the stalled one aborted, kept; the waiting one ran and succeeded (deleted as successful)
        assert sql(url, "select id, status from procrastinate_jobs where task_name = %s", JOB_TASK) == [
            (stalled, "aborted")
        ]
        assert sql(url, "select task_name from procrastinate_jobs where status = 'failed'") == []  # no tick raised
        said = [
            (entry["event"], entry["job"]) for entry in logs if entry["event"] in ("job.stalled", "job.retry_coalesced")
        ]
        assert said == [("job.stalled", stalled), ("job.retry_coalesced", stalled)], said
        assert not [entry for entry in logs if entry["event"] in ("queue.worker_restarting", "job.end_unwritten")]
    finally:
        if not queue.closed:
            queue.stop(5)
        shared.close()

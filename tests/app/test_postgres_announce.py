"""A job is taken when it may run, announced, not found by a worker's polling: on the real
engine (Debian's PostgreSQL, tests/fixtures/postgres.py) and the service's own queue
(bot/app/pgqueue.py), in process, its polling interval made a minute long so that only an
announcement can deliver a job within the test's wait.

- a job deferred on an idle queue: procrastinate's insert trigger NOTIFYs the workers;
- a follow-up deferred while its repository's job runs (held up by the repository's lock):
  nothing in procrastinate announces the lock freed; the queue announces the follow-up when
  the running job's end is written, so an idle worker takes it at once.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from bot.app import pgqueue
from bot.app.jobs import Job, JobKind
from bot.app.pgqueue import PostgresQueue
from bot.app.settings import Settings
from bot.app.shared import Shared
from tests.app.bots import wait_until
from tests.fixtures.postgres import Postgres

POLL = 60.0  # a worker's polling interval here: longer than any wait below


def test_a_follow_up_held_by_its_repository_lock_is_taken_when_the_lock_frees(
    postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgqueue, "FETCH_POLL", POLL)
    url = postgres.database(f"announce_{uuid.uuid4().hex[:10]}")
    shared = Shared(url)
    shared.prepare()
    first, follow_up = Job(JobKind.COMPONENT, "rocm/atom", "lmcache"), Job(JobKind.COMPONENT, "rocm/atom", "mooncake")
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    release_first = threading.Event()

    def run(job: Job, notes: list[str]) -> tuple[bool, float | None]:
        started[job.key] = time.monotonic()
        if job == first:
            release_first.wait(30)
        ended[job.key] = time.monotonic()
        return True, None

    # two workers: one is idle while the first job runs, waiting for news of a job
    settings = Settings(cache_dir=tmp_path, tick_seconds=60, stalled_after=30, workers=2, shutdown_grace=5)
    queue = PostgresQueue(settings, url, shared, run=run, tick=lambda: None)
    try:
        queue.start()
        queue.put(first)  # on an idle queue: announced by procrastinate's insert trigger
        wait_until(lambda: first.key in started or queue.worker_error, POLL / 3, "the first job to be taken")
        queue.put(follow_up)  # its repository's lock is held: the idle worker cannot take it yet
        time.sleep(0.5)
        assert follow_up.key not in started, "two jobs of one repository ran at once"
        release_first.set()
        wait_until(
            lambda: follow_up.key in started or queue.worker_error,
            POLL / 3,
            "the follow-up to be taken once the first job's end was written",
        )
        assert queue.worker_error is None
        assert started[follow_up.key] >= ended[first.key]
        assert queue.stop(5)
    finally:
        release_first.set()
        if not queue.closed:
            queue.stop(5)
        shared.close()

"""The service's work queue on PostgreSQL (WHEELPIN_DATABASE_URL; docs/design.md §2, app/),
shared by every replica of `wheelpin serve`, on procrastinate (a PostgreSQL-backed task
queue: https://procrastinate.readthedocs.io). It keeps the in-process queue's rules
(app/workqueue.py) across processes:

- A job is deferred with its key as procrastinate's `queueing_lock`: while one job of a key
  waits, another is refused (`AlreadyEnqueued`), so a burst coalesces; one deferred while
  the key runs is taken, so what the burst changed is seen afterwards.
- Its `lock` is its repository (`Job.lock`): one job of a repository at a time, whichever
  replica takes it; the installations job has a lock of its own.
- A job that fails is retried by procrastinate after a backoff that doubles per attempt,
  capped at an hour, at least as long as the failure said (a rate limit); deliveries
  meanwhile coalesce into that retry.
- A replica that dies mid-job stops its heartbeat; after WHEELPIN_STALLED_AFTER seconds
  its job is stalled, and the next tick hands it back to the queue (procrastinate's
  "retry stalled jobs" recipe): another replica takes it, the lock then free.
- One periodic tick (procrastinate's periodic task: deferred once per period across all
  replicas) claims the components due (app/shared.py `claim_due`) and defers their jobs.

Each replica runs procrastinate's worker in a thread of its own with an event loop; a job
runs in a worker thread (procrastinate runs a sync task in a thread), at most
WHEELPIN_WORKERS at once. Deliveries and follow-up jobs are deferred synchronously, on the
connection pool app/shared.py keeps.

A database that restarts is a pause: procrastinate's worker stops itself when
one of its side tasks (the LISTEN connection, the heartbeat, the periodic deferrer) fails
("Side task … failed …, stopping worker": procrastinate 3.x, `Worker._monitor_side_tasks`),
so the worker is started again here, after a doubling pause, until it runs; the thread and
its beat (the liveness probe's) never stop. A job whose end could not be written stays
`doing` under the old worker's stale heartbeat, and a tick hands it back. A delivery that
cannot be deferred is a TransientError (the webhook door's 503), never lost silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from ..adapters import logs
from ..core.errors import TransientError
from .jobs import Job
from .lease import Fenced
from .settings import Settings
from .shared import Shared
from .workqueue import QueueStats

log = logs.get_logger("wheelpin.serve")
QUEUE = "wheelpin"
JOB_TASK = "wheelpin.job"
TICK_TASK = "wheelpin.tick"
MAX_BACKOFF = 3600.0
BEAT = 10.0  # seconds between the worker loop's own ticks (liveness)
# Seconds between a worker's looks for a job when no notification came. A deferred job is
# announced (LISTEN/NOTIFY) and taken at once; one held up by its repository's lock (a
# follow-up deferred by the job running) is announced when that job's end is written
# (`_announce_freed`). The polling is what is left: a backoff that ran out, an announcement
# lost to a database restart. Half a second costs an idle replica two small queries a second.
FETCH_POLL = 0.5
# procrastinate's workers LISTEN on this channel per queue, and fetch on a "job_inserted"
# payload (procrastinate 3.x: schema.sql, `procrastinate_notify_queue_job_inserted`;
# manager.py, `get_channel_for_queues`; worker.py, `_handle_notification`). A job whose lock
# was freed is announced on it too: for a worker it is the same news, a job it may take now.
# The job announced is the one procrastinate's fetch would take next of that lock (its
# `procrastinate_fetch_job_v2`: first by priority, then id), when it may run now.
ANNOUNCE_FREED = (
    "select pg_notify('procrastinate_queue_v1#' || next.queue_name,"
    " json_build_object('type', 'job_inserted', 'job_id', next.id)::text)"
    " from (select queue_name, id, scheduled_at from procrastinate_jobs where lock = %(lock)s and status = 'todo'"
    "       order by priority desc, id limit 1) next"
    " where (next.scheduled_at is null or next.scheduled_at <= now())"
    " and not exists (select 1 from procrastinate_jobs where lock = %(lock)s and status = 'doing')"
)
# Seconds between attempts to start the worker again after it stopped (the database went
# away): doubling from the first, capped; a worker that ran a while starts from the first again.
RESTART_FIRST = 0.5
RESTART_MAX = 5.0
RESTART_RESET = 60.0
# Pauses before writing a job's end again (finish or retry) when the database did not take it.
END_RETRIES = (0.5, 1.0, 2.0, 4.0, 8.0)

# One job, run: (the job, the notes that asked for it) → (done?, seconds its key must wait)
RunJob = Callable[[Job, list[str]], tuple[bool, float | None]]


class BackOff(Exception):
    """A job that must run again later (raised to procrastinate, which retries it)."""

    def __init__(self, retry_after: float | None) -> None:
        super().__init__(f"backing off (at least {retry_after} s)" if retry_after else "backing off")
        self.retry_after = retry_after


def backoff_strategy(first: float) -> Any:
    """procrastinate's retry strategy for a job that backed off: forever, doubling from
    `first` seconds per attempt, capped at an hour, never shorter than the failure said."""
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

    class Doubling(BaseRetryStrategy):
        def get_retry_decision(self, *, exception: BaseException, job: Any) -> RetryDecision | None:
            if not isinstance(exception, BackOff):
                return None
            doubling = first * 2 ** min(job.attempts, 20)
            return RetryDecision(retry_in={"seconds": min(max(doubling, exception.retry_after or 0.0), MAX_BACKOFF)})

    return Doubling()


def tick_cron(seconds: int) -> str:
    """procrastinate's cron line (croniter's, with a sixth field for seconds) for a tick every
    `seconds` (60: every minute)."""
    return "* * * * *" if seconds >= 60 else f"* * * * * */{seconds}"


class PostgresQueue:
    def __init__(self, settings: Settings, url: str, shared: Shared, *, run: RunJob, tick: Callable[[], None]) -> None:
        import procrastinate

        self.settings = settings
        self.shared = shared
        self._run = run
        self._tick = tick
        self.intake = procrastinate.App(connector=procrastinate.SyncPsycopgConnector())
        self.intake.open(shared.pool)
        self.app = procrastinate.App(
            connector=procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=settings.workers + 3)
        )
        self._register()
        self._keep_job_ends()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: asyncio.Task[None] | None = None
        # A run of a job is its id and attempt: a job handed back (stalled) runs again under
        # the same id, possibly here while its first run still ends; each run's end is its own.
        self._running: dict[tuple[int, int], float] = {}  # run → when it started here (monotonic)
        self._abandoned: set[tuple[int, int]] = set()  # runs fenced here: their end is not written (app/lease.py)
        self._guard = threading.Lock()
        self.beat = time.monotonic()  # the worker loop's last tick
        self.last_done = time.monotonic()
        self._closed = False
        self._wake: asyncio.Event | None = None
        self.worker_up = False  # procrastinate's worker runs (False in the pause before it is started again)
        self.restarts = 0
        self.worker_error: str | None = None  # why it last stopped
        self.puts = 0
        self.runs = 0

    # -- the tasks --------------------------------------------------------------------------

    def _register(self) -> None:
        settings = self.settings

        @self.app.task(name=JOB_TASK, queue=QUEUE, pass_context=True, retry=backoff_strategy(settings.queue_backoff))
        def job_task(context: Any, job: dict[str, Any], note: str = "", deferred: float = 0.0) -> None:
            identity = (context.job.id, context.job.attempts)
            # how long it waited in the queue, from its first deferral (a retry's backoff included)
            log.debug(
                "job.taken",
                repository=job.get("repository"),
                job=job.get("kind"),
                waited=round(time.time() - deferred, 4) if deferred else None,
                attempt=context.job.attempts,
            )
            with self._guard:
                self._running[identity] = time.monotonic()
                self.runs += 1
            ok, retry_after = False, None
            try:
                ok, retry_after = self._run(Job.from_args(job), [note] if note else [])
            except Fenced:  # another replica runs this job now (app/lease.py): its row is that one's
                ok = True
                with self._guard:
                    self._abandoned.add(identity)
            except Exception as exc:  # never a failure procrastinate would not retry: the job is kept
                log.error("job.crashed", error=f"{type(exc).__name__}: {exc}", exc_info=True)
            finally:
                with self._guard:
                    self._running.pop(identity, None)
                    self.last_done = time.monotonic()
            if not ok:
                raise BackOff(retry_after)

        @self.app.periodic(cron=tick_cron(settings.tick_seconds), periodic_id="tick")
        @self.app.task(name=TICK_TASK, queue=QUEUE)
        async def tick_task(timestamp: int) -> None:
            log.debug("schedule.tick", period=timestamp)  # one replica a period
            manager = self.app.job_manager
            for stalled in await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=settings.stalled_after):
                if stalled.task_name == TICK_TASK:
                    continue  # a tick left behind: the next one does its work
                log.warning(
                    "job.stalled",
                    job=stalled.id,
                    lock=stalled.lock,
                    reason=f"its replica sent no heartbeat for {settings.stalled_after} s: queued again",
                )
                await manager.retry_job(stalled)  # ended instead when the same job waits already (again)
            await asyncio.to_thread(self._tick)

    def _keep_job_ends(self) -> None:
        """A job's end (procrastinate's `finish_job`, or `retry_job` for a backoff) written
        again while the database is away (a restart broke the connection mid-write). One
        still not written after END_RETRIES would leave the job `doing` under a worker that
        still beats, never handed back: the worker is then started again, its old record
        is left to go stale (or is deleted), and the next tick hands the job back."""
        from procrastinate.exceptions import ConnectorException, UniqueViolation
        from procrastinate.jobs import Status as JobStatus

        manager = self.app.job_manager
        for name in ("finish_job", "retry_job"):
            write = getattr(manager, name)

            async def again(*args: Any, _write: Any = write, _name: str = name, **kwargs: Any) -> Any:
                job = kwargs.get("job", args[0] if args else None)
                with self._guard:
                    run = (job.id, job.attempts) if job is not None else None
                    abandoned = run in self._abandoned
                    self._abandoned.discard(run)
                if abandoned:
                    log.info(
                        "job.end_left",
                        job=getattr(job, "id", None),
                        reason="taken over by another replica: its end is theirs",
                    )
                    return None
                for pause in (*END_RETRIES, None):
                    try:
                        written = await _write(*args, **kwargs)
                        await self._announce_freed(job)
                        return written
                    except UniqueViolation:  # the database answered: no connection was lost
                        if _name != "retry_job" or job is None:
                            raise
                        # A job of the same key (its queueing lock) was queued while this one ran:
                        # that one does the same work, so this run ends instead of waiting beside it.
                        log.info(
                            "job.retry_coalesced",
                            job=job.id,
                            lock=job.lock,
                            reason="the same job is queued already: it runs instead of this retry",
                        )
                        return await manager.finish_job(job, status=JobStatus.ABORTED, delete_job=False)
                    except ConnectorException as exc:
                        if pause is None:
                            log.warning(
                                "job.end_unwritten",
                                write=_name,
                                error=type(exc.__cause__ or exc).__name__,
                                reason="the worker starts again; a tick hands the job back",
                            )
                            self.worker_error = f"a job's end could not be written ({_name})"
                            self._cancel_worker(wake=False)
                            raise
                        await asyncio.sleep(pause)
                return None

            setattr(manager, name, again)

    async def _announce_freed(self, job: Any) -> None:
        """A job's end was written: the next job waiting on its lock (a follow-up deferred
        while it ran, a stalled job handed back) is announced to every replica's worker, which
        takes it at once instead of at its next polling (nothing else announces a freed lock)."""
        from procrastinate.exceptions import ConnectorException

        if job is None or job.lock is None:
            return
        try:
            await self.app.connector.execute_query_async(ANNOUNCE_FREED, lock=job.lock)
        except ConnectorException as exc:  # the end is written: the polling takes the job instead
            log.debug("job.freed_unannounced", lock=job.lock, error=type(exc.__cause__ or exc).__name__)

    # -- deferring (any thread) -------------------------------------------------------------------

    def put(self, key: Job, *, note: str | None = None, urgent: bool = False) -> None:
        """Defer `key` (a burst of one key coalesces into the job waiting)."""
        import psycopg
        from procrastinate.exceptions import AlreadyEnqueued, ConnectorException

        if self._closed:
            return
        try:
            self.intake.configure_task(
                JOB_TASK, queue=QUEUE, queueing_lock=key.key, lock=key.lock, priority=1 if urgent else 0
            ).defer(job=key.to_args(), note=note or "", deferred=time.time())
        except AlreadyEnqueued:
            pass  # one is waiting already: it sees what this delivery changed
        except (ConnectorException, psycopg.Error) as exc:  # the pool's timeout too (psycopg_pool.PoolTimeout)
            raise TransientError(f"PostgreSQL did not take the job ({type(exc.__cause__ or exc).__name__})") from None
        self.puts += 1

    # -- the worker -------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), name="wheelpin-worker", daemon=True)
        self._thread.start()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        beat = asyncio.create_task(self._beat())  # ticks while the worker is started again, too
        try:
            # procrastinate's pool checks a connection before lending it (check_connection), so
            # one broken by a restart of the database is replaced, not used
            async with self.app.open_async():
                pause = RESTART_FIRST
                while not self._closed:
                    started = time.monotonic()
                    await self._run_worker()
                    if self._closed:
                        break
                    if time.monotonic() - started > RESTART_RESET:
                        pause = RESTART_FIRST
                    self.worker_up = False
                    log.warning("queue.worker_restarting", seconds=pause, reason=self.worker_error)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), pause)
                    pause = min(pause * 2, RESTART_MAX)
                    self.restarts += 1
        finally:
            beat.cancel()

    async def _run_worker(self) -> None:
        """procrastinate's worker, until it stops: cancelled by `stop()`, or by itself when
        the database went away (a side task failed, a query raised)."""
        self._worker = asyncio.create_task(
            self.app.run_worker_async(
                queues=[QUEUE],
                concurrency=self.settings.workers,
                name=f"wheelpin-{threading.get_native_id()}",
                install_signal_handlers=False,
                delete_jobs="successful",
                fetch_job_polling_interval=FETCH_POLL,
                update_heartbeat_interval=max(self.settings.stalled_after / 3, 1.0),
                stalled_worker_timeout=self.settings.stalled_after,
                shutdown_graceful_timeout=self.settings.shutdown_grace,
            )
        )
        self.worker_up = True
        try:
            await self._worker
            self.worker_error = "the worker stopped (a side task failed: the database went away?)"
        except asyncio.CancelledError:
            pass  # stop(), or a job's end not written (`_keep_job_ends`)
        except Exception as exc:  # the database went away: register_worker, fetch_job or unregister raised
            self.worker_error = f"the worker stopped: {type(exc.__cause__ or exc).__name__}"

    def _cancel_worker(self, wake: bool = True) -> None:
        """(In the loop) the worker running now is cancelled; at stop, a pause before a
        restart ends too."""
        if self._worker is not None:
            self._worker.cancel()
        if wake and self._wake is not None:
            self._wake.set()

    async def _beat(self) -> None:
        while True:
            self.beat = time.monotonic()
            await asyncio.sleep(BEAT)

    def stop(self, grace: float) -> bool:
        """Take no more jobs; True when the running ones finished within `grace` seconds (one
        abandoned is handed back by a tick once this replica's heartbeat is stale)."""
        self._closed = True
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop ended already
                # the task cancelled is the one running when the loop gets to it, not one
                # that a restart replaced meanwhile
                self._loop.call_soon_threadsafe(self._cancel_worker)
        deadline = time.monotonic() + grace
        while self._running and time.monotonic() < deadline:
            time.sleep(0.05)
        finished = not self._running
        if self._thread is not None:
            self._thread.join(max(deadline - time.monotonic(), 0.0) + 5)
        self.intake.close()
        return finished

    @property
    def closed(self) -> bool:
        return self._closed

    def worker_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def longest_local_run(self) -> float:
        with self._guard:
            now = time.monotonic()
            return max((now - started for started in self._running.values()), default=0.0)

    def local_running(self) -> int:
        return len(self._running)

    def stats(self) -> QueueStats:
        """The queue across replicas (waiting, running, backing off; how long the oldest job
        any worker could take has waited), and this replica's own runs."""
        with self.shared.cursor() as cursor:
            row = cursor.execute(
                "select count(*) filter (where status = 'todo'),"
                " count(*) filter (where status = 'doing'),"
                " count(*) filter (where status = 'todo' and scheduled_at > now()),"
                " coalesce(extract(epoch from now() - min(greatest(e.at, j.scheduled_at)) filter ("
                "   where status = 'todo' and (scheduled_at is null or scheduled_at <= now())"
                "   and (lock is null or lock not in (select lock from procrastinate_jobs"
                "                                     where status = 'doing' and lock is not null)))), 0)"
                " from procrastinate_jobs j left join procrastinate_events e"
                "   on e.job_id = j.id and e.type = 'deferred'"
                " where queue_name = %s and task_name = %s",
                (QUEUE, JOB_TASK),
            ).fetchone()
        waiting, running, backing_off, oldest = row
        now = time.monotonic()
        return QueueStats(
            waiting=int(waiting),
            running=int(running),
            backing_off=int(backing_off),
            oldest_wait=float(oldest),
            longest_run=self.longest_local_run(),
            since_done=now - self.last_done,
            puts=self.puts,
            runs=self.runs,
        )

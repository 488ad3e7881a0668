"""The long-running service behind `wheelpin serve` (docs/design.md §2, app/): its life
cycle, the webhook door's side of it, and the worker.

Webhook deliveries and the schedule only put jobs (`app/jobs.py`) on the work queue; a
bounded pool of workers (`WHEELPIN_WORKERS`) takes them, never two jobs of one repository
at once (the queue's groups), so a repository's reconciler and state file are only ever
used by one thread at a time, and one repository's long adoption holds up no other. The
installations job runs alone: it is the one that changes the watch list. What each kind of job does lives beside it:
`watchlist.py` (installations, config, repository), `comment_commands.py` (command),
`dashboards.py` (dashboard); a component's pass is here.

With WHEELPIN_DATABASE_URL the queue is procrastinate's on PostgreSQL (`pgqueue.py`), shared
by every replica, with the same rules; so are the watch list, routing, schedule, dashboard
rows and comments (`shared.py`), and the loop's state. Any replica takes any delivery and
any job; one tick across replicas fires the schedule; APScheduler is not used.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..adapters import cachebound, logs
from ..adapters.statefile import open_state
from ..core.errors import TransientError, WheelpinError, kind_of
from ..loop.results import Status
from . import dashboards
from .comment_commands import Commands
from .forge import Forge
from .jobs import Delivery, Intake, Job, JobKind, repository_key
from .lease import Fenced, Leases
from .metrics import Metrics
from .schedule import trigger_of
from .settings import Settings
from .watchlist import Watched, WatchList

if TYPE_CHECKING:
    from .pgqueue import PostgresQueue
    from .shared import Shared
from .wiring import Registries
from .workqueue import QueueStats, WorkQueue

log = logs.get_logger("wheelpin.serve")
RETRIED = ("transient", "internal", "credentials")  # a pass that failed so is tried again after a backoff


class Service:
    def __init__(
        self,
        settings: Settings,
        *,
        forge: Forge,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.forge = forge  # where the watched repositories live (app/forge.py)
        self._said_no_access = False  # installation events without credentials: said once
        self._local = threading.local()  # per worker: the job's cause and how long its key must wait
        self.door = forge.door()  # None: no webhook secret, deliveries refused
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.registries = Registries(settings)
        self.shared: Shared | None = None
        self.pg: PostgresQueue | None = None
        self.leases: Leases | None = None  # with a database: each job's repository lease (lease.py)
        self.queue: WorkQueue[Job] | None = None
        self.scheduler: Any = None
        intake: Intake
        if settings.database_url is not None:  # replicas share the queue, schedule and state
            from .pgqueue import PostgresQueue
            from .shared import Shared

            url = settings.database_url.get_secret_value()
            self.shared = Shared(url, size=settings.workers + 4)
            intake = self.pg = PostgresQueue(settings, url, self.shared, run=self._run_logged, tick=self._tick)
            self.leases = Leases(
                self.shared, seconds=settings.stalled_after, holder=f"{socket.gethostname()}:{os.getpid()}"
            )
        else:
            from apscheduler.schedulers.background import BackgroundScheduler

            intake = self.queue = WorkQueue(
                backoff=settings.queue_backoff, clock=clock, group=lambda job: repository_key(job.repository)
            )  # one job a repository, however a delivery spelt its name
            self.scheduler = BackgroundScheduler(timezone="UTC")
        self.intake = intake
        self.metrics.track_queue(lambda: self._gauge("waiting"), lambda: self._gauge("running"))
        # a forge's write limits are the bot's, whichever replica writes: each takes its share
        forge.share_writes(settings.replicas if settings.database_url is not None else 1)
        self.watchlist = WatchList(
            settings,
            forge,
            queue=intake,
            scheduler=self.scheduler,
            metrics=self.metrics,
            registries=self.registries,
            shared=self.shared,
        )
        self.commands = Commands(queue=intake, clock=clock, shared=self.shared)
        self._workers: list[threading.Thread] = []
        self._ticks: dict[str, float] = {}  # worker name → when it last took a job, finished one, or idled
        self.passes: dict[tuple[str, str], int] = {}  # (repository, component) → passes run (tests, metrics)

    def stats(self) -> QueueStats:
        return self.pg.stats() if self.pg is not None else self._queue.stats()

    def _gauge(self, name: str) -> float:
        """A queue gauge for /metrics: NaN while the database cannot be read (a scrape
        must not fail because PostgreSQL restarts)."""
        try:
            return float(getattr(self.stats(), name))
        except TransientError:
            return float("nan")

    @property
    def _queue(self) -> WorkQueue[Job]:
        assert self.queue is not None, "the in-process queue (no WHEELPIN_DATABASE_URL)"
        return self.queue

    @property
    def watched(self) -> dict[str, Watched]:
        return self.watchlist.watched

    @property
    def watching(self) -> bool:
        """The forge has the bot's credentials: there is a watch list to read."""
        return self.watchlist.watching

    @property
    def forge_ok(self) -> bool | None:
        """Whether the forge took the bot's credentials when last asked; None: not asked yet."""
        return self.watchlist.forge_ok

    @forge_ok.setter
    def forge_ok(self, value: bool | None) -> None:
        self.watchlist.forge_ok = value

    @property
    def forge_error(self) -> str | None:
        return self.watchlist.forge_error

    @forge_error.setter
    def forge_error(self, value: str | None) -> None:
        self.watchlist.forge_error = value

    def start(self) -> None:
        if self.pg is not None:
            assert self.shared is not None
            self.shared.prepare()
            if self.watching:  # the watch list read again every refresh, once across replicas
                refresh = f"{self.settings.refresh_minutes}m UTC"
                self.shared.schedule(
                    "*", {"installations": refresh}, first_due=lambda spec: self.watchlist.next_due(spec, time.time())
                )
                self.pg.put(Job(JobKind.INSTALLATIONS), note="start")
            assert self.leases is not None
            self.leases.start()
            self.pg.start()
            log.info(
                "serve.started",
                forge=self.forge.name,
                watching=self.watching,
                webhooks=self.door is not None,
                queue="postgresql",
            )
            return
        if self.watching:
            self.scheduler.add_job(
                self._queue.put,
                trigger=trigger_of(f"{self.settings.refresh_minutes}m", self.settings.schedule_jitter, "UTC"),
                args=[Job(JobKind.INSTALLATIONS)],
                kwargs={"note": "schedule"},
                id="installations",
            )
            self._queue.put(Job(JobKind.INSTALLATIONS), note="start")
        self.scheduler.start()  # before the worker, which adds jobs to it
        for number in range(self.settings.workers):
            worker = threading.Thread(target=self._work, name=f"wheelpin-worker-{number}", daemon=True)
            self._ticks[worker.name] = time.monotonic()
            self._workers.append(worker)
            worker.start()
        log.info("serve.started", forge=self.forge.name, watching=self.watching, webhooks=self.door is not None)

    def stop(self, grace: float | None = None) -> bool:
        """Take no more jobs; let the running ones finish within `grace` seconds. True if they did.
        An abandoned job is repaired by the next start (the loop is level-triggered), or,
        with a database, taken up by another replica once this one's heartbeat is stale."""
        grace = self.settings.shutdown_grace if grace is None else grace
        if self.pg is not None:
            assert self.shared is not None
            finished = self.pg.stop(grace)
            if self.leases is not None:
                self.leases.stop()
            self.shared.close()
            log.info("serve.stopped", finished=finished)
            return finished
        self._queue.close()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        deadline = time.monotonic() + grace
        for worker in self._workers:
            worker.join(max(deadline - time.monotonic(), 0.0))
        finished = not any(worker.is_alive() for worker in self._workers)
        log.info("serve.stopped", finished=finished)
        return finished

    def _tick(self) -> None:
        """The shared schedule's tick (one replica a period): the components due, deferred."""
        assert self.shared is not None
        for repository, component in self.shared.claim_due(time.time(), self.watchlist.next_due):
            job = Job(JobKind.INSTALLATIONS) if repository == "*" else Job(JobKind.COMPONENT, repository, component)
            self.intake.put(job, note="schedule")

    def ready(self) -> tuple[bool, str]:
        """For /readyz: the forge answered the bot's credentials, and the queue moves."""
        reason = ""
        try:
            stats = self.stats()
        except TransientError as exc:  # the database is down or restarting: not ready, yet alive
            self.metrics.ready.set(0)
            return False, exc.message
        if self.pg is not None and self.watching and self.forge_ok is None:
            self.watchlist.check()  # another replica may run the installations job: ask for this one
        missing = self.forge.missing_credentials()
        if missing is not None:
            reason = missing
        elif self.door is None:
            reason = "no webhook secret (WHEELPIN_WEBHOOK_SECRET or WHEELPIN_WEBHOOK_SECRET_FILE)"
        elif self.forge_ok is None:
            reason = f"{self.forge.name} not reached yet"
        elif not self.forge_ok:
            reason = f"{self.forge.name} refused the bot: {self.forge_error}"
        elif not self._workers_alive():
            reason = "a worker is not running"
        elif self.pg is not None and not self.pg.worker_up:
            reason = f"the queue's worker is starting again ({self.pg.worker_error or 'not started yet'})"
        elif (
            self.pg is not None
            and stats.oldest_wait > self.settings.stuck_after
            and self.pg.local_running() < self.settings.workers
        ):
            reason = (
                f"the queue is stuck: a job any worker could take has waited {stats.oldest_wait:.0f} s "
                "while this replica had room"
            )
        elif (
            self.pg is None
            and stats.oldest_wait > self.settings.stuck_after
            and stats.since_done > self.settings.stuck_after
        ):
            reason = (
                f"the queue is stuck: nothing has finished for {stats.since_done:.0f} s and a job "
                f"has waited {stats.oldest_wait:.0f} s"
            )
        elif stats.longest_run > 4 * self.settings.stuck_after:
            reason = f"the queue is stuck: a job has run {stats.longest_run:.0f} s"
        self.metrics.ready.set(0 if reason else 1)
        return (not reason, reason or "ready")

    # -- deliveries (webhook threads) --------------------------------------------------------

    def take(self, delivery: Delivery) -> list[Job]:
        """The jobs one delivery (read by the forge's door) asks for, queued. Never does the work itself."""
        jobs = list(delivery.jobs)
        for job in jobs:
            urgent = job.kind is JobKind.COMMAND  # a human waits for a command
            if urgent:
                self.commands.heard(job)
            if job.kind is JobKind.INSTALLATIONS:
                self.watchlist.asked()
            self.intake.put(job, note=delivery.id, urgent=urgent)
        self.metrics.deliveries.labels(event=delivery.event, outcome="queued" if jobs else "ignored").inc()
        log.info(
            "webhook.delivery",
            action=delivery.action,
            repository=delivery.repository,
            queued=[job.kind for job in jobs],
        )
        return jobs

    # -- the worker --------------------------------------------------------------------------

    def _workers_alive(self) -> bool:
        if self.pg is not None:
            return self.pg.worker_alive()
        return bool(self._workers) and all(worker.is_alive() for worker in self._workers)

    def alive(self) -> tuple[bool, str]:
        """For /healthz (the liveness probe): every worker is there and ticks. A worker ticks
        when it takes a job, finishes one, or has waited a while with nothing to do; one
        that has not for `wedged_after` seconds is wedged, and the process is restarted.
        With a database: the worker's loop ticks, and no job here has run that long. The
        database itself is not asked: one that restarts pauses every replica's worker,
        which starts again by itself, and restarting every pod at once would not help
        (only /readyz says the database is away)."""
        wedged = self.settings.wedged_after
        if self.pg is not None:
            if self.pg.closed:
                return True, "stopping"
            if not self.pg.worker_alive():
                return False, "the worker has died"
            quiet = time.monotonic() - self.pg.beat
            if quiet > wedged:
                return False, f"the worker's loop has not ticked for {quiet:.0f} s"
            running = self.pg.longest_local_run()
            if running > wedged:
                return False, f"a job has run {running:.0f} s (wedged)"
            return True, "alive"
        if self._queue.closed:
            return True, "stopping"
        for worker in self._workers:
            if not worker.is_alive():
                return False, f"{worker.name} has died"
            quiet = time.monotonic() - self._ticks.get(worker.name, time.monotonic())
            if quiet > wedged:
                return False, f"{worker.name} has not ticked for {quiet:.0f} s (a job wedged)"
        return True, "alive"

    @property
    def _cause(self) -> str:
        return getattr(self._local, "cause", "start")  # what asked for the job running: its follow-ups say it

    @_cause.setter
    def _cause(self, value: str) -> None:
        self._local.cause = value

    @property
    def _retry_after(self) -> float | None:
        return getattr(self._local, "retry_after", None)  # how long the failing job's key must wait, when said

    @_retry_after.setter
    def _retry_after(self, value: float | None) -> None:
        self._local.retry_after = value

    def _work(self) -> None:
        name = threading.current_thread().name
        queue = self._queue
        while True:
            self._ticks[name] = time.monotonic()
            taken = queue.get(timeout=30.0)
            if taken is None:
                if queue.closed:
                    return
                continue  # idle: a tick
            self._ticks[name] = time.monotonic()
            job, notes = taken
            ok, retry_after = False, None
            try:
                ok, retry_after = self._run_logged(job, notes)
            finally:
                queue.done(job, ok=ok, retry_after=retry_after)

    def _run_logged(self, job: Job, notes: list[str]) -> tuple[bool, float | None]:
        """Run one job as a worker does: in its log context, a failure counted and logged
        (never raised); (done?, how long its key must wait at least)."""
        self._cause = notes[-1] if notes else job.kind  # follow-up jobs carry the delivery on
        ok = False
        self._retry_after = None
        with logs.bound(
            repository=job.repository, job=job.kind, component=job.component, delivery=notes[-1] if notes else None
        ):
            log.debug("job.started")
            leased = self.leases is not None and job.repository is not None
            try:
                if leased:  # the repository's lease: its epoch fences this job's writes (lease.py)
                    assert self.leases is not None and job.repository is not None
                    wait = self.leases.take(repository_key(job.repository))
                    if wait is not None:
                        raise TransientError(
                            f"{job.repository}: another job's lease on it lasts {wait:.1f} s more",
                            retry_after=max(wait, 0.5),
                        )
                with cachebound.scope():  # what the job uses of the cache is kept until it ends, then trimmed
                    ok = self.run_job(job)
            except WheelpinError as exc:
                self.metrics.failures.labels(kind=kind_of(exc)).inc()
                log.warning("job.failed", error=exc.message)
                if isinstance(exc, TransientError):
                    self._retry_after = exc.retry_after
            except Exception as exc:  # a bug must not stop the worker
                self.metrics.failures.labels(kind="internal").inc()
                log.error("job.crashed", error=f"{type(exc).__name__}: {exc}", exc_info=True)
            finally:
                kept = self.watchlist.kept(job.repository)
                if kept is not None and kept.reconciler is not None:
                    kept.reconciler.state.release()  # a command's or skip's state use too
                fenced = leased and self.leases is not None and self.leases.release()
            log.debug("job.finished", ok=ok, fenced=fenced or None)
        if fenced:  # the job is another replica's now: its end is not this replica's to write
            raise Fenced(f"{job.repository}: taken over by another replica")
        return ok, self._retry_after

    def run_job(self, job: Job) -> bool:
        """Run one job; False when it should back off before running again."""
        self.metrics.jobs.labels(kind=job.kind).inc()
        if job.kind is JobKind.INSTALLATIONS:
            return self._installations(job)
        watched = self.watchlist.get(job.repository)
        if watched is None and self.watchlist.awaited():
            log.info("job.awaits_the_watch_list")  # tried again after a backoff, once the list is read
            return False
        if watched is None:
            log.info("job.unwatched")  # not (or no longer) installed (or another shard's): nothing to do
            self.commands.forget(job)
            return True
        if job.kind not in (JobKind.REPOSITORY, JobKind.CONFIG):
            self.watchlist.current(watched, cause=self._cause)  # with a database: another replica's read
        match job.kind:
            case JobKind.REPOSITORY | JobKind.CONFIG:
                return self.watchlist.load(watched, passes=job.kind is JobKind.REPOSITORY, cause=self._cause)
            case JobKind.COMPONENT:
                return self._component(watched, str(job.component))
            case JobKind.COMMAND:
                return self.commands.run(
                    watched, job, self.watchlist.conversation(watched), self._command_pass, cause=self._cause
                )
            case JobKind.DASHBOARD:
                return dashboards.update(watched, self.watchlist.conversation(watched))
        raise AssertionError(job.kind)

    def _installations(self, job: Job) -> bool:
        if not self.watching:  # started without credentials: nothing to list, said once
            if not self._said_no_access:
                self._said_no_access = True
                log.warning(
                    "installations.ignored",
                    reason=f"no {self.forge.name} credentials: installation events are ignored",
                )
            return True  # done: not retried
        if job.granted:  # what was refused for want of a permission may be written now
            self.forge.permissions_granted()
            url = self.settings.database_url
            state = open_state(self.settings.cache_dir, url.get_secret_value() if url else None)
            try:
                state.forget_refusals()
            finally:
                state.close()
        return self.watchlist.refresh(passes=job.granted, cause=self._cause)

    def _command_pass(self, watched: Watched, name: str, rebase: bool, recheck: bool) -> bool:
        return self._component(watched, name, rebase=rebase, recheck=recheck)

    def _component(self, watched: Watched, name: str, **options: bool) -> bool:
        reconciler = watched.reconciler
        if reconciler is None or reconciler.config.get(name) is None:
            log.info("component.unknown")
            return True
        started = time.monotonic()
        result = reconciler.run(only=name, **options)
        if self.leases is not None and self.leases.held is not None and self.leases.held.fenced:
            raise Fenced(f"{watched.repository}: taken over by another replica")  # its pass is not recorded
        platform = reconciler.platform
        http = getattr(platform, "http", None)
        self.metrics.record_pass(
            result,
            time.monotonic() - started,
            "token" if watched.grant is None else str(watched.grant),
            http.traffic.rate_remaining if http is not None else None,
        )
        key = (watched.repository, name)
        self.passes[key] = self.passes.get(key, 0) + 1
        for component in result.components:
            dashboards.record(watched, component)
            log.info(
                "component.pass",
                status=component.status.value,
                commit=component.head,
                actions=[a.kind.value for a in component.actions],
                failed_at=component.failed_at.kind.value if component.failed_at is not None else None,
                messages=component.messages,
            )
        self.intake.put(Job(JobKind.DASHBOARD, watched.repository), note=self._cause)
        failed = [c for c in result.components if c.status == Status.FAILED]
        waits = [c.retry_after for c in failed if c.retry_after is not None]
        if waits:  # e.g. GitHub's write limit: the key waits that long rather than hold the worker
            self._retry_after = max(waits)
        return not any(c.error_kind in RETRIED for c in failed)

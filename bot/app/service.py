"""The long-running service behind `wheelpin serve` (docs/design.md §2, app/).

Webhook deliveries and the schedule only put jobs on the work queue; one worker thread
takes them one at a time, so a repository's reconciler, its state file and the cache's
git mirrors are only ever used by one thread (builds run on GitHub Actions runners, so
a pass is short). Jobs:

- `installations`: which repositories to watch (the App's installations, or
  WHEELPIN_REPOSITORIES with a token, checked); run at start, on installation events and
  hourly; queues `config` for each.
- `config`: read a repository's config again (an unchanged config keeps the reconciler
  and its caches) and schedule its components; a pass of each only if the config is new
  or changed.
- `repository`: the same, and a pass of each component (a push to the base, a finished
  build, a config pushed).
- `component`: one reconcile pass of one component.
- `command`: `/wheelpin rebase|recheck|skip` on a bot pull request, from a user with
  write access.
- `dashboard`: bring the repository's dashboard issue up to date (coalesced, written
  only when it changed).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from ..adapters.github import GitHubPlatform, IssuesDisabled
from ..adapters.statefile import StateFile
from ..core.config import Config
from ..core.dashboard import LABEL, MARKER, TITLE, Row, render
from ..core.errors import ConfigError, CredentialsError, TransientError, WheelpinError, kind_of
from ..core.webhooks import WorkKey, work_for
from .githubrepo import GitHubAccess, github_platform, github_reconciler, read_repository_config
from .metrics import Metrics
from .reconciler import ComponentResult, Reconciler
from .schedule import schedule_of, trigger_of
from .settings import Settings
from .wiring import Registries
from .workqueue import WorkQueue

log = structlog.get_logger("wheelpin.serve")
WRITERS = ("admin", "maintain", "write")
PERMISSION_TTL = 60.0  # seconds a collaborator's permission is trusted once read
INSTALLATIONS, CONFIG, REPOSITORY, COMPONENT, COMMAND, DASHBOARD = (
    "installations", "config", "repository", "component", "command", "dashboard")
GRANTED = "granted"  # an installations job after the App's new permissions were accepted


@dataclass(frozen=True)
class Job:
    kind: str
    repository: str = "*"
    component: str | None = None
    command: str | None = None
    number: int | None = None
    sender: str | None = None


@dataclass(frozen=True)
class Routing:
    """What a delivery for a repository is matched against (read by the webhook threads)."""

    prefix: str = "wheelpin/"
    bases: frozenset[str] = frozenset({"main"})
    workflows: frozenset[str] = frozenset()

    @classmethod
    def of(cls, config: Config) -> Routing:
        return cls(config.defaults.branch_prefix, frozenset({config.defaults.base_branch}),
                   frozenset(c.build.workflow for c in config.components if c.build.workflow))


@dataclass
class Watched:
    repository: str
    access: GitHubAccess
    reconciler: Reconciler | None = None
    config_text: str | None = None
    config_error: str | None = None
    rows: dict[str, Row] = field(default_factory=dict)
    dashboard_body: str | None = None
    dashboard_number: int | None = None  # read first next time: a label a human removed does not lose it
    permissions: dict[str, tuple[str, float]] = field(default_factory=dict)  # login → (level, when read)
    platform: GitHubPlatform | None = None  # kept: its token, ETags and caches serve every job
    dashboard_off: bool = False  # the repository has issues turned off (410)


def jobs_for(key: WorkKey) -> list[Job]:
    if key.refresh:
        return [Job(INSTALLATIONS, command=GRANTED if key.granted else None)]
    if key.command:
        return [Job(COMMAND, key.repository, command=key.command, number=key.number, sender=key.sender)]
    if key.component:
        return [Job(COMPONENT, key.repository, key.component)]
    return [Job(REPOSITORY, key.repository)]


class Service:
    def __init__(self, settings: Settings, *, access: GitHubAccess | None, secret: bytes | None,
                 metrics: Metrics | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.settings = settings
        self.access = access
        self._said_no_access = False
        self._retry_after: float | None = None  # how long the failing job's key must wait, when said  # installation events without credentials: said once
        self.secret = secret
        self.metrics = metrics or Metrics()
        self.clock = clock
        self.queue: WorkQueue[Job] = WorkQueue(backoff=settings.queue_backoff, clock=clock)
        self.metrics.track_queue(lambda: self.queue.stats().waiting, lambda: self.queue.stats().running)
        self.scheduler = BackgroundScheduler(timezone="UTC")
        self.registries = Registries(settings)
        self.watched: dict[str, Watched] = {}
        self._routing: dict[str, Routing] = {}
        # a command job → the comments that gave it, with the commit each saw: one sender
        # repeating a command coalesces into one job, and every comment gets its reaction
        self._comments: dict[Job, list[tuple[int | None, str | None]]] = {}
        self._schedules: dict[str, str] = {}  # scheduler job id → the schedule it was made from
        self._lock = threading.Lock()
        self.github_ok: bool | None = None  # None until GitHub was first asked
        self.github_error: str | None = None
        self._worker: threading.Thread | None = None
        self._cause = "start"  # the delivery (or schedule) behind the job running now
        self.passes: dict[tuple[str, str], int] = {}  # (repository, component) → passes run (tests, metrics)

    # -- life -------------------------------------------------------------------------------

    def start(self) -> None:
        if self.access is not None:
            self.scheduler.add_job(self.queue.put, trigger=trigger_of(f"{self.settings.refresh_minutes}m",
                                                                      self.settings.schedule_jitter, "UTC"),
                                   args=[Job(INSTALLATIONS)], kwargs={"note": "schedule"}, id="installations")
            self.queue.put(Job(INSTALLATIONS), note="start")
        self.scheduler.start()  # before the worker, which adds jobs to it
        self._worker = threading.Thread(target=self._work, name="wheelpin-worker", daemon=True)
        self._worker.start()
        log.info("serve.started", github=self.access is not None, webhooks=self.secret is not None)

    def stop(self, grace: float | None = None) -> bool:
        """Take no more jobs; let the running one finish within `grace` seconds. True if it did.
        An abandoned job is repaired by the next start (the loop is level-triggered)."""
        self.queue.close()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        if self._worker is None:
            return True
        self._worker.join(self.settings.shutdown_grace if grace is None else grace)
        finished = not self._worker.is_alive()
        log.info("serve.stopped", finished=finished)
        return finished

    def ready(self) -> tuple[bool, str]:
        """For /readyz: GitHub answered the bot's credentials, and the queue moves."""
        reason = ""
        stats = self.queue.stats()
        if self.access is None:
            reason = "no GitHub credentials (WHEELPIN_GITHUB_APP_ID and WHEELPIN_GITHUB_PRIVATE_KEY_FILE, or WHEELPIN_GITHUB_TOKEN)"
        elif self.secret is None:
            reason = "no webhook secret (WHEELPIN_WEBHOOK_SECRET or WHEELPIN_WEBHOOK_SECRET_FILE)"
        elif self.github_ok is None:
            reason = "GitHub not reached yet"
        elif not self.github_ok:
            reason = f"GitHub refused the bot: {self.github_error}"
        elif self._worker is None or not self._worker.is_alive():
            reason = "the worker is not running"
        elif stats.oldest_wait > self.settings.stuck_after and stats.since_done > self.settings.stuck_after:
            reason = (f"the queue is stuck: nothing has finished for {stats.since_done:.0f} s and a job "
                      f"has waited {stats.oldest_wait:.0f} s")
        elif stats.longest_run > 4 * self.settings.stuck_after:
            reason = f"the queue is stuck: a job has run {stats.longest_run:.0f} s"
        self.metrics.ready.set(0 if reason else 1)
        return (not reason, reason or "ready")

    # -- deliveries (webhook threads) --------------------------------------------------------

    def deliver(self, event: str, delivery: str, payload: dict[str, Any]) -> list[Job]:
        """The jobs one verified delivery asks for, queued. Never does the work itself."""
        repository = (payload.get("repository") or {}).get("full_name") if isinstance(payload.get("repository"), dict) else None
        with self._lock:
            routing = self._routing.get(str(repository), Routing())
        keys = work_for(event, payload, prefix=routing.prefix, base_branches=routing.bases,
                        workflows=routing.workflows)
        jobs = []
        for key in keys:
            for job in jobs_for(key):
                if job.kind == COMMAND:
                    with self._lock:
                        self._comments.setdefault(job, []).append((key.comment, key.seen))
                self.queue.put(job, note=delivery, urgent=job.kind == COMMAND)  # a human waits for a command
                jobs.append(job)
        self.metrics.deliveries.labels(event=event, outcome="queued" if jobs else "ignored").inc()
        log.info("webhook.delivery", delivery=delivery, github_event=event, action=payload.get("action"),
                 repository=repository, queued=[job.kind for job in jobs])
        return jobs

    # -- the worker --------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            taken = self.queue.get()
            if taken is None:
                return
            job, notes = taken
            self._cause = notes[-1] if notes else job.kind  # follow-up jobs carry the delivery on
            ok = False
            self._retry_after = None
            with structlog.contextvars.bound_contextvars(repository=job.repository, job=job.kind,
                                                         component=job.component,
                                                         delivery=notes[-1] if notes else None):
                try:
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
                    self.queue.done(job, ok=ok, retry_after=self._retry_after)

    def run_job(self, job: Job) -> bool:
        """Run one job; False when it should back off before running again."""
        self.metrics.jobs.labels(kind=job.kind).inc()
        if job.kind == INSTALLATIONS:
            if self.access is None:  # started without an App or a token: nothing to list, said once
                if not self._said_no_access:
                    self._said_no_access = True
                    log.warning("installations.ignored", reason="no GitHub credentials: installation events are ignored")
                return True  # done: not retried
            if job.command == GRANTED:  # what was refused for want of a permission may be written now
                state = StateFile(self.settings.cache_dir / "state.sqlite")
                try:
                    state.forget_refusals()
                finally:
                    state.close()
            return self._installations(passes=job.command == GRANTED)
        watched = self.watched.get(job.repository)
        if watched is None:
            log.info("job.unwatched")  # not (or no longer) installed (or another shard's): nothing to do
            with self._lock:
                self._comments.pop(job, None)
            return True
        if job.kind in (REPOSITORY, CONFIG):
            return self._repository(watched, passes=job.kind == REPOSITORY)
        if job.kind == COMPONENT:
            return self._component(watched, str(job.component))
        if job.kind == COMMAND:
            return self._command(watched, job)
        if job.kind == DASHBOARD:
            return self._dashboard(watched)
        raise AssertionError(job.kind)

    def _installations(self, *, passes: bool = False) -> bool:
        """Which repositories to watch. The App's own credentials failing is the bot not
        ready; one installation that cannot be read (suspended, its token refused) keeps
        the repositories it had, is logged, and the job is tried again after a backoff."""
        if self.access is None:  # no App nor token: run_job says so once and never gets here
            return True
        complete = True
        try:
            if self.access.is_app:
                installations = self.access.installations()
            else:
                self.access.check()
        except CredentialsError as exc:
            self.github_ok, self.github_error = False, exc.message
            raise
        self.github_ok, self.github_error = True, None
        if self.access.is_app:
            shard = self.settings.shard
            found: dict[str, GitHubAccess] = {}
            for installation, account in installations:
                if shard is not None and installation not in shard:
                    continue
                access = self.access.for_installation(installation)
                try:
                    found.update((repository, access) for repository in access.repositories())
                except WheelpinError as exc:
                    complete = False
                    log.warning("installation.unreadable", installation=installation, account=account,
                                error=exc.message)
                    found.update((name, kept.access) for name, kept in self.watched.items()
                                 if kept.access.installation_id == installation)
        else:
            found = {repository: self.access for repository in self.settings.watched_repositories}
        for gone in set(self.watched) - set(found):
            self._unschedule(gone)
            del self.watched[gone]
            with self._lock:
                self._routing.pop(gone, None)
            log.info("repository.unwatched", repository=gone)
        for repository, access in found.items():
            if repository not in self.watched or self.watched[repository].access != access:
                self.watched[repository] = Watched(repository, access)
            self.queue.put(Job(REPOSITORY if passes else CONFIG, repository), note=self._cause)
        self.metrics.watched.set(len(self.watched))
        return complete

    def _platform(self, watched: Watched) -> GitHubPlatform:
        if watched.platform is None:
            watched.platform = github_platform(watched.access, watched.repository)
        return watched.platform

    def _repository(self, watched: Watched, *, passes: bool) -> bool:
        """Read the config again; pass every component when `passes` (a push to the base,
        a finished build) or when the config is new or changed. The hourly refresh asks
        without `passes`, so a component's own schedule is kept (`1d` means daily)."""
        platform = self._platform(watched)
        platform.begin_pass()
        try:
            found = read_repository_config(platform, watched.repository)
            reconciler = watched.reconciler
            changed = reconciler is None or found.text != watched.config_text
            if reconciler is None or changed:
                reconciler = watched.reconciler = github_reconciler(
                    access=watched.access, repository=watched.repository, settings=self.settings,
                    registries=self.registries, found=found, platform=platform)
                watched.config_text, watched.config_error = found.text, None
                log.info("config.loaded", path=found.path, base=found.base)
        except ConfigError as exc:  # the repository must fix it; shown on its dashboard, not retried
            watched.reconciler, watched.config_text, watched.config_error = None, None, exc.message
            self._unschedule(watched.repository)
            self.metrics.failures.labels(kind="config").inc()
            log.warning("config.unusable", error=exc.message)
            self.queue.put(Job(DASHBOARD, watched.repository), note=self._cause)
            return True
        config = reconciler.config
        with self._lock:
            self._routing[watched.repository] = Routing.of(config)
        self._schedule(watched.repository, config)
        names = {c.name for c in config.components}
        watched.rows = {name: row for name, row in watched.rows.items() if name in names}
        if passes or changed:
            for component in config.components:
                self.queue.put(Job(COMPONENT, watched.repository, component.name), note=self._cause)
        return True

    def _schedule(self, repository: str, config: Config) -> None:
        wanted = {}
        for component in config.components:
            # the schedule and the zone it is read in: either changing makes the job again
            wanted[f"poll:{repository}:{component.name}"] = (
                component.name, f"{schedule_of(config, component)} {config.defaults.timezone}")
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"poll:{repository}:") and job.id not in wanted:
                job.remove()
                self._schedules.pop(job.id, None)
        for job_id, (name, schedule) in wanted.items():
            if self.scheduler.get_job(job_id) is not None and self._schedules.get(job_id) == schedule:
                continue  # unchanged: keep its next run time
            self.scheduler.add_job(self.queue.put, trigger=trigger_of(schedule.rsplit(" ", 1)[0],
                                                                      self.settings.schedule_jitter,
                                                                      config.defaults.timezone),
                                   args=[Job(COMPONENT, repository, name)], kwargs={"note": "schedule"},
                                   id=job_id, replace_existing=True)
            self._schedules[job_id] = schedule

    def _unschedule(self, repository: str) -> None:
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"poll:{repository}:"):
                job.remove()
                self._schedules.pop(job.id, None)

    def _record(self, watched: Watched, result: ComponentResult, url: str | None = None) -> None:
        previous = watched.rows.get(result.name, Row(result.name))
        failed = result.status == "failed"
        message = result.messages[-1] if result.messages else None
        watched.rows[result.name] = Row(
            result.name, pinned=result.pinned, head=result.head, build=result.build, image=result.image,
            proposal=result.proposal, status=result.status + (f": {message}" if message and not failed else ""),
            last_error=message if failed else previous.last_error,
            last_error_at=time.time() if failed else previous.last_error_at)

    def _component(self, watched: Watched, name: str, **options: bool) -> bool:
        reconciler = watched.reconciler
        if reconciler is None or reconciler.config.get(name) is None:
            log.info("component.unknown")
            return True
        started = time.monotonic()
        result = reconciler.run(only=name, **options)
        platform = reconciler.platform
        http = getattr(platform, "http", None)
        self.metrics.record_pass(result, time.monotonic() - started, watched.repository,
                                 http.traffic.rate_remaining if http is not None else None)
        key = (watched.repository, name)
        self.passes[key] = self.passes.get(key, 0) + 1
        for component in result.components:
            self._record(watched, component)
            log.info("component.pass", status=component.status, commit=component.head,
                     actions=[a.kind for a in component.actions], messages=component.messages)
        self.queue.put(Job(DASHBOARD, watched.repository), note=self._cause)
        waits = [c.retry_after for c in result.components if c.status == "failed" and c.retry_after is not None]
        if waits:  # e.g. GitHub's write limit: the key waits that long rather than hold the worker
            self._retry_after = max(waits)
        return not any(c.status == "failed" and c.error_kind in ("transient", "internal", "credentials")
                       for c in result.components)

    def _command(self, watched: Watched, job: Job) -> bool:
        with self._lock:
            comments = self._comments.pop(job, [])
        done = False
        try:
            done = self._carry_out(watched, job, comments)
            return done
        finally:
            if not done:  # tried again after a backoff: with its comments, reacted to then
                with self._lock:
                    self._comments[job] = comments + self._comments.get(job, [])

    def _carry_out(self, watched: Watched, job: Job, comments: list[tuple[int | None, str | None]]) -> bool:
        """A command from the comments that gave it: refused without write access; not
        done on a closed pull request, nor a skip of a commit the commenter did not see."""
        reconciler = watched.reconciler
        if reconciler is None or job.number is None:
            return True
        platform = self._platform(watched)
        target = platform.pull_target(job.number)
        prefix = reconciler.config.defaults.branch_prefix
        component = (reconciler.config.get(target.branch[len(prefix):])
                     if target and target.branch.startswith(prefix) else None)
        if target is None or component is None:
            log.info("command.not_ours", number=job.number)
            return True

        def react(content: str) -> None:
            for comment, _seen in comments:
                if comment is not None:
                    platform.react(comment, content)

        permission = self._permission(watched, platform, job.sender or "")
        if permission not in WRITERS:
            log.warning("command.refused", sender=job.sender, permission=permission, command=job.command)
            platform.say_once(target.branch, key=f"refused-{job.sender}-{job.command}",
                              text=f"@{job.sender}: `/wheelpin {job.command}` needs write access to this "
                              f"repository (yours is {permission}); nothing was done.")
            return True
        seen = comments[-1][1] if comments else None
        if not target.open:
            log.info("command.closed", number=job.number, command=job.command)
            react("confused")  # the pull request is closed: nothing to act on
            return True
        if job.command == "skip" and seen and target.commit and seen != target.commit:
            log.info("command.moved_on", seen=seen, now=target.commit)
            platform.say_once(target.branch, key=f"moved-{job.sender}-{seen[:12]}",
                              text=f"@{job.sender}: this pull request moved on to `{target.commit[:8]}` since "
                              f"your comment (which saw `{seen[:8]}`); nothing was skipped. Comment "
                              "`/wheelpin skip` again to skip the new commit.")
            react("confused")
            return True
        log.info("command", sender=job.sender, command=job.command, target=component.name)
        if job.command == "skip":  # done once closed: the pass after it is a job of its own
            message = reconciler.skip(component, by=job.sender or "someone")
            log.info("command.done", result=message)
            react("+1")
            self.queue.put(Job(COMPONENT, watched.repository, component.name), note=self._cause)
            return True
        done = self._component(watched, component.name, rebase=job.command == "rebase",
                               recheck=job.command == "recheck")
        if not done:
            return False  # a transient failure: the retry reacts
        row = watched.rows.get(component.name)  # 👍 carried out; 😕 its pass failed (the PR says why)
        react("confused" if row is not None and row.status.startswith("failed") else "+1")
        return True

    def _permission(self, watched: Watched, platform: GitHubPlatform, login: str) -> str:
        """`login`'s access to the repository, read at most once a minute (a burst of
        comments costs one request; a change of access counts within the minute)."""
        now = self.clock()
        known = watched.permissions.get(login)
        if known is None or now - known[1] > PERMISSION_TTL:
            known = watched.permissions[login] = (platform.permission_of(login), now)
        return known[0]

    def _dashboard(self, watched: Watched) -> bool:
        if (watched.reconciler is None and watched.config_error is None) or watched.dashboard_off:
            return True
        platform = self._platform(watched)
        links = platform.open_proposals()
        rows = [replace(row, proposal=links.get(row.proposal, row.proposal) if row.proposal else None)
                for row in watched.rows.values()]
        body = render(rows, repository=watched.repository, config_error=watched.config_error)
        if body == watched.dashboard_body:
            return True
        try:
            number = platform.keep_issue(marker=MARKER, label=LABEL, title=TITLE, body=body,
                                         known=watched.dashboard_number)
        except IssuesDisabled as exc:  # said once; a restart (or issues turned on) tries again
            watched.dashboard_off = True
            log.warning("dashboard.off", error=exc.message)
            return True
        watched.dashboard_body, watched.dashboard_number = body, number
        log.info("dashboard.updated", issue=number)
        return True

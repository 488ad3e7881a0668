"""The repositories the service watches (docs/design.md §2, app/): which ones (the App's
installations, or WHEELPIN_REPOSITORIES with a token, checked), and for each its GitHub
platform, config, reconciler, routing of deliveries and the schedule of its components.
Changed by workers only, a repository's entry by that repository's job and the list itself
by the installations job, which runs alone (app/workqueue.py groups); the routing is read by
webhook threads under a lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from ..adapters.github import Conversation, GitHubConversation, GitHubPlatform
from ..core.config import Config
from ..core.dashboard import Row
from ..core.errors import ConfigError, CredentialsError, WheelpinError
from ..core.jobs import Job, JobKind
from ..loop.runner import Reconciler
from .githubrepo import GitHubAccess, github_platform, github_reconciler, read_repository_config
from .metrics import Metrics
from .schedule import schedule_of, trigger_of
from .settings import Settings
from .wiring import Registries
from .workqueue import WorkQueue

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

log = structlog.get_logger("wheelpin.serve")


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


class WatchList:
    def __init__(self, settings: Settings, access: GitHubAccess | None, *, queue: WorkQueue[Job],
                 scheduler: BackgroundScheduler, metrics: Metrics, registries: Registries) -> None:
        self.settings = settings
        self.access = access
        self.queue = queue
        self.scheduler = scheduler
        self.metrics = metrics
        self.registries = registries
        self.watched: dict[str, Watched] = {}
        self.github_ok: bool | None = None  # None until GitHub was first asked
        self.github_error: str | None = None
        self._routing: dict[str, Routing] = {}
        self._schedules: dict[str, str] = {}  # scheduler job id → the schedule it was made from
        self._lock = threading.Lock()

    def routing(self, repository: str | None) -> Routing:
        with self._lock:
            return self._routing.get(str(repository), Routing())

    def platform(self, watched: Watched) -> GitHubPlatform:
        if watched.platform is None:
            watched.platform = github_platform(watched.access, watched.repository)
        return watched.platform

    def conversation(self, watched: Watched) -> Conversation:
        return GitHubConversation(self.platform(watched))

    # -- which repositories -----------------------------------------------------------------

    def refresh(self, *, passes: bool, cause: str) -> bool:
        """Which repositories to watch. The App's own credentials failing is the bot not
        ready; one installation that cannot be read (suspended, its token refused) keeps
        the repositories it had, is logged, and the job is tried again after a backoff."""
        if self.access is None:
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
            self.watched[repository].dashboard_off = False  # issues turned on since: tried again (hourly)
            self.queue.put(Job(JobKind.REPOSITORY if passes else JobKind.CONFIG, repository), note=cause)
        self.metrics.watched.set(len(self.watched))
        return complete

    # -- one repository's config --------------------------------------------------------------

    def load(self, watched: Watched, *, passes: bool, cause: str) -> bool:
        """Read the config again; pass every component when `passes` (a push to the base,
        a finished build) or when the config is new or changed. The hourly refresh asks
        without `passes`, so a component's own schedule is kept (`1d` means daily)."""
        platform = self.platform(watched)
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
            self.queue.put(Job(JobKind.DASHBOARD, watched.repository), note=cause)
            return True
        config = reconciler.config
        with self._lock:
            self._routing[watched.repository] = Routing.of(config)
        self._schedule(watched.repository, config)
        names = {c.name for c in config.components}
        watched.rows = {name: row for name, row in watched.rows.items() if name in names}
        if passes or changed:
            for component in config.components:
                self.queue.put(Job(JobKind.COMPONENT, watched.repository, component.name), note=cause)
        return True

    # -- the schedule -------------------------------------------------------------------------

    def _schedule(self, repository: str, config: Config) -> None:
        scheduler = self.scheduler
        wanted = {}
        for component in config.components:
            # the schedule and the zone it is read in: either changing makes the job again
            wanted[f"poll:{repository}:{component.name}"] = (
                component.name, f"{schedule_of(config, component)} {config.defaults.timezone}")
        for job in scheduler.get_jobs():
            if job.id.startswith(f"poll:{repository}:") and job.id not in wanted:
                job.remove()
                self._schedules.pop(job.id, None)
        for job_id, (name, schedule) in wanted.items():
            if scheduler.get_job(job_id) is not None and self._schedules.get(job_id) == schedule:
                continue  # unchanged: keep its next run time
            scheduler.add_job(self.queue.put, trigger=trigger_of(schedule.rsplit(" ", 1)[0],
                                                                 self.settings.schedule_jitter,
                                                                 config.defaults.timezone),
                              args=[Job(JobKind.COMPONENT, repository, name)], kwargs={"note": "schedule"},
                              id=job_id, replace_existing=True)
            self._schedules[job_id] = schedule

    def _unschedule(self, repository: str) -> None:
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"poll:{repository}:"):
                job.remove()
                self._schedules.pop(job.id, None)

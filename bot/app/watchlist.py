"""The repositories the service watches (docs/design.md §2, app/): which ones (as the forge
answers, app/forge.py: a GitHub App's installations, or WHEELPIN_REPOSITORIES with a token,
checked), and for each its platform, config, reconciler, routing of deliveries and the
schedule of its components.
Changed by workers only, a repository's entry by that repository's job and the list itself
by the installations job, which runs alone (app/workqueue.py groups); the routing is read by
webhook threads under a lock.

With a database (app/shared.py) the list, the routing and the schedule live in PostgreSQL,
written by whichever replica ran the job and read by all: a replica builds its entry for a
repository when it first takes one of its jobs, and drops it once the list no longer has it.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..adapters import logs
from ..adapters.platform import Platform
from ..core.config.model import Config
from ..core.errors import ConfigError, CredentialsError, WheelpinError
from ..loop.runner import Reconciler
from .conversation import Conversation, Row
from .forge import Forge, WatchedRepository
from .jobs import Intake, Job, JobKind, Routing, repository_key
from .metrics import Metrics
from .schedule import next_pass, schedule_of, trigger_of
from .settings import Settings
from .wiring import Registries, reconciler_maker

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

    from .shared import Shared

log = logs.get_logger("wheelpin.serve")
# How long after a delivery asked for the list to be read again (a repository renamed,
# transferred or added) a job of a repository not on it waits for that read, not dropped
ASKED_FOR = 600.0


def digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Watched:
    repository: str
    grant: int | None = None  # which of the forge's grants reaches it (app/forge.py WatchedRepository)
    reconciler: Reconciler | None = None
    config_text: str | None = None
    config_error: str | None = None
    rows: dict[str, Row] = field(default_factory=dict)
    dashboard_body: str | None = None
    dashboard_number: int | None = None  # read first next time: a label a human removed does not lose it
    permissions: dict[str, tuple[str, float]] = field(default_factory=dict)  # login → (level, when read)
    platform: Platform | None = None  # kept: its token, ETags and caches serve every job
    dashboard_off: bool = False  # the repository has issues turned off (410)
    shared: Shared | None = None  # with a database: the dashboard's rows are kept there
    config_digest: str | None = None  # of the config this replica's reconciler was made from (or its error)
    shared_config: str | None = None  # with a database: that of the config the last replica to read it found

    @property
    def where(self) -> WatchedRepository:
        return WatchedRepository(self.repository, self.grant)


class WatchList:
    def __init__(
        self,
        settings: Settings,
        forge: Forge,
        *,
        queue: Intake,
        scheduler: BackgroundScheduler | None,
        metrics: Metrics,
        registries: Registries,
        shared: Shared | None = None,
    ) -> None:
        self.settings = settings
        self.forge = forge
        self.watching = forge.missing_credentials() is None  # without credentials: nothing to list
        self.queue = queue
        self.scheduler = scheduler  # the embedded schedule; None with a database (`shared`)
        self.shared = shared
        self.metrics = metrics
        self.registries = registries
        # repository_key(name) → its entry, named as the forge last listed it: a delivery that
        # spells the name in another case is about the same repository
        self.watched: dict[str, Watched] = {}
        self.forge_ok: bool | None = None  # None until the forge was first asked
        self.forge_error: str | None = None
        self._routing: dict[str, Routing] = {}  # by repository_key, as `watched`
        self._schedules: dict[str, str] = {}  # scheduler job id → the schedule it was made from
        self._lock = threading.Lock()
        self._asked = -ASKED_FOR  # when (monotonic) a delivery last asked for the list to be read again
        self._read = 0.0  # when the last refresh that succeeded started

    def routing(self, repository: str | None) -> Routing:
        if self.shared is not None:  # any replica routes any delivery
            found = self.shared.routing(str(repository)) if repository else None
            return Routing.from_json(found) if found else Routing()
        with self._lock:
            return self._routing.get(repository_key(str(repository)), Routing())

    def get(self, repository: str) -> Watched | None:
        """The entry of a repository watched (its name in any case), None when it is not (or
        no longer). With a database the list there decides, and this replica's entry is
        built at first use."""
        key = repository_key(repository)
        if self.shared is None:
            return self.watched.get(key)
        listed, grant, config = self.shared.installation_of(repository)
        with self._lock:
            if listed is None or not self.watching:
                self.watched.pop(key, None)
                return None
            kept = self.watched.get(key)
            if kept is None or kept.grant != grant or kept.repository != listed:
                kept = self.watched[key] = Watched(listed, grant, shared=self.shared)
            kept.shared_config = config
            return kept

    def kept(self, repository: str) -> Watched | None:
        """This replica's entry of a repository (its name in any case), as it is: the list
        is not read again."""
        return self.watched.get(repository_key(repository))

    def asked(self) -> None:
        """A delivery asked for the list to be read again (webhook threads)."""
        self._asked = time.monotonic()

    def awaited(self) -> bool:
        """A delivery asked, a moment ago, for the list to be read again, and it has not been
        since: a repository not on it may be on it then (the delivery of a rename came
        before those that name the new name, whose jobs may run first: the installations
        job waits for every running job, and a command is taken before others). Without a
        database only: with one, another replica may have heard the delivery."""
        now = time.monotonic()
        return self.shared is None and self._read < self._asked and now - self._asked < ASKED_FOR

    def platform(self, watched: Watched) -> Platform:
        if watched.platform is None:
            watched.platform = self.forge.platform(watched.where)
        return watched.platform

    def conversation(self, watched: Watched) -> Conversation:
        return self.forge.conversation(self.platform(watched))

    # -- which repositories -----------------------------------------------------------------

    def check(self) -> None:
        """Ask the forge whether it takes the bot's credentials, without reading the list (a
        replica that has not run the installations job yet: its readiness)."""
        if not self.watching:
            return
        try:
            self.forge.check()
        except CredentialsError as exc:
            self.forge_ok, self.forge_error = False, exc.message
        except WheelpinError as exc:  # the forge not reached: asked again at the next probe
            log.warning("forge.unreachable", forge=self.forge.name, error=exc.message)
        else:
            self.forge_ok, self.forge_error = True, None

    def refresh(self, *, passes: bool, cause: str) -> bool:
        """Which repositories to watch. The forge refusing the bot's credentials is the bot
        not ready; a grant that cannot be read (an App installation's token refused) keeps
        the repositories it had, and the job is tried again after a backoff."""
        if not self.watching:
            return True
        started = time.monotonic()
        try:
            answer = self.forge.repositories()
        except CredentialsError as exc:
            self.forge_ok, self.forge_error = False, exc.message
            raise
        self.forge_ok, self.forge_error = True, None
        self._read = started
        found = {listed.name: listed.grant for listed in answer.repositories}
        for unread in answer.unread:
            found.update(self._kept(unread))
        named = {repository_key(name): name for name in found}  # the forge's spelling of each
        if self.shared is not None:
            self.shared.set_watched(found)
            with self._lock:
                self.watched = {key: kept for key, kept in self.watched.items() if named.get(key) == kept.repository}
            for repository in found:
                self.queue.put(Job(JobKind.REPOSITORY if passes else JobKind.CONFIG, repository), note=cause)
            self.metrics.watched.set(len(found))
            return not answer.unread
        for key, kept in list(self.watched.items()):
            if named.get(key) == kept.repository:
                continue
            # gone, or renamed in another case only: its schedule was made under the old name
            self._unschedule(kept.repository)
            del self.watched[key]
            with self._lock:
                self._routing.pop(key, None)
            log.info("repository.unwatched", repository=kept.repository)
        for key, repository in named.items():
            reached_by = found[repository]
            if key not in self.watched or self.watched[key].grant != reached_by:
                self.watched[key] = Watched(repository, reached_by)
            self.watched[key].dashboard_off = False  # issues turned on since: tried again (hourly)
            self.queue.put(Job(JobKind.REPOSITORY if passes else JobKind.CONFIG, repository), note=cause)
        self.metrics.watched.set(len(self.watched))
        return not answer.unread

    def _kept(self, grant: int) -> dict[str, int | None]:
        """The repositories a grant had when it was last read."""
        if self.shared is not None:
            return {name: grant for name, had in self.shared.watched().items() if had == grant}
        return {kept.repository: grant for kept in self.watched.values() if kept.grant == grant}

    # -- one repository's config --------------------------------------------------------------

    def load(self, watched: Watched, *, passes: bool, cause: str, catch_up: bool = False) -> bool:
        """Read the config again; pass every component when `passes` (a push to the base,
        a finished build) or when the config is new or changed. The hourly refresh asks
        without `passes`, so a component's own schedule is kept (`1d` means daily).
        `catch_up`: another replica read this config already (its routing, schedule and
        passes are done): only this replica's reconciler is made from it."""
        platform = self.platform(watched)
        platform.begin_pass()
        try:
            # without passes (the hourly refresh, a default branch changed): the repository's
            # default branch is read again too; a pass reads it again only when it is gone
            found = self.forge.config(platform, watched.repository, reread=not passes and not catch_up)
            reconciler = watched.reconciler
            changed = reconciler is None or found.text != watched.config_text
            if reconciler is None or changed:
                reconciler = watched.reconciler = self.forge.reconciler(
                    platform,
                    watched.repository,
                    found,
                    host_paths=self.settings.allow_host_paths,
                    make=reconciler_maker(self.settings, self.registries),
                )
                watched.config_text, watched.config_error = found.text, None
                log.info("config.loaded", path=found.path, base=found.base)
            watched.config_digest = digest(found.text)
        except ConfigError as exc:  # the repository must fix it; shown on its dashboard, not retried
            watched.reconciler, watched.config_text, watched.config_error = None, None, exc.message
            watched.config_digest = "error:" + digest(exc.message)
            if catch_up:
                return True
            if self.shared is not None:
                self.shared.set_config(watched.repository, None, watched.config_digest)
            self._unschedule(watched.repository)
            self.metrics.failures.labels(kind="config").inc()
            log.warning("config.unusable", error=exc.message)
            self.queue.put(Job(JobKind.DASHBOARD, watched.repository), note=cause)
            return True
        config = reconciler.config
        names = {c.name for c in config.components}
        watched.rows = {name: row for name, row in watched.rows.items() if name in names}
        if catch_up:
            return True
        if self.shared is not None:
            self.shared.set_config(watched.repository, Routing.of(config).to_json(), watched.config_digest)
        with self._lock:
            self._routing[repository_key(watched.repository)] = Routing.of(config)
        self._schedule(watched.repository, config)
        if passes or changed:
            for component in config.components:
                self.queue.put(Job(JobKind.COMPONENT, watched.repository, component.name), note=cause)
        return True

    def current(self, watched: Watched, *, cause: str) -> None:
        """With a database: this replica's reconciler made from the config the last replica
        to read it found (read again here when that changed, or was never read here)."""
        if self.shared is None:
            return
        if watched.config_digest is None or watched.config_digest != watched.shared_config:
            self.load(watched, passes=False, cause=cause, catch_up=watched.shared_config is not None)

    # -- the schedule -------------------------------------------------------------------------

    def _schedule(self, repository: str, config: Config) -> None:
        if self.shared is not None:
            # the schedule and the zone it is read in: either changing makes it due afresh
            self.shared.schedule(
                repository,
                {c.name: f"{schedule_of(config, c)} {config.defaults.timezone}" for c in config.components},
                first_due=lambda spec: self.next_due(spec, time.time()),
            )
            return
        scheduler = self.scheduler
        assert scheduler is not None
        wanted = {}
        for component in config.components:
            # the schedule and the zone it is read in: either changing makes the job again
            wanted[f"poll:{repository}:{component.name}"] = (
                component.name,
                f"{schedule_of(config, component)} {config.defaults.timezone}",
            )
        for job in scheduler.get_jobs():
            if job.id.startswith(f"poll:{repository}:") and job.id not in wanted:
                job.remove()
                self._schedules.pop(job.id, None)
        for job_id, (name, schedule) in wanted.items():
            if scheduler.get_job(job_id) is not None and self._schedules.get(job_id) == schedule:
                continue  # unchanged: keep its next run time
            scheduler.add_job(
                self.queue.put,
                trigger=trigger_of(schedule.rsplit(" ", 1)[0], self.settings.schedule_jitter, config.defaults.timezone),
                args=[Job(JobKind.COMPONENT, repository, name)],
                kwargs={"note": "schedule"},
                id=job_id,
                replace_existing=True,
            )
            self._schedules[job_id] = schedule

    def next_due(self, spec: str, now: float) -> float:
        """When a schedule (`30m` or a crontab line, then its time zone) is next due after
        `now` (seconds since the epoch), with up to WHEELPIN_SCHEDULE_JITTER seconds added."""
        import datetime

        schedule, timezone = spec.rsplit(" ", 1)
        after = datetime.datetime.fromtimestamp(now, datetime.UTC)
        jitter = random.uniform(0, self.settings.schedule_jitter) if self.settings.schedule_jitter else 0.0
        return next_pass([schedule], after, timezone).timestamp() + jitter

    def _unschedule(self, repository: str) -> None:
        if self.shared is not None:
            self.shared.unschedule(repository)
            return
        assert self.scheduler is not None
        for job in self.scheduler.get_jobs():
            if job.id.startswith(f"poll:{repository}:"):
                job.remove()
                self._schedules.pop(job.id, None)

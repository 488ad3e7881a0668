"""When the loop looks upstream again: a config's schedule (`30m`, `6h`, or a crontab
line read as cron reads it, in `[defaults].timezone`; docs/design.md §3) as an
APScheduler trigger. `wheelpin serve` schedules a job per component with it; `wheelpin
reconcile` without `--once` sleeps until the soonest one and says when that is.

APScheduler stays the scheduler, but its own `CronTrigger.from_crontab` counts weekdays
from Monday = 0 and refuses 7, which 3.x keeps for compatibility
(https://github.com/agronholm/apscheduler/issues/286, /issues/1102): `0 0 * * 1-5` would
fire Tuesday to Saturday. So a crontab line is evaluated by cronsim, which follows cron
(crontab(5), https://man7.org/linux/man-pages/man5/crontab.5.html: 0 and 7 are Sunday,
names work, a restricted day of month or day of week either one matching)."""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Collection, Iterable
from typing import Any

from apscheduler.triggers.base import BaseTrigger
from cronsim import CronSim

from ..core.config.model import Component, Config
from ..core.config.schedules import crontab_fields, interval_minutes

_TICK = datetime.timedelta(microseconds=1)


def zone(name: str) -> datetime.tzinfo:
    """The time zone of a config's `[defaults].timezone` (already checked to be an IANA name)."""
    import zoneinfo

    return datetime.UTC if name == "UTC" else zoneinfo.ZoneInfo(name)


class CrontabTrigger(BaseTrigger):  # type: ignore[misc]  # apscheduler has no types
    """Fires when a crontab line says, read in a time zone as cron reads it (cronsim's
    evaluation, DST changes included: a time a spring-forward skips fires at the first
    minute after it, one a fall-back repeats fires once); up to `jitter` seconds later."""

    __slots__ = ("fields", "timezone", "jitter")

    def __init__(self, schedule: str, timezone: str = "UTC", jitter: int | None = None) -> None:
        self.fields = crontab_fields(schedule)
        self.timezone = timezone
        self.jitter = jitter or None

    def get_next_fire_time(
        self, previous_fire_time: datetime.datetime | None, now: datetime.datetime
    ) -> datetime.datetime | None:
        """As APScheduler's own CronTrigger: the first time after the previous one (even
        if that is before `now`, so that the scheduler sees a missed run), else at or after
        `now`; None when the line never fires again."""
        start = now.astimezone(datetime.UTC)
        if previous_fire_time is not None:
            previous = previous_fire_time.astimezone(datetime.UTC)
            start = min(start, previous + _TICK)
            if start == previous:
                start += _TICK
        fire = self._first_from(start)
        if fire is None:
            return None
        jittered: datetime.datetime = self._apply_jitter(fire.astimezone(datetime.UTC), self.jitter, now)
        return jittered.astimezone(zone(self.timezone))

    def _first_from(self, start: datetime.datetime) -> datetime.datetime | None:
        """The first firing at or after `start` (cronsim gives those strictly after a time)."""
        times = CronSim(self.fields, (start - _TICK).astimezone(zone(self.timezone)))
        # A wall-clock time that a fall-back repeats is given once, at its first instant:
        # from within the repeated hour the next one may be earlier than `start`; skip it.
        for fire in itertools.islice(times, 10_000):
            if fire.astimezone(datetime.UTC) >= start:
                return fire
        return None

    def __str__(self) -> str:
        return f"cron[{self.fields}, {self.timezone}]"

    def __repr__(self) -> str:
        return f"<CrontabTrigger ({self.fields!r}, timezone={self.timezone!r}, jitter={self.jitter})>"


def trigger_of(schedule: str, jitter: int, timezone: str) -> Any:
    """An APScheduler trigger for a config's schedule, with up to `jitter` seconds added; a
    crontab line is read in `timezone` (an interval does not care)."""
    from apscheduler.triggers.interval import IntervalTrigger

    minutes = interval_minutes(schedule)
    if minutes is not None:
        return IntervalTrigger(minutes=minutes, jitter=jitter or None, timezone="UTC")
    return CrontabTrigger(schedule, timezone, jitter)


def schedule_of(config: Config, component: Component) -> str:
    """A component's schedule: its own, else the repository's default."""
    return component.schedule or config.defaults.schedule


def schedules_of(config: Config, only: str | Collection[str] | None = None) -> list[str]:
    """Each component's schedule (or only those of the components named)."""
    chosen = {only} if isinstance(only, str) else None if only is None else set(only)
    return [
        schedule_of(config, component) for component in config.components if chosen is None or component.name in chosen
    ]


def next_pass(schedules: Iterable[str], after: datetime.datetime, timezone: str = "UTC") -> datetime.datetime:
    """The soonest time after `after` that any of `schedules` is due (an interval counts
    from `after`; a crontab line is read in `timezone`), in UTC; `after` plus 30 minutes
    when there are none."""
    due = []
    for schedule in schedules:
        minutes = interval_minutes(schedule)
        if minutes is not None:
            due.append(after + datetime.timedelta(minutes=minutes))
        else:
            fire = CrontabTrigger(schedule, timezone).get_next_fire_time(after, after)
            if fire is not None:
                due.append(fire)
    return min(due, default=after + datetime.timedelta(minutes=30)).astimezone(datetime.UTC)


def said(due: datetime.datetime, timezone: str = "UTC") -> str:
    """A time as the loop says it: in the config's time zone, and in UTC when that is not it
    (`2026-12-07 09:00:00 Europe/Berlin (08:00:00 UTC)`)."""
    local = f"{due.astimezone(zone(timezone)):%Y-%m-%d %H:%M:%S} {timezone}"
    return local if timezone == "UTC" else f"{local} ({due.astimezone(datetime.UTC):%H:%M:%S} UTC)"

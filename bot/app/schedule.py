"""When the loop looks upstream again: a config's schedule (`30m`, `6h`, or a crontab
line, docs/design.md §3) as an APScheduler trigger. `wheelpin serve` schedules a job per
component with it; `wheelpin reconcile` without `--once` sleeps until the soonest one."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ..core.config import Component, Config, interval_minutes


def trigger_of(schedule: str, jitter: int) -> Any:
    """An APScheduler trigger for a config's schedule, with up to `jitter` seconds added."""
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    minutes = interval_minutes(schedule)
    if minutes is not None:
        return IntervalTrigger(minutes=minutes, jitter=jitter or None, timezone="UTC")
    trigger = CronTrigger.from_crontab(schedule, timezone="UTC")
    trigger.jitter = jitter or None
    return trigger


def schedule_of(config: Config, component: Component) -> str:
    """A component's schedule: its own, else the repository's default."""
    return component.schedule or config.defaults.schedule


def schedules_of(config: Config, only: str | None = None) -> list[str]:
    """Each component's schedule (or only that of component `only`)."""
    return [schedule_of(config, component)
            for component in config.components if only is None or component.name == only]


def next_pass(schedules: Iterable[str], after: datetime.datetime) -> datetime.datetime:
    """The soonest time after `after` that any of `schedules` is due (an interval counts
    from `after`); `after` plus 30 minutes when there are none."""
    due = []
    for schedule in schedules:
        trigger = trigger_of(schedule, 0)
        if interval_minutes(schedule) is not None:
            due.append(after + trigger.interval)
        else:
            fire = trigger.get_next_fire_time(None, after)
            if fire is not None:
                due.append(fire)
    return min(due, default=after + datetime.timedelta(minutes=30))

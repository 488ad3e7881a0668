"""The schedule grammar of the config (docs/design.md §3 Config): an interval (`30m`, `6h`,
`1d`) or a 5-field crontab line read as crontab(5) reads it, and the IANA time zone it is
read in. Pure: the checks the config model runs, and what `app/schedule.py` evaluates."""

from __future__ import annotations

import datetime
import functools
import re
from itertools import pairwise
from typing import Any

_INTERVAL = re.compile(r"^([0-9]+)\s*(m|h|d)$")
MIN_INTERVAL = 5  # minutes
MAX_INTERVAL = 366 * 1440  # minutes: a year, a leap one too


def check_schedule(value: str) -> str:
    """A 5-field crontab line (`*/30 * * * 1-5`, `@daily`; read as cron reads it, see
    `crontab_fields`) or an interval (`30m`, `6h`, `1d`) of at least `MIN_INTERVAL`
    minutes (a poll is a `git ls-remote` and GitHub requests) and at most a year."""
    match = _INTERVAL.match(value.strip())
    if match:
        # a digit count first: int() of thousands of digits is slow, then refused
        if len(match.group(1).lstrip("0")) > 9 or (interval_minutes(value) or 0) > MAX_INTERVAL:
            raise ValueError(f"schedule {_shown(value)} is longer than {MAX_INTERVAL // 1440} days")
        if (interval_minutes(value) or 0) < MIN_INTERVAL:
            raise ValueError(f"schedule {_shown(value)} is shorter than {MIN_INTERVAL} minutes")
        return value
    from cronsim import CronSim

    fields = crontab_fields(value)
    try:
        cron = CronSim(fields, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
        next(cron)
    except StopIteration:
        raise ValueError(f"schedule {_shown(value)} never fires") from None
    times = sorted(hour * 60 + minute for hour in cron.hours for minute in cron.minutes)
    gaps = [later - earlier for earlier, later in pairwise(times)]
    if min(gaps, default=1440) < MIN_INTERVAL or (
        times[0] + 1440 - times[-1] < MIN_INTERVAL and _two_days_running(cron)
    ):
        raise ValueError(f"schedule {_shown(value)} fires more often than every {MIN_INTERVAL} minutes")
    return value


# crontab(5) (https://man7.org/linux/man-pages/man5/crontab.5.html): these shortcuts stand
# for these lines; `@reboot` means nothing to a loop that is already running.
_SHORTCUTS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def crontab_fields(schedule: str) -> str:
    """The five fields of a crontab line, a shortcut (`@daily`) spelled out; a ValueError
    (one sentence) when it is not one. The line is read by cronsim as cron reads it
    (crontab(5)): day of week 0 and 7 are Sunday, names (`MON-FRI`, `JAN`) work, and when
    both day of month and day of week are restricted either one matching is enough.
    APScheduler 3's own `CronTrigger.from_crontab` counts Monday as 0 and refuses 7, which
    its maintainers say 3.x keeps (agronholm/apscheduler#286, #1102)."""
    from cronsim import CronSim, CronSimError

    fields = _SHORTCUTS.get(schedule.strip().lower(), schedule.strip())
    if fields.startswith("@"):
        raise ValueError(f"schedule {_shown(schedule)} is not a crontab shortcut (use one of {', '.join(_SHORTCUTS)})")
    if len(fields.split()) != 5:
        raise ValueError(
            f"schedule {_shown(schedule)} is neither an interval (30m, 6h) nor a crontab line "
            "of five fields (minute hour day-of-month month day-of-week)"
        )
    try:
        CronSim(fields, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    except (CronSimError, ValueError) as exc:  # ValueError: int() of thousands of digits
        problem = (
            f"its {str(exc).removeprefix('Bad ')} field is wrong"
            if isinstance(exc, CronSimError)
            else "a number in it is far too long"
        )
        raise ValueError(
            f"schedule {_shown(schedule)} is neither an interval (30m, 6h) nor a crontab line: {problem}"
        ) from None
    return " ".join(fields.split())


def _two_days_running(cron: Any) -> bool:
    """Whether a crontab line fires on two days in a row (over 28 years: the calendar's
    weekdays repeat then), so that its last time of a day and first of the next both come."""
    day = datetime.date(2026, 1, 1)
    matched = False
    for _ in range(28 * 366):
        matches = day.month in cron.months and cron.match_day(day)
        if matched and matches:
            return True
        matched, day = matches, day + datetime.timedelta(days=1)
    return False


def _shown(schedule: str) -> str:
    """A schedule as an error names it: quoted, and cut when absurdly long."""
    return repr(schedule if len(schedule) <= 60 else schedule[:57] + "...")


def interval_minutes(schedule: str) -> int | None:
    """The minutes of an interval schedule (`30m`, `6h`, `1d`); None for a crontab line."""
    match = _INTERVAL.match(schedule.strip())
    if not match:
        return None
    return int(match.group(1)) * {"m": 1, "h": 60, "d": 1440}[match.group(2)]


def check_timezone(value: str) -> str:
    """An IANA time zone name (`Europe/Berlin`, `UTC`) that zoneinfo knows."""
    import zoneinfo

    try:
        if value in _zone_names():
            zoneinfo.ZoneInfo(value)
            return value
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    raise ValueError(f"timezone {_shown(value)} is not an IANA time zone name such as Europe/Berlin or UTC")


@functools.cache
def _zone_names() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones()) | {"UTC"}

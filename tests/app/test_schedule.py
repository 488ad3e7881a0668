"""When the loop passes next: intervals count from now, crontab lines as cron reads them
(crontab(5), https://man7.org/linux/man-pages/man5/crontab.5.html) in the config's time
zone, the soonest wins; the same trigger in a real APScheduler scheduler, and the time
`wheelpin reconcile` says.

APScheduler 3's own `CronTrigger.from_crontab` counts Monday as 0 and refuses 7 (kept in
3.x: https://github.com/agronholm/apscheduler/issues/286 and /issues/1102), which is what
the weekday tests below catch."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.app.schedule import next_pass, trigger_of
from bot.core.config.schedules import MIN_INTERVAL, check_schedule
from tests.app.worlds import World

UTC = datetime.UTC
BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
NOW = datetime.datetime(2026, 12, 3, 6, 10, 30, tzinfo=UTC)
SUNDAY = datetime.datetime(2026, 1, 4, 12, 0, tzinfo=UTC)  # a Sunday, noon


def test_an_interval_counts_from_now() -> None:
    assert next_pass(["30m"], NOW) == NOW + datetime.timedelta(minutes=30)
    assert next_pass(["6h", "1d"], NOW) == NOW + datetime.timedelta(hours=6)


def test_a_crontab_line_is_read_in_utc() -> None:
    assert next_pass(["0 3 * * *"], NOW) == datetime.datetime(2026, 12, 4, 3, 0, tzinfo=UTC)
    assert next_pass(["*/15 * * * *"], NOW) == datetime.datetime(2026, 12, 3, 6, 15, tzinfo=UTC)


def test_the_soonest_schedule_wins_and_none_means_half_an_hour() -> None:
    assert next_pass(["6h", "*/15 * * * *", "30m"], NOW) == datetime.datetime(2026, 12, 3, 6, 15, tzinfo=UTC)
    assert next_pass([], NOW) == NOW + datetime.timedelta(minutes=30)


def passes(schedule: str, after: datetime.datetime, count: int, timezone: str = "UTC") -> list[datetime.datetime]:
    """The next `count` times the loop passes on one schedule, each found from the one before."""
    times = []
    for _ in range(count):
        after = next_pass([schedule], after, timezone)
        times.append(after)
    return times


def days(times: list[datetime.datetime]) -> list[str]:
    return [f"{t:%a %d}" for t in times]


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        # 2026-01-04 is a Sunday: Monday to Friday is the 5th to the 9th, then the 12th
        ("0 0 * * 1-5", ["Mon 05", "Tue 06", "Wed 07", "Thu 08", "Fri 09", "Mon 12"]),
        ("0 0 * * MON-FRI", ["Mon 05", "Tue 06", "Wed 07", "Thu 08", "Fri 09", "Mon 12"]),
        ("0 0 * * mon,wed,fri", ["Mon 05", "Wed 07", "Fri 09", "Mon 12", "Wed 14", "Fri 16"]),
        ("0 0 * * 0", ["Sun 11", "Sun 18", "Sun 25", "Sun 01", "Sun 08", "Sun 15"]),
        ("0 0 * * 7", ["Sun 11", "Sun 18", "Sun 25", "Sun 01", "Sun 08", "Sun 15"]),
        ("0 0 * * SUN", ["Sun 11", "Sun 18", "Sun 25", "Sun 01", "Sun 08", "Sun 15"]),
        ("0 0 * * 5-7", ["Fri 09", "Sat 10", "Sun 11", "Fri 16", "Sat 17", "Sun 18"]),
        ("0 0 * * 6,0", ["Sat 10", "Sun 11", "Sat 17", "Sun 18", "Sat 24", "Sun 25"]),
        ("@weekly", ["Sun 11", "Sun 18", "Sun 25", "Sun 01", "Sun 08", "Sun 15"]),
        # both days restricted: either one matching is enough (crontab(5)), Fridays and the 13th
        ("0 0 13 * 5", ["Fri 09", "Tue 13", "Fri 16", "Fri 23", "Fri 30", "Fri 06"]),
        ("0 0 * FEB 1", ["Mon 02", "Mon 09", "Mon 16", "Mon 23", "Mon 01", "Mon 08"]),
    ],
)
def test_weekdays_and_names_are_crons(schedule: str, expected: list[str]) -> None:
    assert days(passes(schedule, SUNDAY, 6)) == expected


def test_shortcuts_are_crons() -> None:
    assert passes("@daily", SUNDAY, 2) == [
        datetime.datetime(2026, 1, 5, tzinfo=UTC),
        datetime.datetime(2026, 1, 6, tzinfo=UTC),
    ]
    assert passes("@hourly", SUNDAY, 2) == [SUNDAY + datetime.timedelta(hours=1), SUNDAY + datetime.timedelta(hours=2)]
    assert passes("@monthly", SUNDAY, 1) == [datetime.datetime(2026, 2, 1, tzinfo=UTC)]


def test_a_crontab_line_is_read_in_the_configs_timezone() -> None:
    # 09:00 in Berlin is 08:00 UTC in winter (CET), 07:00 UTC in summer (CEST)
    assert passes("0 9 * * 1-5", SUNDAY, 2, "Europe/Berlin") == [
        datetime.datetime(2026, 1, 5, 8, 0, tzinfo=UTC),
        datetime.datetime(2026, 1, 6, 8, 0, tzinfo=UTC),
    ]
    july = datetime.datetime(2026, 7, 5, 12, 0, tzinfo=UTC)  # a Sunday
    assert passes("0 9 * * 1-5", july, 1, "Europe/Berlin") == [datetime.datetime(2026, 7, 6, 7, 0, tzinfo=UTC)]
    # a Berlin Monday starts on Sunday 23:00 UTC: `0 0 * * 1` there is a Sunday in UTC
    assert passes("0 0 * * 1", SUNDAY, 1, "Europe/Berlin") == [datetime.datetime(2026, 1, 4, 23, 0, tzinfo=UTC)]
    # intervals do not care
    assert next_pass(["30m"], NOW, "Europe/Berlin") == NOW + datetime.timedelta(minutes=30)


def test_the_days_the_clocks_change() -> None:
    """cronsim's reading, which is Debian cron's: on 2026-03-29 Berlin skips 02:00-03:00,
    so `30 2 * * *` fires at 03:00 CEST; on 2026-10-25 it has 02:00-03:00 twice, and the
    line fires once, at the first; a line of every-hour steps fires in both."""
    spring = passes("30 2 * * *", datetime.datetime(2026, 3, 27, 12, tzinfo=UTC), 3, "Europe/Berlin")
    assert [t.astimezone(BERLIN).isoformat() for t in spring] == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    autumn = passes("30 2 * * *", datetime.datetime(2026, 10, 24, 12, tzinfo=UTC), 2, "Europe/Berlin")
    assert [t.astimezone(BERLIN).isoformat() for t in autumn] == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    # from inside the repeated hour (02:10 CET, the second one), not back to 02:30 CEST
    second = datetime.datetime(2026, 10, 25, 1, 10, tzinfo=UTC)
    assert next_pass(["30 2 * * *"], second, "Europe/Berlin") == datetime.datetime(2026, 10, 26, 1, 30, tzinfo=UTC)
    hourly = passes("30 * * * *", datetime.datetime(2026, 10, 24, 23, 45, tzinfo=UTC), 3, "Europe/Berlin")
    assert hourly == [datetime.datetime(2026, 10, 25, h, 30, tzinfo=UTC) for h in (0, 1, 2)]


def test_the_trigger_in_a_real_scheduler() -> None:
    """APScheduler's BackgroundScheduler, as `wheelpin serve` makes it: the next run time it
    computes, and the runs it finds missed after a paused week (its own loop asking the
    trigger again and again with the previous fire time)."""
    from apscheduler.schedulers.background import BackgroundScheduler

    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.start(paused=True)
    try:
        job = scheduler.add_job(print, trigger=trigger_of("0 0 * * 1-5", 0, "Europe/Berlin"), id="poll")
        assert "0 0 * * 1-5" in str(job.trigger) and "Europe/Berlin" in str(job.trigger)
        first = job.next_run_time.astimezone(BERLIN)
        assert (first.hour, first.minute, first.isoweekday() <= 5) == (0, 0, True)
        assert first - datetime.datetime.now(UTC) <= datetime.timedelta(days=3, minutes=1)  # Fri → Mon

        job.next_run_time = datetime.datetime(2026, 1, 4, 12, tzinfo=BERLIN)  # as if due on a Sunday
        missed = job._get_run_times(datetime.datetime(2026, 1, 13, 12, tzinfo=BERLIN))
        assert [f"{t.astimezone(BERLIN):%a %d %H:%M}" for t in missed[1:]] == [
            "Mon 05 00:00",
            "Tue 06 00:00",
            "Wed 07 00:00",
            "Thu 08 00:00",
            "Fri 09 00:00",
            "Mon 12 00:00",
            "Tue 13 00:00",
        ]
    finally:
        scheduler.shutdown(wait=False)


def test_jitter_delays_a_crontab_line_by_up_to_its_seconds() -> None:
    trigger = trigger_of("0 0 * * 1-5", 120, "UTC")
    previous = None
    now = SUNDAY
    for monday_on in range(5):
        fire = trigger.get_next_fire_time(previous, now)
        midnight = datetime.datetime(2026, 1, 5 + monday_on, tzinfo=UTC)
        assert midnight <= fire <= midnight + datetime.timedelta(seconds=120)
        previous = now = fire


# An independent reading of crontab(5), to hold cronsim to: a field is `*` or a list of
# numbers and ranges; day of week 0 and 7 are Sunday; when day of month and day of week are
# both restricted, a day matching either is enough, else it must match both.
def field(low: int, high: int) -> st.SearchStrategy[str]:
    item = st.one_of(
        st.integers(low, high).map(str),
        st.tuples(st.integers(low, high), st.integers(low, high)).map(lambda ab: f"{min(ab)}-{max(ab)}"),
    )
    return st.one_of(st.just("*"), st.lists(item, min_size=1, max_size=3).map(",".join))


def numbers(text: str, low: int, high: int) -> set[int]:
    if text == "*":
        return set(range(low, high + 1))
    values: set[int] = set()
    for item in text.split(","):
        a, _, b = item.partition("-")
        values.update(range(int(a), int(b or a) + 1))
    return values


def oracle(line: str, after: datetime.datetime, tz: datetime.tzinfo) -> datetime.datetime | None:
    """The first minute strictly after `after` the line names, read in fixed-offset `tz`."""
    minute, hour, dom, month, dow = line.split()
    minutes, hours = numbers(minute, 0, 59), numbers(hour, 0, 23)
    doms, months = numbers(dom, 1, 31), numbers(month, 1, 12)
    dows = {d % 7 for d in numbers(dow, 0, 7)}
    local = after.astimezone(tz)
    day = local.date()
    for _ in range(366 * 30):
        dom_ok, dow_ok = day.day in doms, day.isoweekday() % 7 in dows
        either = dom != "*" and dow != "*"
        if day.month in months and ((dom_ok or dow_ok) if either else (dom_ok and dow_ok)):
            for h in sorted(hours):
                for m in sorted(minutes):
                    at = datetime.datetime(day.year, day.month, day.day, h, m, tzinfo=tz)
                    if at > local:
                        return at.astimezone(UTC)
        day += datetime.timedelta(days=1)
    return None


@settings(max_examples=150, deadline=None)
@given(
    minute=field(0, 59),
    hour=field(0, 23),
    dom=field(1, 31),
    month=field(1, 12),
    dow=field(0, 7),
    after=st.datetimes(datetime.datetime(2026, 1, 1), datetime.datetime(2030, 12, 31)),
    timezone=st.sampled_from(["UTC", "Asia/Kolkata", "America/Panama"]),
)
def test_any_crontab_line_fires_when_cron_would(
    minute: str, hour: str, dom: str, month: str, dow: str, after: datetime.datetime, timezone: str
) -> None:
    line = f"{minute} {hour} {dom} {month} {dow}"
    start = after.replace(tzinfo=UTC)
    try:
        check_schedule(line)
    except ValueError as exc:
        assert "more often" in str(exc) or "day-of-month" in str(exc), exc
        return
    # (zones without clock changes, so the oracle needs no DST rules)
    assert next_pass([line], start, timezone) == oracle(line, start, zoneinfo.ZoneInfo(timezone))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=40),
        st.tuples(st.integers(0, 10**30), st.sampled_from(["m", "h", "d", " m"])).map(lambda nu: f"{nu[0]}{nu[1]}"),
        st.lists(
            st.sampled_from(
                [
                    "*",
                    "*/7",
                    "0",
                    "7",
                    "59",
                    "60",
                    "1-5",
                    "5-1",
                    "MON",
                    "mon-fri",
                    "JAN",
                    "L",
                    "5L",
                    "1#2",
                    "?",
                    "99999999999",
                    "@daily",
                    "@reboot",
                    ",",
                ]
            ),
            min_size=1,
            max_size=7,
        ).map(" ".join),
    )
)
def test_a_schedule_validation_accepts_the_loop_can_use(schedule: str) -> None:
    """Whatever `check_schedule` lets through, the loop and the service can schedule (the
    old `99999999999999999999m` passed and then overflowed the loop); whatever it refuses
    is a ValueError, which the config loader turns into one sentence."""
    try:
        check_schedule(schedule)
    except ValueError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 300
        return
    due = next_pass([schedule], NOW, "Europe/Berlin")
    assert NOW < due <= NOW + datetime.timedelta(days=366 * 30)
    if due - NOW < datetime.timedelta(days=366 * 30):  # it fires: never twice within MIN_INTERVAL
        assert next_pass([schedule], due) - due >= datetime.timedelta(minutes=MIN_INTERVAL)
    trigger_of(schedule, 10, "Europe/Berlin").get_next_fire_time(None, NOW)


def test_reconcile_says_the_next_pass_in_the_configs_timezone(world: World) -> None:
    """`wheelpin reconcile` without `--once`: the time it says it sleeps until is the
    crontab line's next firing, Monday to Friday at 09:00 in Berlin, in Berlin time and UTC."""
    import signal
    import subprocess
    import sys
    import time

    from tests.cli import environment

    world.set_config(
        'base_branch = "main"', 'base_branch = "main"\nschedule = "0 9 * * 1-5"\ntimezone = "Europe/Berlin"'
    )

    def expected(now: datetime.datetime) -> str:
        day = now.astimezone(BERLIN).date()
        while True:
            at = datetime.datetime(day.year, day.month, day.day, 9, tzinfo=BERLIN)
            if day.isoweekday() <= 5 and at > now:
                return f"next pass at {at:%Y-%m-%d %H:%M:%S} Europe/Berlin ({at.astimezone(UTC):%H:%M:%S} UTC)"
            day += datetime.timedelta(days=1)

    before = datetime.datetime.now(UTC)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "reconcile", "--repo", str(world.downstream), "--json"],
        env=environment(world.env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        assert proc.stderr is not None
        said = ""
        for line in proc.stderr:
            if "next pass at" in line:
                said = line
                break
            assert time.monotonic() < deadline
        after = datetime.datetime.now(UTC)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert said, "no next pass said"
        assert any(expected(t) in said for t in (before, after)), said
    finally:
        if proc.poll() is None:
            proc.kill()

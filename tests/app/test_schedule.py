"""When the loop passes next: intervals count from now, crontab lines in UTC, the soonest wins."""

from __future__ import annotations

import datetime

from bot.app.schedule import next_pass

NOW = datetime.datetime(2026, 12, 3, 6, 10, 30, tzinfo=datetime.UTC)


def test_an_interval_counts_from_now() -> None:
    assert next_pass(["30m"], NOW) == NOW + datetime.timedelta(minutes=30)
    assert next_pass(["6h", "1d"], NOW) == NOW + datetime.timedelta(hours=6)


def test_a_crontab_line_is_read_in_utc() -> None:
    assert next_pass(["0 3 * * *"], NOW) == datetime.datetime(2026, 12, 4, 3, 0, tzinfo=datetime.UTC)
    assert next_pass(["*/15 * * * *"], NOW) == datetime.datetime(2026, 12, 3, 6, 15, tzinfo=datetime.UTC)


def test_the_soonest_schedule_wins_and_none_means_half_an_hour() -> None:
    assert next_pass(["6h", "*/15 * * * *", "30m"], NOW) == datetime.datetime(2026, 12, 3, 6, 15, tzinfo=datetime.UTC)
    assert next_pass([], NOW) == NOW + datetime.timedelta(minutes=30)

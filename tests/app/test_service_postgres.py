"""`wheelpin serve` on PostgreSQL (WHEELPIN_DATABASE_URL): the same service, its
queue procrastinate's (app/pgqueue.py), its watch list, routing, schedule, dashboard rows
and comments shared in the database (app/shared.py), on Debian's PostgreSQL
(tests/fixtures/postgres.py), the emulator and the real registry."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.app.bots import running_bot
from tests.app.test_service import dashboards
from tests.app.worlds import NEW_VERSION, make_world
from tests.fixtures.postgres import Postgres
from tests.fixtures.servers import Registry


def test_from_the_shared_schedule_and_a_webhook_to_a_draft_pull_request(
    registry: Registry, postgres: Postgres, tmp_path: Path
) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/pg-{uuid.uuid4().hex[:8]}/demo-cache")
    with running_bot(
        world, tmp_path, database_url=postgres.database(f"svc_{uuid.uuid4().hex[:8]}"), tick_seconds=1
    ) as bot:
        assert bot.service.scheduler is None and bot.service.queue is None  # no APScheduler, no in-process queue
        assert bot.passes() == 1 and bot.pulls() == []
        (dashboard,) = dashboards(bot)
        assert "| demo-cache |" in dashboard.body
        head = world.commit_upstream("one", NEW_VERSION)
        bot.poll_and_build()
        (pull,) = bot.pulls()
        assert pull.draft and head[:8] in pull.title
        assert f"`{head[:8]}`" in dashboards(bot)[0].body  # type: ignore[attr-defined]
        bot.comment(pull.number, "/wheelpin rebase", "maintainer")
        bot.idle()
        (given,) = bot.repo.reactions.values()  # the comment, kept in the database, got its reaction
        assert given == ["+1"]

"""The loop's state in PostgreSQL (`WHEELPIN_DATABASE_URL`): two processes with
caches of their own share what was recorded, so a build that failed on one is not run
again by the other within its backoff; an unreachable database is one sentence that never
shows the URL's password. Debian's PostgreSQL, tests/fixtures/postgres.py."""

from __future__ import annotations

from pathlib import Path

from tests.app.worlds import NEW_VERSION, World, component
from tests.fixtures.postgres import Postgres


def test_two_processes_share_the_state_through_postgresql(world: World, tmp_path: Path, postgres: Postgres) -> None:
    url = postgres.database("reconcile_state")
    world.commit_upstream("broken", {"build_wheel.py": "import sys\nprint('compiler error')\nsys.exit(3)\n"})
    first = world.reconcile(WHEELPIN_DATABASE_URL=url)
    assert first.code == 1 and "failed (exit 3)" in component(first)["messages"][0], first.stdout + first.stderr
    elsewhere = world.reconcile(WHEELPIN_DATABASE_URL=url, WHEELPIN_CACHE_DIR=str(tmp_path / "another-machine"))
    assert [a["kind"] for a in component(elsewhere)["actions"]] == ["report"]  # recorded by the first: no rebuild
    assert not (Path(world.env["WHEELPIN_CACHE_DIR"]) / "state.sqlite").exists()
    alone = world.reconcile(WHEELPIN_CACHE_DIR=str(tmp_path / "a-third"))  # without it, a state of its own
    assert [a["kind"] for a in component(alone)["actions"]][0] == "build"


def test_an_unreachable_database_is_one_sentence_without_its_password(world: World) -> None:
    world.commit_upstream("one", NEW_VERSION)  # a build to look up
    down = world.reconcile(WHEELPIN_DATABASE_URL="postgresql://wheelpin:hunter2@127.0.0.1:9/wheelpin")
    assert down.code != 0
    said = down.stdout + down.stderr
    assert "PostgreSQL at 127.0.0.1:9/wheelpin cannot be reached (OperationalError)" in said
    assert "hunter2" not in said

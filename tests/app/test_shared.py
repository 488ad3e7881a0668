"""What replicas share in PostgreSQL (bot/app/shared.py), on Debian's PostgreSQL: the
dashboard's rows, the schedule's claims, the watch list and the comments of a command."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from bot.app.conversation import Row
from bot.app.shared import Shared
from tests.fixtures.postgres import Postgres


@pytest.fixture
def shared(postgres: Postgres) -> Iterator[Shared]:
    made = Shared(postgres.database(f"shared_{uuid.uuid4().hex[:10]}"))
    made.prepare()
    made.prepare()  # a second replica starting finds it all there
    yield made
    made.close()


def test_a_components_row_is_read_without_dropping_the_others(shared: Shared) -> None:
    for name in ("c0", "c1", "c2"):
        shared.save_row("rocm/atom", Row(name, head="abc", notes=("a note",)))
    assert list(shared.rows("rocm/atom", ["c1"])) == ["c1"]  # a pass reads its own row back
    rows = shared.rows("rocm/atom", ["c2", "c0", "c1"], only=True)
    assert list(rows) == ["c2", "c0", "c1"] and rows["c0"].notes == ("a note",)
    assert list(shared.rows("rocm/atom", ["c0"], only=True)) == ["c0"]  # c1, c2 left the config
    assert list(shared.rows("rocm/atom", ["c0", "c1", "c2"])) == ["c0"]


def test_a_due_component_is_claimed_by_one_tick_only(shared: Shared) -> None:
    shared.schedule("rocm/atom", {f"c{i}": "30m UTC" for i in range(20)}, first_due=lambda spec: 0.0)
    claims: list[list[tuple[str, str]]] = []
    start = threading.Barrier(4)

    def tick() -> None:
        start.wait()
        claims.append(shared.claim_due(100.0, lambda spec, now: now + 1800))

    ticks = [threading.Thread(target=tick) for _ in range(4)]
    for thread in ticks:
        thread.start()
    for thread in ticks:
        thread.join()
    claimed = [pair for claim in claims for pair in claim]
    assert len(claimed) == 20 and len(set(claimed)) == 20  # each once, whichever tick got it
    assert shared.claim_due(100.0, lambda spec, now: now + 1800) == []
    assert shared.claim_due(1900.0, lambda spec, now: now + 1800) != []  # due again a period later
    # a changed schedule is due afresh; an unchanged one keeps its time; a dropped one goes
    shared.schedule("rocm/atom", {"c0": "30m UTC", "c1": "0 6 * * * UTC"}, first_due=lambda spec: 5.0)
    assert shared.schedules() == {("rocm/atom", "c0"): ("30m UTC", 3700.0), ("rocm/atom", "c1"): ("0 6 * * * UTC", 5.0)}


def test_the_watch_list_keeps_routing_and_forgets_what_left(shared: Shared) -> None:
    assert shared.set_watched({"rocm/atom": 7, "rocm/vllm": 8}) == []
    shared.set_config("rocm/atom", {"prefix": "wheelpin/", "bases": ["main"], "workflows": []}, "digest1")
    shared.save_row("rocm/vllm", Row("lmcache"))
    shared.schedule("rocm/vllm", {"lmcache": "30m UTC"}, first_due=lambda spec: 1.0)
    assert shared.set_watched({"rocm/atom": 9}) == ["rocm/vllm"]
    assert shared.installation_of("rocm/atom") == ("rocm/atom", 9, "digest1")  # moved installation, config kept
    assert shared.routing("rocm/atom") == {"prefix": "wheelpin/", "bases": ["main"], "workflows": []}
    # GitHub's names are not case sensitive: a delivery's spelling finds the entry, named as listed
    assert shared.installation_of("ROCm/Atom") == ("rocm/atom", 9, "digest1")
    assert shared.routing("ROCm/Atom") == shared.routing("rocm/atom")
    assert shared.installation_of("rocm/vllm") == (None, None, None)
    assert shared.rows("rocm/vllm", ["lmcache"]) == {} and shared.schedules() == {}


def test_a_commands_comments_wait_in_order_until_it_is_done(shared: Shared) -> None:
    shared.add_comment("job", 1, "aaa")
    shared.add_comment("other", 9, None)
    shared.add_comment("job", 2, "bbb")
    kept = shared.comments("job")
    assert [comment for _number, comment in kept] == [(1, "aaa"), (2, "bbb")]
    shared.add_comment("job", 3, "ccc")  # given while the job ran: kept for the next run
    shared.drop_comments([number for number, _comment in kept])
    assert [comment for _number, comment in shared.comments("job")] == [(3, "ccc")]
    assert [comment for _number, comment in shared.comments("other")] == [(9, None)]


def test_a_refusal_is_said_once_a_period_by_all_replicas(shared: Shared, postgres: Postgres) -> None:
    """A read-only user repeating a command on the dashboard: whichever replica hears it,
    the refusal is said once a period (each replica's own memory let N replicas say it N
    times), and two replicas asking at once say it once."""
    other = Shared(shared.url)
    try:
        answers: list[bool] = []
        start = threading.Barrier(6)

        def ask(replica: Shared) -> None:
            start.wait()
            answers.append(replica.said_lately("refused rocm/atom visitor build", 3600))

        askers = [threading.Thread(target=ask, args=(replica,)) for replica in (shared, other) * 3]
        for thread in askers:
            thread.start()
        for thread in askers:
            thread.join()
        assert sorted(answers) == [False] + [True] * 5  # said by one of them, now
        assert other.said_lately("refused rocm/atom visitor build", 3600)
        assert not shared.said_lately("refused rocm/atom visitor rebase", 3600)  # another command: its own
        assert not shared.said_lately("refused rocm/atom visitor build", 0)  # the period over: said again
    finally:
        other.close()

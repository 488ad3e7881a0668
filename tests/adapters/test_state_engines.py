"""The state the loop keeps (recorded failures, build runs followed, refused writes, image
tags seen unpinned), the same on both engines: the SQLite file of one process, and
PostgreSQL, which several replicas share (Debian's server, tests/fixtures/postgres.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters.statefile import PostgresState, StateFile
from bot.core.decide.backoff import MAX_BACKOFF, REFUSAL_BACKOFF
from tests.fixtures.postgres import Postgres


@pytest.fixture(params=["sqlite", "postgresql"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateFile]:
    if request.param == "sqlite":
        made: StateFile = StateFile(tmp_path / "state.sqlite")
    else:
        server: Postgres = request.getfixturevalue("postgres")
        made = PostgresState(server.database(f"state_{tmp_path.name.lower()[-40:].replace('-', '_')}"))
    yield made
    made.close()


def test_failures_count_per_rules_and_are_forgotten(state: StateFile) -> None:
    assert state.failure("c", "x") is None
    assert state.record("c", "x", "build", "exit 1", judged_under="r1").attempts == 1
    assert state.record("c", "x", "build", "exit 1", judged_under="r1").attempts == 2
    again = state.record("c", "x", "verify", "refused", judged_under="r2")  # judged under another: counted afresh
    assert (again.attempts, again.kind, again.refused) == (1, "verify", True)
    stored = state.failure("c", "x")
    assert stored is not None and stored.message == "refused" and stored.judged_under == "r2"
    state.record("c", "y", "build", "exit 1")
    state.forget("c", "x")
    assert state.failure("c", "x") is None and state.failure("c", "y") is not None
    state.forget("c")
    assert state.failure("c", "y") is None


def test_a_refused_wheel_keeps_its_reason_apart_from_its_sentence(state: StateFile) -> None:
    """The commit list of a proposal says why a commit's wheel was refused: the reason
    alone, as recorded, not the sentence the pass said it in."""
    state.record("c", "x", "verify", "verification of 0123abcd failed, nothing published: no wheel", reason="no wheel")
    refused = state.failure("c", "x")
    assert refused is not None and refused.refused and refused.reason == "no wheel"
    assert refused.message == "verification of 0123abcd failed, nothing published: no wheel"
    state.record("c", "x", "build", "exit 1")  # a later failure without one says none
    failed = state.failure("c", "x")
    assert failed is not None and failed.reason == ""


def test_runs_and_dispatches(state: StateFile) -> None:
    at = state.record_dispatch("c", "x")
    assert state.dispatch_of("c", "x") == at and state.run_of("c", "x") is None
    state.record_run("c", "x", 41)
    state.record_run("c", "x", 42)  # a newer run of the same build
    assert state.run_of("c", "x") == 42 and state.dispatch_of("c", "x") is None
    assert state.claimed_runs() == {41, 42}
    state.drop_run("c", "x")
    assert state.run_of("c", "x") is None and state.claimed_runs() == {41, 42}


def test_refusals_back_off_and_are_forgotten(state: StateFile) -> None:
    first = state.record_refusal("k", "no")
    assert first.retry_at - first.at == REFUSAL_BACKOFF
    for _ in range(10):
        last = state.record_refusal("k", "no")
    assert last.retry_at - last.at == MAX_BACKOFF
    state.forget_refusals()
    assert state.refusal("k") is None


def test_unpinned_tags_and_prunes(state: StateFile) -> None:
    assert state.unpinned_since("c") == {} and state.pruned_at("c") is None
    state.record_unpinned("c", {"a": 1.0, "b": 2.0}, at=5.0)
    state.record_unpinned("c", {"b": 2.0}, at=9.0)
    assert state.unpinned_since("c") == {"b": 2.0} and state.pruned_at("c") == 9.0


def test_a_dry_run_leaves_the_state_as_it_found_it(state: StateFile) -> None:
    state.record("c", "x", "build", "kept")
    with state.unsaved():
        state.record("c", "x", "build", "dry")
        state.record_run("c", "y", 7)
        assert state.run_of("c", "y") == 7  # seen inside
    failure = state.failure("c", "x")
    assert failure is not None and failure.message == "kept" and state.run_of("c", "y") is None


def test_two_repositories_components_of_one_name_are_kept_apart(state: StateFile) -> None:
    """rocm/vllm and rocm/sglang both pin LMCache: one service keeps both in one state, and
    vLLM's failed build or followed run must not be SGLang's."""
    vllm = type(state).__new__(type(state))
    vllm.__dict__.update(state.__dict__, scope="rocm/vllm:")  # the same database, another scope
    sglang = type(state).__new__(type(state))
    sglang.__dict__.update(state.__dict__, scope="rocm/sglang:")
    vllm.record("lmcache", "abc", "build", "exit 1")
    vllm.record_run("lmcache", "abc", 41)
    vllm.record_dispatch("lmcache", "def")
    assert sglang.failure("lmcache", "abc") is None and sglang.run_of("lmcache", "abc") is None
    assert sglang.dispatch_of("lmcache", "def") is None
    failed = vllm.failure("lmcache", "abc")
    assert failed is not None and failed.component == "lmcache" and vllm.run_of("lmcache", "abc") == 41
    sglang.forget("lmcache")
    assert vllm.failure("lmcache", "abc") is not None


def test_many_repositories_states_share_a_few_connections(postgres: Postgres) -> None:
    """A service keeps one state per repository watched (2,500 in docs/sizing.md): each
    borrows a connection for a pass and gives it back, so the process holds a pool's few,
    not one a repository (PostgreSQL's default max_connections is 100)."""
    import psycopg

    from bot.adapters.statefile import POOL_SIZE

    url = postgres.database("many_states")
    states = [PostgresState(url, scope=f"org/repo{index}:") for index in range(150)]
    for index, state in enumerate(states):
        state.record("lmcache", "abc", "build", f"exit {index}")
        state.release()
    with psycopg.connect(url) as connection:
        (held,) = connection.execute(
            "select count(*) from pg_stat_activity where datname = 'many_states' and pid <> pg_backend_pid()"
        ).fetchone() or (0,)
    assert 1 <= held <= POOL_SIZE
    failed = states[42].failure("lmcache", "abc")
    assert failed is not None and failed.message == "exit 42"  # each kept its own
    for state in states:
        state.close()


def test_a_pass_on_another_worker_thread_uses_the_state_after_a_release(state: StateFile) -> None:
    """WHEELPIN_WORKERS: a repository's passes run one at a time, but not always on the same
    thread; each pass ends with `release()`, and the next opens the state in its own thread
    (sqlite3 refuses a connection made in another thread: found by the clean-clone CI)."""
    import threading

    errors: list[BaseException] = []

    def one_pass(commit: str) -> None:
        try:
            state.record("c", commit, "build", "exit 1")
            assert state.failure("c", commit) is not None
        except BaseException as exc:  # noqa: BLE001  # carried to the test's thread
            errors.append(exc)
        finally:
            state.release()

    for commit in ("a", "b", "c"):
        worker = threading.Thread(target=one_pass, args=(commit,))
        worker.start()
        worker.join()
    assert errors == [] and state.failure("c", "a") is not None


def test_a_read_leaves_no_transaction_open(postgres: Postgres, tmp_path: Path) -> None:
    """A pass reads the shared state, then spends minutes on builds and GitHub: a read whose
    transaction stayed open would hold its locks all that while (and every other replica's
    ALTER TABLE behind them)."""
    import psycopg

    url = postgres.database("state_reads")
    state = PostgresState(url)
    try:
        state.record("c", "x", "build", "exit 1")
        assert state.failure("c", "x") is not None and state.run_of("c", "x") is None
        with psycopg.connect(url, autocommit=True) as other:
            open_ = other.execute(
                "select count(*) from pg_stat_activity where datname = current_database()"
                " and state = 'idle in transaction'"
            ).fetchone()
        assert open_ == (0,)
    finally:
        state.close()


def _at_same_place(state: StateFile, scope: str, formerly: tuple[str, ...] = ()) -> StateFile:
    """Another state on the same file or database, as another repository's reconciler (or a
    later wheelpin's) opens it."""
    if isinstance(state, PostgresState):
        return PostgresState(state.url, scope=scope, formerly=formerly)
    return StateFile(state.path, scope=scope, formerly=formerly)


def test_what_was_recorded_under_another_spelling_is_read_under_the_repository_s_id(state: StateFile) -> None:
    """An earlier wheelpin kept a repository's state under its name as WHEELPIN_REPOSITORIES
    spelt it (`rocm/atom:`); GitHub spells it `ROCm/Atom`, and its state is now kept under
    its id. Every row moves there once, nothing of another repository (`rocm/atom-dev`)
    moves, and a row already recorded under the id is kept over the older one."""
    before = _at_same_place(state, "rocm/atom:")
    before.record("lmcache", "x", "build", "exit 1")
    before.record_run("lmcache", "x", 42)
    before.record_dispatch("lmcache", "y")
    before.record_unpinned("lmcache", {"old-tag": 1.0}, at=5.0)
    before.record_run("mooncake", "z", 7)
    before.close()
    other = _at_same_place(state, "rocm/atom-dev:")
    other.record("lmcache", "x", "build", "exit 2")
    other.close()
    since = _at_same_place(state, "github#123:")
    since.record_run("mooncake", "z", 8)  # recorded after the upgrade, before the rows were moved
    since.close()

    now = _at_same_place(state, "github#123:", formerly=("ROCm/Atom:",))
    try:
        failed = now.failure("lmcache", "x")
        assert failed is not None and (failed.component, failed.message) == ("lmcache", "exit 1")
        assert now.run_of("lmcache", "x") == 42 and now.dispatch_of("lmcache", "y") is not None
        assert now.unpinned_since("lmcache") == {"old-tag": 1.0} and now.pruned_at("lmcache") == 5.0
        assert now.run_of("mooncake", "z") == 8
    finally:
        now.close()
    gone = _at_same_place(state, "rocm/atom:")
    kept = _at_same_place(state, "rocm/atom-dev:")
    try:
        assert gone.failure("lmcache", "x") is None and gone.run_of("mooncake", "z") is None
        failed = kept.failure("lmcache", "x")
        assert failed is not None and failed.message == "exit 2"
    finally:
        gone.close()
        kept.close()


def test_the_rows_of_former_scopes_are_taken_over_once_for_every_process(state: StateFile) -> None:
    """A service of 2,500 repositories opens 2,500 scopes at each start: the tables are looked
    through for a scope's former rows once, recorded in the state, not at every start."""
    from bot.adapters import statefile

    first = _at_same_place(state, "github#9:", formerly=("rocm/vllm:",))
    assert first.run_of("c", "x") is None
    first.close()
    later = _at_same_place(state, "rocm/vllm:")  # written under the name after that (a replica not upgraded yet)
    later.record_run("c", "x", 5)
    later.close()
    statefile._ADOPTED.clear()  # another process
    again = _at_same_place(state, "github#9:", formerly=("rocm/vllm:",))
    try:
        assert again.run_of("c", "x") is None
    finally:
        again.close()

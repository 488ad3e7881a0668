"""The small state file (docs/design.md §2): what the world cannot tell cheaply — local build
and verification failures, refused writes, the Actions runs followed. When each may be
tried again is `core/decide/backoff.py`. Losing it costs a repeated attempt, never a
wrong result."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.decide.backoff import Failure, Refusal
from ..core.errors import ConfigError, TransientError

CLAIMS_KEPT = 30 * 86_400  # a run followed is remembered a month: no one dispatches that far apart

# the tables whose rows carry a scope (the prefix of `component`), each with the rest of its key
SCOPED_TABLES = {
    "failures": "commit_sha",
    "runs": "commit_sha",
    "dispatches": "commit_sha",
    "unpinned": "tag",
    "prunes": "",
}
# (where the state is kept, scope): its former scopes' rows were moved by this process
_ADOPTED: set[tuple[str, str]] = set()
_ADOPTED_LOCK = threading.Lock()


class StateFile:
    """`scope` keeps apart the components of several repositories in one state (a service
    watching rocm/vllm and rocm/sglang, both with a component `lmcache`): it prefixes
    every component name stored (`rocm/vllm:`); the names given and returned are bare.

    `formerly` are scopes the same repository's rows may have been recorded under before
    (an earlier wheelpin's, or a spelling of its name in another case), matched without
    case: at first use their rows are moved under `scope`, once (the `adopted` table says
    so to every later process), and a row already recorded under `scope` is kept over a
    former one (it is the later)."""

    def __init__(self, path: Path, *, scope: str = "", formerly: Sequence[str] = ()) -> None:
        self.path = path
        self.scope = scope
        self.formerly = tuple(dict.fromkeys(former.lower() for former in formerly if former))
        self._db: sqlite3.Connection | None = None
        self._in_memory = False
        self._unsaved = False

    @property
    def db(self) -> sqlite3.Connection:
        """Opened at first use. A dry run that finds no state file reads an empty one in
        memory: it creates nothing."""
        if self._db is None:
            self._in_memory = self._unsaved and not self.path.exists()
            if not self._in_memory:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(":memory:" if self._in_memory else self.path)
            self._create(self._db, prune=not self._unsaved)
            self._adopt_former(str(self.path))
        return self._db

    @staticmethod
    def _create(db: sqlite3.Connection, *, prune: bool) -> None:
        db.execute(
            "create table if not exists failures (component text, commit_sha text, kind text,"
            " message text, attempts integer, at real, primary key (component, commit_sha))"
        )
        columns = {row[1] for row in db.execute("pragma table_info(failures)")}
        if "rules" not in columns:  # a state file of an earlier wheelpin
            db.execute("alter table failures add column rules text default ''")
        if "reason" not in columns:
            db.execute("alter table failures add column reason text default ''")
        db.execute(
            "create table if not exists runs (component text, commit_sha text, run_id integer,"
            " primary key (component, commit_sha))"
        )
        # a dispatch noted before it is sent, and every run ever followed: a pass killed
        # after dispatching finds its run among those not claimed, instead of dispatching again
        db.execute(
            "create table if not exists dispatches (component text, commit_sha text, at real,"
            " primary key (component, commit_sha))"
        )
        db.execute("create table if not exists claimed (run_id integer primary key, at real)")
        # the same write to the same branch on the same base is refused the same way: not
        # made again each pass until its backoff ends, a rule changes or permissions are granted
        db.execute(
            "create table if not exists refusals (fingerprint text primary key, message text,"
            " attempts integer, at real)"
        )
        # image.prune_after_days: since when each of a component's tags has been seen unpinned,
        # and when its tags were last looked at (a grace period counts from the first sighting)
        db.execute(
            "create table if not exists unpinned (component text, tag text, since real, primary key (component, tag))"
        )
        db.execute("create table if not exists prunes (component text primary key, at real)")
        # the scopes whose former rows were taken over: looked at once, not every table scanned again
        db.execute("create table if not exists adopted (scope text primary key)")
        if prune:
            db.execute("delete from refusals where at < ?", (time.time() - CLAIMS_KEPT,))
            db.execute("delete from claimed where at < ?", (time.time() - CLAIMS_KEPT,))
        db.commit()

    def _adopt_former(self, kept_at: str) -> None:
        """The rows of the `formerly` scopes moved under `scope` (once a process: the first
        open after an upgrade or a rename moves them; the statements are both engines')."""
        adopted = (kept_at, self.scope)
        with _ADOPTED_LOCK:
            if not self.formerly or adopted in _ADOPTED:
                return
        if self._q("select 1 from adopted where scope = ?", (self.scope,)).fetchone() is not None:
            with _ADOPTED_LOCK:
                _ADOPTED.add(adopted)  # another process (or replica) took them over already
            return
        for table, rest in SCOPED_TABLES.items():
            same_rest = f" and kept.{rest} = {table}.{rest}" if rest else ""
            for former in self.formerly:
                found = self._q(
                    f"select distinct component from {table} where lower(substr(component, 1, {len(former)})) = ?",
                    (former,),
                ).fetchall()
                for (component,) in found:
                    if component.startswith(self.scope):  # already this scope's (a former spelt alike)
                        continue
                    moved = self.scope + component[len(former) :]
                    self._q(
                        f"update {table} set component = ? where component = ? and not exists"
                        f" (select 1 from {table} as kept where kept.component = ?{same_rest})",
                        (moved, component, moved),
                    )
                    self._q(f"delete from {table} where component = ?", (component,))
        self._q("insert into adopted values (?) on conflict (scope) do nothing", (self.scope,))
        self._commit()
        if not self._unsaved:
            with _ADOPTED_LOCK:
                _ADOPTED.add(adopted)

    @contextmanager
    def unsaved(self) -> Iterator[None]:
        """Writes made inside are seen by reads inside, then rolled back: a dry run leaves
        the state file as it found it."""
        self._unsaved = True
        try:
            yield
        finally:
            self._unsaved = False
            self._roll_back()

    def _roll_back(self) -> None:
        """What a dry run wrote is undone."""
        if self._db is not None:
            self._db.rollback()
        if self._in_memory:  # the stand-in of a dry run is gone with it
            self.close()

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement, written once for both engines: `?` parameters, `on conflict … do
        update` upserts (SQLite 3.24 and PostgreSQL both read them)."""
        return self.db.execute(sql, params)

    def _commit(self) -> None:
        if not self._unsaved:
            self.db.commit()

    def run_of(self, component: str, commit: str) -> int | None:
        """The Actions run started for this build (the world knows it too: the run's title)."""
        component = self.scope + component
        row = self._q("select run_id from runs where component = ? and commit_sha = ?", (component, commit)).fetchone()
        return int(row[0]) if row else None

    def record_run(self, component: str, commit: str, run_id: int) -> None:
        component = self.scope + component
        self._q(
            "insert into runs values (?, ?, ?) on conflict (component, commit_sha) do update"
            " set run_id = excluded.run_id",
            (component, commit, run_id),
        )
        self._q(
            "insert into claimed values (?, ?) on conflict (run_id) do update set at = excluded.at",
            (run_id, time.time()),
        )
        self._q("delete from dispatches where component = ? and commit_sha = ?", (component, commit))
        self._commit()

    def dispatch_of(self, component: str, commit: str) -> float | None:
        """When a dispatch of this build was noted, if its run is not known yet."""
        component = self.scope + component
        row = self._q(
            "select at from dispatches where component = ? and commit_sha = ?", (component, commit)
        ).fetchone()
        return float(row[0]) if row else None

    def record_dispatch(self, component: str, commit: str) -> float:
        component = self.scope + component
        at = time.time()
        self._q(
            "insert into dispatches values (?, ?, ?) on conflict (component, commit_sha) do update"
            " set at = excluded.at",
            (component, commit, at),
        )
        self._commit()
        return at

    def drop_dispatch(self, component: str, commit: str) -> None:
        component = self.scope + component
        self._q("delete from dispatches where component = ? and commit_sha = ?", (component, commit))
        self._commit()

    def claimed_runs(self) -> set[int]:
        return {int(row[0]) for row in self._q("select run_id from claimed")}

    def failure(self, component: str, commit: str) -> Failure | None:
        component = self.scope + component
        row = self._q(
            "select component, commit_sha, kind, message, attempts, at, rules, reason from failures"
            " where component = ? and commit_sha = ?",
            (component, commit),
        ).fetchone()
        if row is None:
            return None
        component_, commit_, kind, message, attempts, at, judged_under, reason = row
        return Failure(
            component_[len(self.scope) :],
            commit_,
            kind,
            message,
            int(attempts),
            float(at),
            judged_under or "",
            reason or "",
        )

    def record(
        self, component: str, commit: str, kind: str, message: str, *, judged_under: str = "", reason: str = ""
    ) -> Failure:
        """A failure of `commit`'s build or verification under what `judged_under` digests
        (attempts count on only while it stays the same; its column is `rules`, the name
        state files already written have), and a refused wheel's `reason` apart from the
        sentence `message` says it in."""
        previous = self.failure(component, commit)
        attempts = previous.attempts + 1 if previous and previous.judged_under == judged_under else 1
        failed = Failure(component, commit, kind, message, attempts, time.time(), judged_under, reason)
        component = self.scope + component
        self._q(
            "insert into failures (component, commit_sha, kind, message, attempts, at, rules, reason)"
            " values (?, ?, ?, ?, ?, ?, ?, ?) on conflict (component, commit_sha) do update set"
            " kind = excluded.kind, message = excluded.message, attempts = excluded.attempts, at = excluded.at,"
            " rules = excluded.rules, reason = excluded.reason",
            (component, commit, kind, message, attempts, failed.at, judged_under, reason),
        )
        self._commit()
        return failed

    def forget(self, component: str, commit: str | None = None) -> None:
        component = self.scope + component
        if commit is None:
            self._q("delete from failures where component = ?", (component,))
        else:
            self._q("delete from failures where component = ? and commit_sha = ?", (component, commit))
        self._commit()

    def drop_run(self, component: str, commit: str) -> None:
        """The run followed for a commit ended badly: the next try dispatches a new one."""
        component = self.scope + component
        self._q("delete from runs where component = ? and commit_sha = ?", (component, commit))
        self._commit()

    def refusal(self, fingerprint: str) -> Refusal | None:
        row = self._q(
            "select fingerprint, message, attempts, at from refusals where fingerprint = ?", (fingerprint,)
        ).fetchone()
        return Refusal(*row) if row else None

    def record_refusal(self, fingerprint: str, message: str) -> Refusal:
        previous = self.refusal(fingerprint)
        refused = Refusal(fingerprint, message, previous.attempts + 1 if previous else 1, time.time())
        self._q(
            "insert into refusals values (?, ?, ?, ?) on conflict (fingerprint) do update set"
            " message = excluded.message, attempts = excluded.attempts, at = excluded.at",
            (refused.fingerprint, refused.message, refused.attempts, refused.at),
        )
        self._commit()
        return refused

    def forget_refusals(self) -> None:
        """Permissions were granted, or a human asked to try again: every write may be made."""
        self._q("delete from refusals")
        self._commit()

    def unpinned_since(self, component: str) -> dict[str, float]:
        component = self.scope + component
        return {
            str(tag): float(since)
            for tag, since in self._q("select tag, since from unpinned where component = ?", (component,))
        }

    def record_unpinned(self, component: str, since: dict[str, float], *, at: float) -> None:
        """The component's tags unpinned now (the others were pinned again, or deleted)."""
        component = self.scope + component
        self._q("delete from unpinned where component = ?", (component,))
        for tag, first in sorted(since.items()):
            self._q("insert into unpinned values (?, ?, ?)", (component, tag, first))
        self._q(
            "insert into prunes values (?, ?) on conflict (component) do update set at = excluded.at", (component, at)
        )
        self._commit()

    def pruned_at(self, component: str) -> float | None:
        component = self.scope + component
        row = self._q("select at from prunes where component = ?", (component,)).fetchone()
        return float(row[0]) if row else None

    def release(self) -> None:
        """Between passes: the connection is closed (PostgreSQL's given back to the pool),
        and opened again at the next use. A repository's next pass may run on another
        worker thread, and sqlite3 refuses a connection made in another thread."""
        self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


_POOLS: dict[str, Any] = {}  # database URL → the process's connection pool for the state
_PREPARED: set[str] = set()  # the URLs whose tables this process made (or found)
_POOLS_LOCK = threading.Lock()
POOL_SIZE = 16  # connections a process holds at most for the state (one per worker running a pass)


def _pool(url: str) -> Any:
    """The process's pool for `url`: a service watching 2,500 repositories keeps one
    reconciler (and state) per repository, and must not hold a connection for each."""
    with _POOLS_LOCK:
        pool = _POOLS.get(url)
        if pool is None:
            try:
                import psycopg  # only in this mode (the postgres extra)
                from psycopg_pool import ConnectionPool
            except ImportError:
                raise ConfigError(
                    "WHEELPIN_DATABASE_URL needs PostgreSQL's driver: pip install 'wheelpin[postgres]'"
                ) from None
            try:  # one connection first: a database that is not there is said at once
                psycopg.connect(url, connect_timeout=10).close()
            except psycopg.Error as exc:
                raise TransientError(unreachable(url, exc)) from None
            # check: a connection is tried before it is lent, so one that a restart of the
            # database broke is replaced instead of failing a pass (psycopg_pool >= 3.2:
            # https://www.psycopg.org/psycopg3/docs/advanced/pool.html#connection-checks)
            pool = _POOLS[url] = ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                open=True,
                timeout=60,
                check=ConnectionPool.check_connection,
                kwargs={"connect_timeout": 10},
            )
        return pool


class PostgresState(StateFile):
    """The same state in PostgreSQL, which several replicas of the service share (the
    service's mode with `WHEELPIN_DATABASE_URL`): the statements are StateFile's, `?` read as psycopg's
    `%s`; the tables are made on first use. A dry run's writes are rolled back as there.
    A connection is borrowed from the process's pool at first use and given back by
    `release()` (the end of each pass)."""

    def __init__(self, url: str, *, scope: str = "", formerly: Sequence[str] = ()) -> None:
        super().__init__(Path("/nonexistent"), scope=scope, formerly=formerly)
        self.url = url
        self._pg: Any = None
        self._pool: Any = None

    @property
    def db(self) -> Any:
        if self._pg is None:
            import psycopg

            self._pool = _pool(self.url)
            try:
                self._pg = self._pool.getconn()
            except Exception as exc:  # the pool's timeout: the database went away
                raise TransientError(unreachable(self.url, exc)) from None
            try:
                with _POOLS_LOCK:
                    prepared = self.url in _PREPARED
                if not prepared:
                    self._prepare()
                    with _POOLS_LOCK:
                        _PREPARED.add(self.url)
                self._adopt_former(self.url)
            except psycopg.Error as exc:
                self.release()
                raise TransientError(unreachable(self.url, exc)) from None
        return self._pg

    def _prepare(self) -> None:
        self._pg.execute(
            "create table if not exists failures (component text, commit_sha text, kind text,"
            " message text, attempts integer, at double precision, rules text default '',"
            " reason text default '', primary key (component, commit_sha))"
        )
        # ALTER TABLE takes an exclusive lock even when the column is there, and waits behind
        # any replica's open transaction on the table: only a table from before `reason` gets it
        if not self._pg.execute(
            "select 1 from information_schema.columns where table_schema = current_schema()"
            " and table_name = 'failures' and column_name = 'reason'"
        ).fetchone():
            self._pg.execute("alter table failures add column if not exists reason text default ''")
        self._pg.execute(
            "create table if not exists runs (component text, commit_sha text, run_id bigint,"
            " primary key (component, commit_sha))"
        )
        self._pg.execute(
            "create table if not exists dispatches (component text, commit_sha text,"
            " at double precision, primary key (component, commit_sha))"
        )
        self._pg.execute("create table if not exists claimed (run_id bigint primary key, at double precision)")
        self._pg.execute(
            "create table if not exists refusals (fingerprint text primary key, message text,"
            " attempts integer, at double precision)"
        )
        self._pg.execute(
            "create table if not exists unpinned (component text, tag text, since double precision,"
            " primary key (component, tag))"
        )
        self._pg.execute("create table if not exists prunes (component text primary key, at double precision)")
        self._pg.execute("create table if not exists adopted (scope text primary key)")
        if not self._unsaved:
            self._pg.execute("delete from refusals where at < %s", (time.time() - CLAIMS_KEPT,))
            self._pg.execute("delete from claimed where at < %s", (time.time() - CLAIMS_KEPT,))
        self._pg.commit()

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor = self.db.execute(sql.replace("?", "%s"), params)
        if not self._unsaved and sql.lstrip().lower().startswith("select"):
            # a read ends its transaction at once (its rows are already with the client): one
            # left open for the rest of a pass would hold its locks across the pass's network
            # calls, and a replica paused there would hold every other one's DDL behind it
            self.db.commit()
        return cursor

    def _roll_back(self) -> None:
        if self._pg is not None:
            self._pg.rollback()

    def release(self) -> None:
        """The connection back to the pool (what a dry run wrote rolled back first)."""
        if self._pg is not None:
            import psycopg

            connection, self._pg = self._pg, None
            try:
                connection.rollback()  # every write was committed as it was made, but a dry run's
            except psycopg.OperationalError:
                pass  # the database went away mid-pass: the pool drops a broken connection given back
            finally:
                self._pool.putconn(connection)

    def close(self) -> None:
        self.release()


def unreachable(url: str, exc: BaseException) -> str:
    """The database of `url` could not be reached, said without the URL's password (an
    error's own text may hold it, so only its type is said)."""
    import psycopg

    try:
        where = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        where = {}
    return (
        f"PostgreSQL at {where.get('host', 'localhost')}:{where.get('port', 5432)}/{where.get('dbname', '')} "
        f"cannot be reached ({type(exc).__name__})"
    )


def open_state(
    cache: Path, database_url: str | None = None, *, scope: str = "", formerly: Sequence[str] = ()
) -> StateFile:
    """The state: in PostgreSQL when a database is named (`WHEELPIN_DATABASE_URL`), else the
    SQLite file in the cache folder; its components kept apart by `scope` (a repository),
    with what was recorded under its `formerly` scopes moved there."""
    if database_url:
        return PostgresState(database_url, scope=scope, formerly=formerly)
    return StateFile(cache / "state.sqlite", scope=scope, formerly=formerly)

"""What the replicas of `wheelpin serve` share in PostgreSQL (WHEELPIN_DATABASE_URL; docs/design.md
§2, app/), beside procrastinate's job queue (app/pgqueue.py) and the loop's state
(adapters/statefile.py `PostgresState`):

- the watch list: each repository watched and its installation, written by whichever
  replica ran the installations job, read by any replica that takes a repository's job;
- the routing of deliveries (branch prefix, base branches, build workflows), written when
  a config is read, so any replica can route any delivery (receivers keep nothing);
- the schedule: when each component (and the installations) is next due, claimed by one
  tick at a time (`for update skip locked`), so a period fires once across replicas;
- the dashboard's rows, so a dashboard shows every replica's passes;
- the comments that gave a command, so each gets its reaction whichever replica runs it;
- each repository's lease (app/lease.py): the epoch of the job that may write to it.

One connection pool serves these and procrastinate's deferrals (the sync side). A database
that cannot be reached (down, restarting) is a TransientError from every method here: a
delivery is then answered 503 (GitHub or the sender tries again), a job backs off; the pool
replaces the connections a restart broke."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from .conversation import Row

# Seconds a caller waits for a pooled connection. A webhook delivery waits on it, and GitHub
# gives up on an answer after 10 s: a database that does not answer within this is a 503.
POOL_WAIT = 5.0
SCHEMA_LOCK = 0x77686C70  # "whlp": one replica at a time creates the tables
TABLES = (
    "create table if not exists wheelpin_watched (repository text primary key, installation bigint,"
    " routing jsonb, config text)",
    "create table if not exists wheelpin_schedules (repository text, component text, spec text,"
    " due double precision, primary key (repository, component))",
    "create table if not exists wheelpin_rows (repository text, component text, row jsonb,"
    " primary key (repository, component))",
    "create table if not exists wheelpin_comments (id bigserial primary key, job text, comment bigint, seen text)",
    "create index if not exists wheelpin_comments_job on wheelpin_comments (job)",
    # expires: epoch seconds on the database's clock (never a replica's)
    "create table if not exists wheelpin_leases (repository text primary key, epoch bigint not null,"
    " holder text, expires double precision not null)",
    # when a refusal was last said, per (repository, sender, command): epoch seconds, database clock
    "create table if not exists wheelpin_said (key text primary key, at double precision not null)",
)
NOW = "extract(epoch from clock_timestamp())"  # the database's clock, at the statement (not the transaction)


class Shared:
    def __init__(self, url: str, *, size: int = 4) -> None:
        from ..core.errors import ConfigError, TransientError

        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise ConfigError(
                "WHEELPIN_DATABASE_URL needs PostgreSQL's driver and procrastinate: pip install 'wheelpin[postgres]'"
            ) from None
        import psycopg

        from ..adapters.statefile import unreachable

        try:  # one connection first: a database that is not there is said at once, in one sentence
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.Error as exc:
            raise TransientError(unreachable(url, exc)) from None
        self.url = url
        try:  # the pool opens its connections in the background; the first is waited for
            # check: a connection is tried (an empty query) before it is lent, so one a
            # restart of the database broke is dropped and replaced rather than failing its
            # caller (psycopg_pool >= 3.2, ConnectionPool.check_connection:
            # https://www.psycopg.org/psycopg3/docs/advanced/pool.html#connection-checks)
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=size,
                open=False,
                timeout=POOL_WAIT,
                check=ConnectionPool.check_connection,
                kwargs={"autocommit": True, "connect_timeout": 10},
            )
        except Exception as exc:  # a malformed URL
            raise TransientError(unreachable(url, exc)) from None
        try:
            self.pool.open(wait=True, timeout=30)
        except Exception as exc:
            self.pool.close()
            raise TransientError(unreachable(url, exc)) from None

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection (autocommit), given back when the block ends; the database
        not reached, or lost mid-block, is a TransientError (psycopg_pool's PoolTimeout is a
        psycopg.OperationalError)."""
        import psycopg

        from ..adapters.statefile import unreachable
        from ..core.errors import TransientError

        try:
            with self.pool.connection() as connection:
                yield connection
        except psycopg.OperationalError as exc:
            raise TransientError(unreachable(self.url, exc)) from None

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        """A cursor on a pooled connection (autocommit), given back when the block ends."""
        with self.connection() as connection, connection.cursor() as cursor:
            yield cursor

    def prepare(self) -> None:
        """procrastinate's schema and these tables, made by the first replica that starts
        (the others wait on an advisory lock, then find them there)."""
        from procrastinate.schema import SchemaManager

        with self.connection() as connection:
            connection.execute("select pg_advisory_lock(%s)", (SCHEMA_LOCK,))
            try:
                found = connection.execute("select to_regclass('procrastinate_jobs')").fetchone()
                if found is None or found[0] is None:
                    connection.execute(SchemaManager.get_schema())
                for statement in TABLES:
                    connection.execute(statement)
            finally:
                connection.execute("select pg_advisory_unlock(%s)", (SCHEMA_LOCK,))

    # -- the watch list and routing -----------------------------------------------------------

    def watched(self) -> dict[str, int | None]:
        """Every repository watched → its installation (None: watched with a token)."""
        with self.cursor() as cursor:
            return dict(cursor.execute("select repository, installation from wheelpin_watched").fetchall())

    def installation_of(self, repository: str) -> tuple[str | None, int | None, str | None]:
        """(its name as the watch list spells it, None when not watched; its installation;
        the digest of its config as last read). `repository` in any case (app/forge.py
        `repository_key`: the names are ASCII, where lower() is that rule)."""
        with self.cursor() as cursor:
            row = cursor.execute(
                "select repository, installation, config from wheelpin_watched where lower(repository) = lower(%s)",
                (repository,),
            ).fetchone()
            return (row[0], row[1], row[2]) if row else (None, None, None)

    def set_watched(self, found: dict[str, int | None]) -> list[str]:
        """The watch list is now `found` (routing kept for those still watched); the
        repositories no longer watched are returned, and their schedule and rows dropped."""
        with self.connection() as connection, connection.transaction():
            rows = connection.execute("select repository from wheelpin_watched for update").fetchall()
            gone = sorted({row[0] for row in rows} - set(found))
            for repository, installation in found.items():
                connection.execute(
                    "insert into wheelpin_watched (repository, installation) values (%s, %s) "
                    "on conflict (repository) do update set installation = excluded.installation",
                    (repository, installation),
                )
            for table in ("wheelpin_watched", "wheelpin_schedules", "wheelpin_rows"):
                connection.execute(f"delete from {table} where repository = any(%s)", (gone,))
        return gone

    def routing(self, repository: str) -> dict[str, Any] | None:
        with self.cursor() as cursor:
            row = cursor.execute(  # in any case, as installation_of
                "select routing from wheelpin_watched where lower(repository) = lower(%s)", (repository,)
            ).fetchone()
            return row[0] if row else None

    def set_config(self, repository: str, routing: dict[str, Any] | None, config: str) -> None:
        """The config a replica read: the routing of its deliveries, and its digest (the
        other replicas read it again when it is not theirs)."""
        with self.cursor() as cursor:
            cursor.execute(
                "update wheelpin_watched set routing = %s, config = %s where repository = %s",
                (json.dumps(routing) if routing is not None else None, config, repository),
            )

    # -- the schedule ---------------------------------------------------------------------------

    def schedule(self, repository: str, wanted: dict[str, str], first_due: Callable[[str], float]) -> None:
        """`repository`'s components are due as `wanted` says (component → schedule spec);
        an unchanged spec keeps its next time, a new or changed one is due at
        `first_due(spec)`; components no longer wanted are dropped."""
        with self.connection() as connection, connection.transaction():
            known: dict[str, str] = dict(
                connection.execute(
                    "select component, spec from wheelpin_schedules where repository = %s for update", (repository,)
                ).fetchall()
            )
            gone = [name for name in known if name not in wanted]
            connection.execute(
                "delete from wheelpin_schedules where repository = %s and component = any(%s)", (repository, gone)
            )
            for name, spec in wanted.items():
                if known.get(name) != spec:
                    connection.execute(
                        "insert into wheelpin_schedules (repository, component, spec, due) values (%s, %s, %s, %s) "
                        "on conflict (repository, component) do update set spec = excluded.spec, due = excluded.due",
                        (repository, name, spec, first_due(spec)),
                    )

    def unschedule(self, repository: str) -> None:
        with self.cursor() as cursor:
            cursor.execute("delete from wheelpin_schedules where repository = %s", (repository,))

    def claim_due(self, now: float, next_due: Callable[[str, float], float]) -> list[tuple[str, str]]:
        """The (repository, component)s due at `now`, each given its next time in the same
        transaction: rows another tick holds are skipped, so each period fires once."""
        with self.connection() as connection, connection.transaction():
            due = connection.execute(
                "select repository, component, spec from wheelpin_schedules where due <= %s "
                "order by due for update skip locked",
                (now,),
            ).fetchall()
            for repository, component, spec in due:
                connection.execute(
                    "update wheelpin_schedules set due = %s where repository = %s and component = %s",
                    (next_due(spec, now), repository, component),
                )
        return [(repository, component) for repository, component, _spec in due]

    def schedules(self) -> dict[tuple[str, str], tuple[str, float]]:
        with self.cursor() as cursor:
            return {
                (r, c): (spec, due)
                for r, c, spec, due in cursor.execute(
                    "select repository, component, spec, due from wheelpin_schedules"
                ).fetchall()
            }

    # -- the dashboard's rows ---------------------------------------------------------------------

    def save_row(self, repository: str, row: Row) -> None:
        with self.cursor() as cursor:
            cursor.execute(
                "insert into wheelpin_rows (repository, component, row) values (%s, %s, %s) "
                "on conflict (repository, component) do update set row = excluded.row",
                (repository, row.component, json.dumps(asdict(row))),
            )

    def rows(self, repository: str, names: list[str], *, only: bool = False) -> dict[str, Row]:
        """The rows of the components named (in that order); with `only` (they are all the
        config has), those of any other component are dropped."""
        with self.cursor() as cursor:
            if only:
                cursor.execute(
                    "delete from wheelpin_rows where repository = %s and not (component = any(%s))", (repository, names)
                )
            found = {
                component: row
                for component, row in cursor.execute(
                    "select component, row from wheelpin_rows where repository = %s", (repository,)
                ).fetchall()
            }
        return {
            name: Row(**{**found[name], "notes": tuple(found[name].get("notes") or ())})
            for name in names
            if name in found
        }

    # -- the comments that gave a command -----------------------------------------------------------

    def add_comment(self, job: str, comment: int | None, seen: str | None) -> None:
        with self.cursor() as cursor:
            cursor.execute(
                "insert into wheelpin_comments (job, comment, seen) values (%s, %s, %s)", (job, comment, seen)
            )

    def comments(self, job: str) -> list[tuple[int, tuple[int | None, str | None]]]:
        """The comments that gave a command job, oldest first, each with its number here."""
        with self.cursor() as cursor:
            rows = cursor.execute(
                "select id, comment, seen from wheelpin_comments where job = %s order by id", (job,)
            ).fetchall()
        return [(number, (comment, seen)) for number, comment, seen in rows]

    def drop_comments(self, numbers: list[int]) -> None:
        with self.cursor() as cursor:
            cursor.execute("delete from wheelpin_comments where id = any(%s)", (numbers,))

    # -- what was said lately (a refusal, once a period) -----------------------------------------

    def said_lately(self, key: str, period: float) -> bool:
        """Whether `key` was said within `period` seconds, by any replica; if not, it counts
        as said now. One statement: of two replicas asking at once, one inserts or moves the
        row and the other finds it fresh (ON CONFLICT … DO UPDATE … WHERE returns no row
        when the WHERE leaves it alone)."""
        with self.cursor() as cursor:
            row = cursor.execute(
                f"insert into wheelpin_said as s (key, at) values (%s, {NOW}) on conflict (key) do update"
                f" set at = excluded.at where s.at <= {NOW} - %s returning at",
                (key, period),
            ).fetchone()
        return row is None

    # -- the repositories' leases (app/lease.py) ------------------------------------------------

    def take_lease(self, repository: str, holder: str, seconds: float) -> tuple[int | None, float]:
        """(the new epoch, 0) when `repository`'s lease was free or expired, now held by
        `holder` for `seconds`; (None, seconds it is still held) when another holds it.
        Taking it raises the epoch: whoever held it before can renew it no more. A row the
        DO UPDATE's WHERE leaves alone is not updated and not returned, and two takers of
        one row are serialized on it (https://www.postgresql.org/docs/15/sql-insert.html,
        "ON CONFLICT Clause")."""
        with self.cursor() as cursor:
            row = cursor.execute(
                "insert into wheelpin_leases as l (repository, epoch, holder, expires)"
                f" values (%s, 1, %s, {NOW} + %s) on conflict (repository) do update"
                " set epoch = l.epoch + 1, holder = excluded.holder, expires = excluded.expires"
                f" where l.expires <= {NOW} returning epoch",
                (repository, holder, seconds),
            ).fetchone()
            if row is not None:
                return int(row[0]), 0.0
            held = cursor.execute(
                f"select expires - {NOW} from wheelpin_leases where repository = %s", (repository,)
            ).fetchone()
        return None, max(float(held[0]) if held else 0.0, 0.0)

    def renew_lease(self, repository: str, epoch: int, seconds: float) -> bool:
        """The lease held for `seconds` more, if `epoch` still holds it (one statement: a
        takeover either came before it, and this fails, or waits for its row lock)."""
        with self.cursor() as cursor:
            row = cursor.execute(
                f"update wheelpin_leases set expires = {NOW} + %s where repository = %s and epoch = %s returning epoch",
                (seconds, repository, epoch),
            ).fetchone()
        return row is not None

    def release_lease(self, repository: str, epoch: int) -> None:
        """The lease free at once for the next job (if `epoch` still holds it)."""
        with self.cursor() as cursor:
            cursor.execute(
                f"update wheelpin_leases set expires = {NOW} where repository = %s and epoch = %s", (repository, epoch)
            )

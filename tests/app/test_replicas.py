"""Several `wheelpin serve` processes sharing one PostgreSQL: subprocesses as
an operator runs them (separate caches, JSON logs), Debian's PostgreSQL
(tests/fixtures/postgres.py), the GitHub emulator and the real registry.

What is checked, and against what:
- a burst of 1,000 deliveries spread over the replicas: every one answered 202 and counted,
  the config changed mid-burst is seen, and the burst coalesces into a few passes;
- never two jobs of one repository at once: from the replicas' logs (each job's start and
  end), and from the emulator's request log, where each request to the repository falls
  inside a job of the one replica whose token it carried (each process holds its own);
- a replica SIGKILLed mid-job: its job is taken up by another only once its heartbeat is
  stale (procrastinate's stalled jobs, WHEELPIN_STALLED_AFTER), and the pass completes;
- the schedule fires once per period across replicas: procrastinate records one tick per
  period (`procrastinate_periodic_defers`), and a component made due runs once;
- PostgreSQL restarted under a stream of deliveries: each is answered 202 or
  503 (never 500), /healthz stays 200 throughout, every replica's worker starts again by
  itself, and every delivery answered 202 is followed by a job of its key (from the logs);
- a replica SIGSTOPped just before it dispatches, past its job's takeover, then SIGCONTed:
  the replica that took the job over dispatched, and the resumed one writes nothing (its
  lease's epoch was raised: app/lease.py): one run for the head, never two.
"""

from __future__ import annotations

import datetime
import json
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import psycopg
import requests

from bot.adapters.git import git
from tests.app.bots import APP_ID, COMPONENT, SECRET, app_on_emulator, wait_until
from tests.app.test_serve_command import Process
from tests.app.worlds import NEW_VERSION, World, make_world
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.emulator import Repo as EmulatedRepo
from tests.fixtures.github.openapi import validate_recorded
from tests.fixtures.postgres import Postgres
from tests.fixtures.servers import Registry
from tests.fixtures.webhooks import deliver, example

REPOSITORY = "rocm/atom"


@dataclass
class Fleet:
    world: World
    emulator: GitHubEmulator
    repo: EmulatedRepo
    database: str
    processes: list[Process]
    urls: list[str] = field(default_factory=list)

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database, autocommit=True) as connection:
            cursor = connection.execute(query, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def busy(self) -> int:
        (row,) = self.sql(
            "select count(*) from procrastinate_jobs where task_name = 'wheelpin.job' and status in ('todo', 'doing')"
        )
        return int(row[0])

    def idle(self, timeout: float = 180) -> None:
        """No job waits or runs (a job's follow-ups are deferred before it ends)."""
        wait_until(lambda: self.busy() == 0, timeout, "the shared queue to drain")

    def records(self, index: int | None = None) -> list[dict[str, Any]]:
        chosen = self.processes if index is None else [self.processes[index]]
        return [json.loads(line) for process in chosen for line in list(process.lines) if line.startswith("{")]

    def events(self, name: str, index: int | None = None) -> list[dict[str, Any]]:
        return [record for record in self.records(index) if record.get("event") == name]

    def make_due(self, repository: str, component: str) -> None:
        (row,) = self.sql(
            "update wheelpin_schedules set due = 0 where repository = %s and component = %s returning component",
            repository,
            component,
        )
        assert row == (component,)


@contextmanager
def fleet(world: World, tmp_path: Path, postgres: Postgres, count: int, **env: str) -> Iterator[Fleet]:
    emulator, repo, _private = app_on_emulator(world, tmp_path)
    database = postgres.database(f"fleet_{uuid.uuid4().hex[:10]}")
    common = {
        **world.env,
        "WHEELPIN_GITHUB_API_URL": emulator.url,
        "WHEELPIN_GITHUB_APP_ID": str(APP_ID),
        "WHEELPIN_GITHUB_PRIVATE_KEY_FILE": str(tmp_path / "app.pem"),
        "WHEELPIN_WEBHOOK_SECRET_FILE": str(tmp_path / "webhook-secret"),
        "WHEELPIN_DATABASE_URL": database,
        "WHEELPIN_LOG_LEVEL": "debug",
        "WHEELPIN_LOG_FORMAT": "json",
        "WHEELPIN_SCHEDULE_JITTER": "0",
        "WHEELPIN_TICK_SECONDS": "1",
        "WHEELPIN_STALLED_AFTER": "5",
        "WHEELPIN_QUEUE_BACKOFF": "0.2",
        "WHEELPIN_WORKERS": "2",
        **env,
    }
    processes: list[Process] = []
    try:
        for index in range(count):
            processes.append(Process({**common, "WHEELPIN_CACHE_DIR": str(tmp_path / f"cache-{index}")}, "--port", "0"))
        made = Fleet(world, emulator, repo, database, processes, [process.url() for process in processes])
        for url in made.urls:
            wait_until(lambda url=url: requests.get(url + "/readyz", timeout=5).status_code == 200, 60, "/readyz")
        wait_until(lambda: made.events("component.pass"), 120, "the first pass")
        made.idle()
        yield made
        for process in made.processes:  # SIGTERM: each stops cleanly, its running jobs finished
            assert process.stop() == 0 and process.lines[-1] == "wheelpin: stopped", process.lines[-3:]
        assert emulator.errors == []
        kinds = {
            (r.method, r.template, r.status, json.dumps(r.request, sort_keys=True)[:200]): r for r in emulator.recorded
        }
        validate_recorded(kinds.values())
    except BaseException:
        for index, process in enumerate(processes):  # what each replica said, for the failure's report
            print(f"--- replica {index}:", *process.lines[-25:], sep="\n")
        raise
    finally:
        for process in processes:
            if process.proc.poll() is None:
                process.stop()
        emulator.stop()


def at(record: dict[str, Any]) -> float:
    return datetime.datetime.fromisoformat(record["timestamp"]).timestamp()


def spans(made: Fleet, repository: str) -> list[tuple[float, float, int]]:
    """Each job of `repository` that ran: (start, end, the replica's index). Within one
    replica they come one after the other (two starts in a row would be an overlap)."""
    found = []
    for index in range(len(made.processes)):
        started: float | None = None
        marks = [
            r
            for r in made.records(index)
            if r.get("repository") == repository and r.get("event") in ("job.started", "job.finished")
        ]
        for record in marks:
            if record["event"] == "job.started":
                assert started is None, f"replica {index} started a second job of {repository} during one"
                started = at(record)
            else:
                assert started is not None
                found.append((started, at(record), index))
                started = None
    return sorted(found)


def test_a_thousand_deliveries_across_replicas_and_never_two_jobs_of_one_repository_at_once(
    registry: Registry, postgres: Postgres, tmp_path: Path
) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/fleet-{uuid.uuid4().hex[:8]}/demo-cache")
    with fleet(world, tmp_path, postgres, 3) as made:
        world.commit_upstream("one", NEW_VERSION)  # passes have work to do: dispatch, then wait on the build
        before = len(made.events("component.pass"))
        answers: list[int] = []
        guard = threading.Lock()
        push = example("push")
        push.update(ref="refs/heads/main", repository={**push["repository"], "full_name": REPOSITORY})
        run = example("workflow_run", "completed")
        run["repository"] = {**run["repository"], "full_name": REPOSITORY}
        run["workflow_run"] = {**run["workflow_run"], "path": ".github/workflows/w.yaml"}

        def sender(part: range) -> None:
            session = requests.Session()
            for index in part:  # round robin over the replicas, as a load balancer would
                event, payload = ("push", push) if index % 2 == 0 else ("workflow_run", run)
                answer = deliver(session, made.urls[index % len(made.urls)], SECRET, event, payload)
                with guard:
                    answers.append(answer.status_code)

        threads = [threading.Thread(target=sender, args=(range(i, 1000, 8),)) for i in range(8)]
        for thread in threads[:4]:
            thread.start()
        wait_until(lambda: len(answers) >= 400, 120, "half the burst")
        world.set_config('labels = ["wheelpin"]', 'labels = ["wheelpin", "burst"]')
        git(["push", "--quiet", "--force", str(made.repo.path), "main:main"], cwd=world.downstream)
        changed = git(["rev-parse", "main"], cwd=world.downstream).strip()
        for thread in threads[4:]:
            thread.start()
        for thread in threads:
            thread.join(300)
        assert len(answers) == 1000 and set(answers) == {202}
        made.idle()
        queued = 0.0
        for url in made.urls:
            text = requests.get(url + "/metrics", timeout=5).text
            queued += sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("wheelpin_webhook_deliveries_total{") and 'outcome="queued"' in line
            )
        assert queued == 1000  # none lost, whichever replica took it
        assert any(r.get("base") == changed for r in made.events("config.loaded"))  # the change mid-burst seen
        passes = len(made.events("component.pass")) - before
        assert 1 <= passes <= 90, passes  # 1,000 deliveries coalesce into a few passes
        took = {index for index in range(3) if made.events("job.started", index)}
        assert len(took) >= 2, took  # the work was shared

        # never two jobs of the repository at once, across replicas
        ran = spans(made, REPOSITORY)
        for (_start, end, who), (next_start, _end, next_who) in pairwise(ran):
            assert next_start >= end, f"replica {next_who} started a job at {next_start} while {who}'s ran"
        # and the emulator saw each request to it from inside a job of the replica holding that token
        owners: dict[str, set[int]] = {}
        for record in made.emulator.recorded:
            if not record.path.startswith(f"/repos/{REPOSITORY}/"):
                continue
            inside = {who for start, end, who in ran if start - 0.001 <= record.at <= end + 0.001}
            assert len(inside) == 1, (record.method, record.path, record.at, inside)
            owners.setdefault(record.credential, set()).update(inside)
        assert owners and all(len(who) == 1 for who in owners.values()), owners
        print(f"1000 deliveries over 3 replicas → {passes} component passes, {len(ran)} jobs of {REPOSITORY}")


def hold_first(made: Any, matches: Callable[[str, str], bool]) -> tuple[threading.Event, threading.Event]:
    """The first GitHub request that `matches` (method, path) is held until `release` is
    set; `held` says it came."""
    held, release = threading.Event(), threading.Event()

    def hold(method: str, path: str, token: str) -> None:
        if matches(method, path) and not held.is_set():
            held.set()
            release.wait(120)

    made.emulator.before = hold
    return held, release


def test_a_replica_killed_mid_job_is_taken_over_once_its_heartbeat_is_stale(
    registry: Registry, postgres: Postgres, tmp_path: Path
) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/fleet-{uuid.uuid4().hex[:8]}/demo-cache")
    with fleet(world, tmp_path, postgres, 2) as made:
        head = world.commit_upstream("one", NEW_VERSION)
        held, release = hold_first(made, lambda method, path: path.startswith(f"/repos/{REPOSITORY}/"))
        made.make_due(REPOSITORY, COMPONENT)  # the next tick defers the component's pass
        assert held.wait(60), "no replica started the pass"
        running = [
            index
            for index in range(2)
            if len(made.events("job.started", index)) > len(made.events("job.finished", index))
        ]
        (victim,) = running
        survivor = 1 - victim
        made.processes[victim].proc.send_signal(signal.SIGKILL)
        killed = time.time()
        made.processes[victim].proc.wait(10)
        release.set()
        dispatched = wait_until(
            lambda: [r for r in made.repo.runs.values() if r.inputs == {"c": head}],
            90,
            "the survivor to take up the pass and dispatch the build",
        )
        assert len(dispatched) == 1
        taken = [
            r
            for r in made.events("job.started", survivor)
            if r.get("component") == COMPONENT and r.get("delivery") == "schedule" and at(r) > killed
        ]
        assert taken, "the survivor ran the killed replica's job"
        # not before its heartbeat was 5 s stale: its last one came at most a heartbeat's
        # interval (a third of WHEELPIN_STALLED_AFTER, app/pgqueue.py) before the kill, and the
        # job handed back is announced, so taken at once
        assert at(taken[0]) >= killed + 5.0 - 5.0 / 3
        assert any("job.stalled" == r.get("event") for r in made.records(survivor))
        made.idle()
        made.processes.pop(victim)


def test_the_schedule_fires_once_per_period_across_replicas(
    registry: Registry, postgres: Postgres, tmp_path: Path
) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/fleet-{uuid.uuid4().hex[:8]}/demo-cache")
    with fleet(world, tmp_path, postgres, 3) as made:
        start = time.time()
        time.sleep(6)
        stamps = [r["period"] for r in made.events("schedule.tick") if r["period"] >= start]
        # one tick a second across the three (procrastinate's periodic defers: one row per period)
        assert len(stamps) >= 4 and len(stamps) == len(set(stamps)), stamps
        for round_ in range(3):
            before = [r for r in made.events("component.pass") if r.get("delivery") == "schedule"]
            made.make_due(REPOSITORY, COMPONENT)
            wait_until(
                lambda before=before: (
                    len([r for r in made.events("component.pass") if r.get("delivery") == "schedule"]) > len(before)
                ),
                60,
                "the scheduled pass",
            )
            made.idle()
            time.sleep(2)  # two more ticks: none fires it again
            after = [r for r in made.events("component.pass") if r.get("delivery") == "schedule"]
            assert len(after) == len(before) + 1, (round_, len(before), len(after))
        (due,) = made.sql(
            "select due from wheelpin_schedules where repository = %s and component = %s", REPOSITORY, COMPONENT
        )
        assert due[0] > time.time() + 60  # its next time is its schedule's, not the tick's


def test_a_database_that_restarts_under_load_is_a_pause(registry: Registry, tmp_path: Path) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/fleet-{uuid.uuid4().hex[:8]}/demo-cache")
    server = Postgres()  # a server of its own: this test stops it
    try:
        with fleet(world, tmp_path, server, 2) as made:
            push = example("push")
            push.update(ref="refs/heads/main", repository={**push["repository"], "full_name": REPOSITORY})
            sent: list[tuple[float, int, list[str]]] = []  # (sent at, answer, the jobs it queued)
            health: list[tuple[float, int]] = []
            done = threading.Event()

            def sender(offset: int) -> None:
                session = requests.Session()
                number = offset
                while not done.is_set():
                    started = time.time()
                    answer = deliver(session, made.urls[number % 2], SECRET, "push", push)
                    sent.append(
                        (
                            started,
                            answer.status_code,
                            answer.json().get("jobs", []) if answer.status_code == 202 else [],
                        )
                    )
                    number += 1
                    time.sleep(0.1)

            def prober() -> None:
                while not done.is_set():
                    for url in made.urls:
                        health.append((time.time(), requests.get(url + "/healthz", timeout=10).status_code))
                    time.sleep(0.5)

            threads = [threading.Thread(target=sender, args=(i,)) for i in range(2)]
            threads.append(threading.Thread(target=prober))
            for thread in threads:
                thread.start()
            time.sleep(2)
            server.down()
            down = time.time()
            time.sleep(8)  # procrastinate's listeners fail meanwhile, and deliveries find no database
            server.start()
            up = time.time()
            for url in made.urls:  # each replica ready again by itself
                wait_until(
                    lambda url=url: requests.get(url + "/readyz", timeout=10).status_code == 200,
                    60,
                    "/readyz after the restart",
                )
            recovered = time.time()
            time.sleep(3)  # deliveries to the recovered fleet
            done.set()
            for thread in threads:
                thread.join(30)
            try:
                made.idle(60)
            except AssertionError:
                print(
                    "queue left:",
                    made.sql(
                        "select id, status, task_name, lock, worker_id, attempts, scheduled_at,"
                        " now() from procrastinate_jobs where status in ('todo', 'doing')"
                    ),
                )
                print("queue left:", made.sql("select id, last_heartbeat, now() from procrastinate_workers"))
                for index in range(2):
                    print(
                        "queue left:",
                        index,
                        [
                            line
                            for line in made.processes[index].lines
                            if "restart" in line or "stalled" in line or "Side" in line
                        ][-20:],
                    )
                raise
            answers = [status for _at, status, _jobs in sent]
            assert set(answers) <= {202, 503}, sorted(set(answers))
            assert 503 in answers  # the outage was seen at the door, as a 503
            assert [at for at, status, _jobs in sent if status == 202 and at > recovered]
            assert health and {status for _at, status in health} == {200}  # liveness never failed
            # every delivery answered 202 is followed by a job of its key: its own, or the one
            # waiting it coalesced into
            started = [(at(r), r.get("job")) for r in made.events("job.started") if r.get("repository") == REPOSITORY]
            lost = [
                (round(sent_at - down, 2), kinds)
                for sent_at, status, kinds in sent
                if status == 202
                and not all(any(kind == job and when >= sent_at for when, job in started) for kind in kinds)
            ]
            assert lost == [], lost
            # no job given up (a tick that failed is not one: the next tick does its work)
            assert (
                made.sql(
                    "select id, args from procrastinate_jobs where status = 'failed' and task_name = 'wheelpin.job'"
                )
                == []
            )
            restarted = made.events("queue.worker_restarting")
            print(
                f"PostgreSQL down {up - down:.1f} s: {answers.count(202)} deliveries accepted, "
                f"{answers.count(503)} answered 503; ready again {recovered - up:.1f} s after it came back; "
                f"{len(restarted)} worker restarts"
            )
    finally:
        server.stop()


def test_a_replica_paused_past_its_takeover_writes_nothing_beside_the_one_that_took_it_over(
    registry: Registry, postgres: Postgres, tmp_path: Path
) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/fleet-{uuid.uuid4().hex[:8]}/demo-cache")
    with fleet(world, tmp_path, postgres, 2) as made:
        head = world.commit_upstream("one", NEW_VERSION)
        # the listing of the workflow's runs that comes right before a dispatch
        held, release = hold_first(
            made,
            lambda method, path: (
                method == "GET" and "/actions/workflows/" in path and path.split("?")[0].endswith("/runs")
            ),
        )
        made.make_due(REPOSITORY, COMPONENT)
        assert held.wait(60), "no replica came to dispatch"
        running = [
            index
            for index in range(2)
            if len([r for r in made.events("job.started", index) if r.get("repository") == REPOSITORY])
            > len([r for r in made.events("job.finished", index) if r.get("repository") == REPOSITORY])
        ]
        (victim,) = running
        paused = made.processes[victim].proc
        paused.send_signal(signal.SIGSTOP)
        try:
            release.set()  # its answer waits in its socket: no run yet, so it would dispatch on waking
            wait_until(
                lambda: [r for r in made.repo.runs.values() if r.inputs == {"c": head}],
                90,
                "the other replica to take the pass over and dispatch the build",
            )
        finally:
            paused.send_signal(signal.SIGCONT)

        def ended() -> bool:  # the resumed replica's pass is over, whatever it did
            mine = [
                r
                for r in made.records(victim)
                if r.get("repository") == REPOSITORY and r.get("event") in ("job.started", "job.finished")
            ]
            return bool(mine) and mine[-1]["event"] == "job.finished"

        wait_until(ended, 60, "the resumed replica's pass to end")
        made.idle()
        time.sleep(1)
        dispatched = [r for r in made.repo.runs.values() if r.inputs == {"c": head}]
        assert len(dispatched) == 1, [(r.id, r.actor) for r in dispatched]
        assert made.events("job.fenced", victim)  # it stopped at its write, and said why
        assert made.events("job.stalled", 1 - victim) or made.events("job.stalled", victim)

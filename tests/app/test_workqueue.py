"""The work queue: coalescing, one run per key, backoff that holds up no other key, close."""

from __future__ import annotations

import threading
import time

from bot.app.workqueue import WorkQueue


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_for_one_key_while_it_runs_costs_at_most_two_passes() -> None:
    queue: WorkQueue[str] = WorkQueue()
    runs: list[str] = []
    started, release = threading.Event(), threading.Event()

    def worker() -> None:
        while (taken := queue.get(timeout=0.3)) is not None:
            runs.append(taken[0])
            started.set()
            release.wait(5)
            queue.done(taken[0], ok=True)

    queue.put("rocm/atom:lmcache", note="d-0")
    thread = threading.Thread(target=worker)
    thread.start()
    assert started.wait(5)
    for number in range(1, 100):  # 99 more while the first runs
        queue.put("rocm/atom:lmcache", note=f"d-{number}")
    release.set()
    thread.join(10)
    assert runs == ["rocm/atom:lmcache", "rocm/atom:lmcache"]
    assert queue.puts == 100 and queue.runs == 2


def test_a_burst_before_the_worker_starts_costs_one_pass_and_keeps_the_newest_notes() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for number in range(100):
        queue.put("k", note=f"d-{number}")
    key, notes = queue.get(timeout=1) or ("", [])
    assert key == "k" and notes == [f"d-{n}" for n in range(95, 100)]
    queue.done("k", ok=True)
    assert queue.get(timeout=0.05) is None


def test_one_run_per_key_at_a_time_with_many_workers() -> None:
    queue: WorkQueue[int] = WorkQueue()
    running: dict[int, int] = {}
    overlap: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        while (taken := queue.get(timeout=0.2)) is not None:
            key = taken[0]
            with lock:
                running[key] = running.get(key, 0) + 1
                if running[key] > 1:
                    overlap.append(key)
            time.sleep(0.002)
            with lock:
                running[key] -= 1
            queue.done(key, ok=True)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for index in range(400):
        queue.put(index % 3)
    for thread in threads:
        thread.join(20)
    assert overlap == [] and queue.stats().waiting == 0


def test_a_failing_key_backs_off_and_the_others_go_on() -> None:
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(backoff=30, max_backoff=100, clock=clock)
    queue.put("broken")
    assert (queue.get(timeout=0) or ("",))[0] == "broken"
    queue.done("broken", ok=False)
    queue.put("broken")
    queue.put("fine")
    assert (queue.get(timeout=0) or ("",))[0] == "fine"  # not held up
    queue.done("fine", ok=True)
    assert queue.get(timeout=0) is None and queue.stats().backing_off == 1
    clock.now += 31
    assert (queue.get(timeout=0) or ("",))[0] == "broken"
    queue.done("broken", ok=False)  # twice: 60 s
    queue.put("broken")
    clock.now += 59
    assert queue.get(timeout=0) is None
    clock.now += 2
    assert (queue.get(timeout=0) or ("",))[0] == "broken"
    queue.done("broken", ok=False)  # capped at 100 s
    queue.put("broken")
    clock.now += 101
    assert (queue.get(timeout=0) or ("",))[0] == "broken"
    queue.done("broken", ok=True)
    assert queue.failures("broken") == 0


def test_a_failed_key_runs_again_by_itself_after_its_backoff() -> None:
    """Nobody may put it again (a failed refresh at start, a command): it is not lost."""
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(backoff=30, clock=clock)
    queue.put("installations", note="start")
    assert queue.get(timeout=0) == ("installations", ["start"])
    queue.done("installations", ok=False)
    assert queue.get(timeout=0) is None and queue.stats().waiting == 1
    clock.now += 31
    assert queue.stats().oldest_wait == 1  # waiting since its backoff ended, not since it failed
    assert (queue.get(timeout=0) or ("",))[0] == "installations"
    queue.done("installations", ok=True)
    assert queue.get(timeout=0) is None and queue.stats().waiting == 0


def test_a_failure_that_says_how_long_it_lasts_backs_off_at_least_that_long() -> None:
    """A rate limit's wait (GitHub's write limit, Retry-After) outlasts the doubling backoff,
    capped like it; the other keys go on meanwhile."""
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(backoff=30, max_backoff=3600, clock=clock)
    queue.put("a")
    queue.put("b")
    assert (queue.get(timeout=0) or ("",))[0] == "a"
    queue.done("a", ok=False, retry_after=900)
    assert (queue.get(timeout=0) or ("",))[0] == "b"
    queue.done("b", ok=True)
    clock.now += 899
    assert queue.get(timeout=0) is None
    clock.now += 2
    assert (queue.get(timeout=0) or ("",))[0] == "a"
    queue.done("a", ok=False, retry_after=10)  # shorter than the doubling (60 s): the doubling holds
    clock.now += 59
    assert queue.get(timeout=0) is None
    queue.put("c")
    assert (queue.get(timeout=0) or ("",))[0] == "c"
    queue.done("c", ok=False, retry_after=10**9)  # capped
    clock.now += 3601
    assert {(queue.get(timeout=0) or ("",))[0] for _ in range(2)} == {"a", "c"}


def test_an_urgent_key_goes_before_those_that_waited_longer() -> None:
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for key in ("poll-a", "poll-b"):
        queue.put(key)
        clock.now += 1
    queue.put("command", urgent=True)
    queue.put("poll-a")  # coalesced: keeps its place
    order = []
    while (taken := queue.get(timeout=0)) is not None:
        order.append(taken[0])
        queue.done(taken[0], ok=True)
    assert order == ["command", "poll-a", "poll-b"]


def test_close_hands_out_nothing_more_and_wakes_waiters() -> None:
    queue: WorkQueue[str] = WorkQueue()
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(queue.get()))
    thread.start()
    time.sleep(0.05)
    queue.close()
    thread.join(2)
    assert got == [None] and not thread.is_alive()
    queue.put("late")
    assert queue.get(timeout=0) is None


def test_stats_tell_a_stuck_queue() -> None:
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.put("a")
    queue.put("b")
    clock.now += 50
    assert queue.stats().oldest_wait == 50 and queue.stats().waiting == 2
    queue.get(timeout=0)
    clock.now += 10
    stats = queue.stats()
    assert stats.running == 1 and stats.longest_run == 10 and stats.oldest_wait == 60
    assert stats.since_done == 60
    queue.done("a", ok=True)
    clock.now += 5
    stats = queue.stats()
    assert stats.since_done == 5 and stats.oldest_wait == 65  # b still waits, but the queue moves


def test_several_workers_never_run_two_keys_of_one_repository_at_once() -> None:
    """Workers take keys of other repositories while one repository's long job runs; a
    second key of that repository waits for it; the "*" group (the installations) runs alone."""
    queue: WorkQueue[str] = WorkQueue(group=lambda key: key.split(":")[0])
    for key in ("a:slow", "a:other", "b:one", "c:one"):
        queue.put(key)
    first = queue.get(timeout=1)
    assert first is not None and first[0] == "a:slow"
    taken = [queue.get(timeout=1), queue.get(timeout=1)]
    assert sorted(t[0] for t in taken if t) == ["b:one", "c:one"]  # not held up by a:slow
    assert queue.get(timeout=0.2) is None  # a:other waits for a:slow
    for key, _notes in [t for t in taken if t]:
        queue.done(key, ok=True)
    queue.put("*:installations")
    assert queue.get(timeout=0.2) is None  # "*" waits until nothing else runs
    started = time.monotonic()
    threading.Timer(0.3, lambda: queue.done("a:slow", ok=True)).start()
    nxt = queue.get(timeout=5)  # woken by done(), not by polling
    assert nxt is not None and nxt[0] in ("a:other", "*:installations") and time.monotonic() - started < 2
    assert queue.get(timeout=0.2) is None  # whichever it was, the other waits for it

"""The service's work queue (docs/design.md §2, app/): webhooks and the schedule only put keys
here; workers take them one at a time.

- A key is what to do again (a repository, a component, a kind of job). Putting a key
  that is already waiting does nothing: a burst of deliveries for one key coalesces.
  Putting a key while it runs marks it to run once more afterwards, so whatever the
  burst changed is seen, and 100 deliveries cost at most 2 passes.
- One run per key at a time, and one per group (`group(key)`: a repository) when several
  workers take keys: a key whose group runs waits; the group "*" runs alone. The key that
  has waited longest goes first, an urgent one (a command a human typed) before all others.
- A key whose job fails runs again by itself after a backoff (doubling, capped); other
  keys go on.
- `close()` hands out nothing more; the job running finishes, waiting keys are dropped
  (the loop is level-triggered: the next start observes the world and repairs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class _Entry:
    waiting_since: float | None = None  # waiting to run (None: not waiting)
    running_since: float | None = None
    again: bool = False  # put while running: run once more
    not_before: float = 0.0  # backoff after failures
    failures: int = 0
    urgent: bool = False  # handed out before the others (a human waits for it)
    puts: int = 0
    notes: list[str] = field(default_factory=list)  # e.g. the deliveries that asked, newest last


@dataclass(frozen=True)
class QueueStats:
    waiting: int
    running: int
    backing_off: int
    oldest_wait: float  # seconds the longest-waiting eligible key has waited (since any backoff ended)
    longest_run: float  # seconds the longest-running job has run
    since_done: float  # seconds since a job last finished (or since the queue was made)
    puts: int
    runs: int


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        backoff: float = 30.0,
        max_backoff: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        group: Callable[[K], str] | None = None,
    ) -> None:
        self.backoff, self.max_backoff = backoff, max_backoff
        self.group = group
        self.clock = clock
        self._entries: dict[K, _Entry] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._last_done = clock()
        self.puts = 0
        self.runs = 0

    def put(self, key: K, *, note: str | None = None, urgent: bool = False) -> None:
        """Queue `key` (see the module's rules); an `urgent` one is taken before any other
        that may run, longest-waiting first among its kind."""
        with self._cond:
            if self._closed:
                return
            entry = self._entries.setdefault(key, _Entry())
            entry.urgent = entry.urgent or urgent
            entry.puts += 1
            self.puts += 1
            if note:
                entry.notes = (entry.notes + [note])[-5:]
            if entry.running_since is not None:
                entry.again = True
            elif entry.waiting_since is None:
                entry.waiting_since = self.clock()
            self._cond.notify()

    def _eligible(self, now: float) -> list[tuple[float, K]]:
        ready = [
            (e.waiting_since, k)
            for k, e in self._entries.items()
            if e.waiting_since is not None and e.running_since is None and e.not_before <= now
        ]
        if self.group is not None:
            busy = {self.group(k) for k, e in self._entries.items() if e.running_since is not None}
            ready = [
                (since, k)
                for since, k in ready
                if "*" not in busy and self.group(k) not in busy and not (busy and self.group(k) == "*")
            ]
        return sorted(ready, key=lambda pair: (not self._entries[pair[1]].urgent, pair[0]))

    def get(self, timeout: float | None = None) -> tuple[K, list[str]] | None:
        """The key that has waited longest and may run now, and the notes put with it; None
        when closed, or when nothing became eligible within `timeout` seconds."""
        deadline = None if timeout is None else self.clock() + timeout
        with self._cond:
            while not self._closed:
                now = self.clock()
                ready = self._eligible(now)
                if ready:
                    key = ready[0][1]
                    entry = self._entries[key]
                    entry.waiting_since, entry.running_since = None, now
                    notes, entry.notes = entry.notes, []
                    self.runs += 1
                    return key, notes
                pending = [
                    e.not_before
                    for e in self._entries.values()  # a key its group holds up waits
                    if e.waiting_since is not None and e.running_since is None and e.not_before > now
                ]
                wait = min(pending) - now if pending else None
                if deadline is not None:
                    left = deadline - now
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(None if wait is None else max(wait, 0.001))
            return None

    def done(self, key: K, *, ok: bool, retry_after: float | None = None) -> None:
        """The run of `key` ended. A failed one backs off (doubling per failure), at least
        `retry_after` seconds when the failure said how long it lasts (a rate limit)."""
        with self._cond:
            entry = self._entries[key]
            entry.running_since = None
            now = self.clock()
            self._last_done = now
            if ok:
                entry.failures, entry.not_before = 0, 0.0
            else:
                entry.failures += 1
                doubling = self.backoff * 2 ** (entry.failures - 1)
                entry.not_before = now + min(max(doubling, retry_after or 0.0), self.max_backoff)
                if entry.waiting_since is None:  # it runs again by itself once its backoff is over
                    entry.waiting_since = now
            if entry.again:
                entry.again = False
                entry.waiting_since = now
            if entry.waiting_since is None and entry.failures == 0:
                del self._entries[key]  # nothing to remember
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def failures(self, key: K) -> int:
        with self._cond:
            entry = self._entries.get(key)
            return entry.failures if entry else 0

    def stats(self) -> QueueStats:
        with self._cond:
            now = self.clock()
            # a key backing off has waited only since its backoff ended; one held up by its
            # group's running job waits all the same
            waits = [
                now - max(e.waiting_since, e.not_before)
                for e in self._entries.values()
                if e.waiting_since is not None and e.running_since is None and e.not_before <= now
            ]
            runs = [now - e.running_since for e in self._entries.values() if e.running_since is not None]
            return QueueStats(
                waiting=sum(1 for e in self._entries.values() if e.waiting_since is not None),
                running=len(runs),
                backing_off=sum(1 for e in self._entries.values() if e.not_before > now),
                oldest_wait=max(waits, default=0.0),
                longest_run=max(runs, default=0.0),
                since_done=now - self._last_done,
                puts=self.puts,
                runs=self.runs,
            )

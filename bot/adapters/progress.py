"""Long transfers said as they go (issue 18): a blob uploaded to or downloaded from a
registry (a wheel image's layer, a consuming image's layer), a build's artifact. On a
terminal, a bar on stderr redrawn at most ten times a second; otherwise (a service, CI,
`--json`), a `progress` log event every WHEELPIN_PROGRESS_SECONDS, so a long upload is
visible in the logs without a line per chunk. Work shorter than that says nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

_mode = "log"  # "bar" on a terminal whose log lines are for humans; "log" otherwise
_interval = 10.0
_lock = threading.Lock()  # one bar at a time on the terminal
REDRAW = 0.1  # seconds between two drawings of a bar


def configure(*, bar: bool, interval: float) -> None:
    """Set by the command's start (bot/cli.py): a bar when stderr is a terminal read by a human."""
    global _mode, _interval
    _mode, _interval = ("bar" if bar else "log"), interval


def _size(count: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError


class Progress:
    """`advance(n)` as bytes go; `close()` at the end (a bar's last line, a log's last event)."""

    def __init__(self, what: str, total: int | None, *, clock: Callable[[], float] = time.monotonic,
                 stream: TextIO | None = None, mode: str | None = None, interval: float | None = None) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self.clock = clock
        self.stream = stream
        self.mode = mode or _mode
        self.interval = _interval if interval is None else interval
        self.started = self.last = clock()
        self.said = False

    def advance(self, count: int) -> None:
        self.done += count
        now = self.clock()
        if self.mode == "bar":
            if now - self.last >= REDRAW:
                self.last = now
                self._draw(now)
        elif now - self.last >= self.interval:
            self.last = now
            self._log("progress", now)

    def close(self) -> None:
        now = self.clock()
        if self.mode == "bar":
            if self.said:
                self._draw(now)
                (self.stream or sys.stderr).write("\n")
        elif self.said:  # a transfer long enough to have been said is said to have ended
            self._log("progress.done", now)

    def _rate(self, now: float) -> float:
        return self.done / max(now - self.started, 1e-9)

    def _log(self, event: str, now: float) -> None:
        import structlog

        self.said = True
        structlog.get_logger("wheelpin.progress").info(
            event, what=self.what, done_bytes=self.done, total_bytes=self.total,
            percent=round(100 * self.done / self.total, 1) if self.total else None,
            bytes_per_second=round(self._rate(now)))

    def _draw(self, now: float) -> None:
        self.said = True
        if self.total:
            share = min(self.done / self.total, 1.0)
            bar = "#" * int(share * 30)
            text = (f"\r{self.what[:40]:40s} [{bar:30s}] {share * 100:5.1f}% "
                    f"{_size(self.done)}/{_size(self.total)} {_size(self._rate(now))}/s")
        else:
            text = f"\r{self.what[:40]:40s} {_size(self.done)} {_size(self._rate(now))}/s"
        with _lock:
            stream = self.stream or sys.stderr
            stream.write(text)
            stream.flush()


def tracked(chunks: Iterable[bytes], what: str, total: int | None) -> Iterator[bytes]:
    """`chunks`, passed on as they come, said as they go."""
    progress = Progress(what, total)
    try:
        for chunk in chunks:
            progress.advance(len(chunk))
            yield chunk
    finally:
        progress.close()

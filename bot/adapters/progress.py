"""Long work said as it goes: a blob uploaded to or downloaded from a registry
(a wheel image's layer, a consuming image's layer), a build's artifact, a local build
(`build.command`: its time, the size of its log and the log's last line). On a terminal, a
bar on stderr redrawn at most ten times a second; otherwise (a service, CI, `--json`), a
`progress` log event every WHEELPIN_PROGRESS_SECONDS, so a long upload or build is visible
in the logs without a line per chunk. Work shorter than that says nothing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from ..core.sizes import size_text

_mode = "log"  # "bar" on a terminal whose log lines are for humans; "log" otherwise
_interval = 10.0
_lock = threading.Lock()  # one bar at a time on the terminal
REDRAW = 0.1  # seconds between two drawings of a bar
NOTE_LIMIT = 120  # characters of a build log's last line said with its progress
LOG_TAIL = 4096  # bytes read from a build log's end to find its last line
# ECMA-48 control sequences (colours, cursor moves: `ESC [ … final`), operating system
# commands (a window title: `ESC ] … BEL` or `ESC ] … ESC \`) and the two-byte escapes
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


def configure(*, bar: bool, interval: float) -> None:
    """Set by the command's start (bot/cli.py): a bar when stderr is a terminal read by a human."""
    global _mode, _interval
    _mode, _interval = ("bar" if bar else "log"), interval


def _size(count: float) -> str:
    return size_text(int(count))  # one spelling of a size wherever wheelpin says one


class Progress:
    """`advance(n)` as bytes go (for a build: its log's bytes, with its last line as `note`);
    `close()` at the end (a bar's last line, a log's last event)."""

    def __init__(
        self,
        what: str,
        total: int | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        stream: TextIO | None = None,
        mode: str | None = None,
        interval: float | None = None,
    ) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self.clock = clock
        self.stream = stream
        self.mode = mode or _mode
        self.interval = _interval if interval is None else interval
        self.started = self.last = clock()
        self.said = False
        self.note: str | None = None

    @property
    def tick(self) -> float:
        """How often something is said: what a waiting caller sleeps between two looks."""
        return REDRAW if self.mode == "bar" else max(self.interval, REDRAW)

    def advance(self, count: int, *, note: str | None = None) -> None:
        self.done += count
        self.note = note if note is not None else self.note
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
        from . import logs

        self.said = True
        logs.get_logger("wheelpin.progress").info(
            event,
            what=self.what,
            done_bytes=self.done,
            total_bytes=self.total,
            percent=round(100 * self.done / self.total, 1) if self.total else None,
            bytes_per_second=round(self._rate(now)),
            elapsed_seconds=round(now - self.started, 1),
            **({"last_line": self.note} if self.note is not None else {}),
        )

    def _draw(self, now: float) -> None:
        self.said = True
        if self.total:
            share = min(self.done / self.total, 1.0)
            bar = "#" * int(share * 30)
            text = (
                f"\r{self.what[:40]:40s} [{bar:30s}] {share * 100:5.1f}% "
                f"{_size(self.done)}/{_size(self.total)} {_size(self._rate(now))}/s"
            )
        elif self.note is not None:  # a build: its time, its log's size and last line
            elapsed = int(now - self.started)
            text = (
                f"\r{self.what[:40]:40s} {elapsed // 60:3d}m{elapsed % 60:02d}s "
                f"{_size(self.done):>9s} {self.note[:60]:60s}"
            )
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


def waited(
    process: subprocess.Popen[bytes],
    what: str,
    log: Path,
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """`process.wait(timeout)` for a build writing to `log`, said as it goes: each tick the
    log's growth and its last line. subprocess.TimeoutExpired past `timeout`, as wait's."""
    progress = Progress(what, None, clock=clock)
    deadline = clock() + timeout
    size = 0
    try:
        while True:
            try:
                return process.wait(timeout=max(min(progress.tick, deadline - clock()), 0))
            except subprocess.TimeoutExpired:
                if clock() >= deadline:
                    raise
            grown = log.stat().st_size if log.exists() else 0
            progress.advance(max(grown - size, 0), note=last_line(log))
            size = max(grown, size)
    finally:
        progress.close()


def last_line(log: Path) -> str:
    """The last non-empty line of a log, read from its last LOG_TAIL bytes (a build's log may
    be gigabytes), as printable text of at most NOTE_LIMIT characters: a build's output is
    upstream's code, and its escape sequences must not reach a terminal or a log stream."""
    try:
        with log.open("rb") as stream:
            stream.seek(max(stream.seek(0, 2) - LOG_TAIL, 0))
            tail = stream.read(LOG_TAIL)
    except OSError:
        return ""
    lines = [line for line in tail.replace(b"\r", b"\n").split(b"\n") if line.strip()]
    return printable(lines[-1].decode("utf-8", errors="replace"))[:NOTE_LIMIT] if lines else ""


def printable(line: str) -> str:
    """A line of a command's output as text that is safe to say: its escape sequences
    removed, other unprintable characters made spaces, stripped."""
    return "".join(c if c.isprintable() else " " for c in _ESCAPES.sub("", line)).strip()

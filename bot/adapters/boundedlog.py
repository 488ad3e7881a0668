"""The output of a repository's command (a local build, a smoke test) kept bounded while
it is written: the command writes into a pipe, never into a file of its own,
and wheelpin copies what comes into the log, keeping its first `head` bytes and its last
`tail` bytes. What lies between is cut, and the log says so on one line where it was
cut. The log on disk never passes head + 2 × tail bytes and a line, however much the
command prints; the command runs on (a long compile may well print a lot). Its end,
where the error is, stays the end of the file while the command runs, so the build's
progress (adapters/progress.py) still reads its last line there.
"""

from __future__ import annotations

import os
import select
import threading
from pathlib import Path

MiB = 1024 * 1024


def _cut_line(dropped: int) -> bytes:
    """The line where output was cut, of one width whatever the count (written when the
    cut happens, its count filled in at the end)."""
    return b"\n[wheelpin: %20d bytes of output cut here; the log keeps its first and last bytes]\n" % dropped


_CHUNK = 64 * 1024


class BoundedLog:
    """A pipe whose write end (`writer`) is the command's stdout and stderr, and a thread
    copying it into `path`. `finish()` after the command has ended."""

    def __init__(self, path: Path, *, head: int, tail: int) -> None:
        self.path = path
        self.head, self.tail = head, tail
        self.written = 0  # every byte the command wrote, kept or not
        self.cut = False
        self._start = head + len(_cut_line(0))  # where the kept tail begins once cut
        read, self.writer = os.pipe()
        self._read = read
        self._stop = threading.Event()
        self._file = path.open("wb")
        self._thread = threading.Thread(target=self._copy, name=f"log {path.name}", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The child holds its copy of the write end now: ours is closed, so the pipe ends
        (EOF) when the command and everything it started have closed theirs."""
        os.close(self.writer)

    def finish(self, *, grace: float = 5.0) -> int:
        """Wait for the copy to end; the bytes the command wrote. A process the command left
        behind holding the pipe (only ever unsandboxed) is not waited for past `grace`."""
        self._thread.join(grace)
        self._stop.set()
        self._thread.join()
        os.close(self._read)
        if self.cut:  # the line where output was cut says how much
            kept_tail = self._file.seek(0, 2) - self._start
            self._file.seek(self.head)
            self._file.write(_cut_line(self.written - self.head - kept_tail))
        self._file.close()
        return self.written

    def _copy(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._read], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(self._read, _CHUNK)
            if not chunk:
                return
            self._keep(chunk)

    def _keep(self, chunk: bytes) -> None:
        self.written += len(chunk)
        room = self.head - self._file.tell() if not self.cut else 0
        if room > 0:
            self._file.write(chunk[:room])
            chunk = chunk[room:]
        if not chunk:
            self._file.flush()
            return
        if not self.cut:
            self.cut = True
            self._file.write(_cut_line(0))
        self._file.write(chunk)
        # kept once `2 * tail` bytes follow the cut, as the last `tail` of them: each byte
        # is copied at most once more, and the file stays under head + 2 × tail
        if self._file.tell() - self._start > 2 * self.tail:
            self._file.flush()
            with self.path.open("rb") as reading:
                reading.seek(self._file.tell() - self.tail)
                last = reading.read(self.tail)
            self._file.seek(self._start)
            self._file.write(last)
            self._file.truncate()
        self._file.flush()

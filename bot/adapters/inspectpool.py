"""A large wheel's members checked by a few processes at once: `core/wheel/report.py`
says what a share is and how one is checked; this runs the shares in forkserver
processes (never a fork of a threaded service), as many as the CPUs this process may use,
at most MAX_WORKERS. Each worker opens the archive itself and streams its share, so
memory stays bounded per worker; the wheel's budget is summed over them after.

Every caller that reads a wheel a user gave (the commands, the loop, the service) reads
it through `inspect_wheel` here.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..core.wheel.archive import ArchiveLimits
from ..core.wheel.report import ShareResult, Spread, WheelReport, check_share
from ..core.wheel.report import inspect_wheel as read_wheel

MAX_WORKERS = 4


def in_processes(path: Path, shares: list[list[str]], inflate: int, entries: int) -> list[ShareResult]:
    """Each share checked by `core.wheel.report.check_share` in a process of its own, in order."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["bot.core.wheel.report"])
    with ProcessPoolExecutor(len(shares), mp_context=context) as pool:
        futures = [pool.submit(check_share, str(path), names, inflate, entries) for names in shares]
        return [future.result() for future in futures]


def workers() -> int:
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))


def inspect_wheel(path: Path, *, limits: ArchiveLimits = ArchiveLimits()) -> WheelReport:
    """`core.wheel.report.inspect_wheel`, a large wheel's members spread over processes."""
    return read_wheel(path, limits=limits, spread=Spread(workers(), in_processes))

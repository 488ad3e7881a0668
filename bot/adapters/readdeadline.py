"""One deadline for reading one image, whatever the registry does: the consuming
image (`adapters/consumerread.py`) and a wheel image (`adapters/imageread.py`) are each
read inside `image_deadline`, and the registry client (`adapters/registry.py`) counts
what it receives against it as it reads.

A read timeout bounds one wait for bytes, not a read: a registry that sends 1 KiB every
5 s never trips it. So, over the whole read of one image:

- after `GRACE_SECONDS` spent waiting for the registry, the bytes received must average at
  least `MIN_RATE` a second of that wait (only the wait: reading a layer of a million small
  files from a few MB is work of wheelpin's, not slowness of the registry's);
- no read lasts longer than `MAX_SECONDS`, however fast the bytes come;
- one wait for bytes is at most `STALL_SECONDS` (the client's read timeout, lowered).
Past any of them the read stops with one sentence (a `TransientError`: the next pass may
find the registry well). The deadline is this thread's (a `ContextVar`): the service's
workers each read their own images.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..core.errors import TransientError

GRACE_SECONDS = 30.0
MIN_RATE = 256 << 10  # bytes a second: a slow office link does 1 MiB/s
MAX_SECONDS = 3600.0  # a 30 GB image at 10 MB/s takes 50 minutes
STALL_SECONDS = 30.0


class Deadline:
    def __init__(self, what: str) -> None:
        self.what = what
        self.started = time.monotonic()
        self.received = 0
        self.waited = 0.0  # seconds spent waiting for the registry's bytes

    def check(self, received: int = 0, waited: float = 0.0) -> None:
        """Count `received` bytes that took `waited` seconds to come; TransientError when
        the read is past its bounds."""
        self.received += received
        self.waited += waited
        if time.monotonic() - self.started > MAX_SECONDS:
            raise TransientError(f"reading {self.what} took more than {MAX_SECONDS:.0f} s; stopped")
        if self.waited > GRACE_SECONDS and self.received < MIN_RATE * self.waited:
            raise TransientError(
                f"the registry sent {self.what} at {self.received / self.waited / 1024:.1f} KiB/s "
                f"over {self.waited:.0f} s, slower than the {MIN_RATE >> 10} KiB/s wheelpin waits "
                "for; stopped"
            )


_current: ContextVar[Deadline | None] = ContextVar("wheelpin_image_deadline", default=None)


@contextmanager
def image_deadline(what: str) -> Iterator[Deadline]:
    """The deadline of reading the image `what`; within another's, that one goes on."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    deadline = Deadline(what)
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def received(size: int, waited: float = 0.0) -> None:
    """Count bytes the registry sent in `waited` seconds (and check the deadline), if an
    image is being read."""
    deadline = _current.get()
    if deadline is not None:
        deadline.check(size, waited)


def read_timeout(default: float) -> float:
    """The read timeout of a request: lowered to `STALL_SECONDS` while an image is read."""
    return default if _current.get() is None else min(default, STALL_SECONDS)

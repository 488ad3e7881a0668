"""A repository's lease, with an epoch, so that a replica paused past its job's takeover
cannot write beside the replica that took the job over (docs/design.md §2, app/).

procrastinate hands a job back once its replica's heartbeat is WHEELPIN_STALLED_AFTER
seconds stale (app/pgqueue.py); a replica that was only paused (SIGSTOP, a frozen VM, a
long GC) then resumes mid-pass, with what it read before the pause. So each job of a
repository takes the repository's lease row (app/shared.py) when it starts: the epoch it
gets is its token. Before each outside write (adapters/writes.py: every GitHub and
registry request that writes goes through that one gate), the job renews the lease with
one conditional UPDATE … WHERE epoch = its epoch. A job taken over finds the epoch raised
and stops there (`Fenced`): it writes nothing more, and its end is not written to the
queue (the row is the new holder's now).

The lease also expires (WHEELPIN_STALLED_AFTER seconds after its last renewal, on the
database's clock), and a job may take a lease only once the last one expired or was
released: the job taken over had renewed just before its last write, so that write had
the whole lease to land before anyone else could write. What no lease can close is a
pause between the renewal and the request leaving the socket; a renewal that took longer
than a fraction of the lease (the process was paused during it) is not trusted, either.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ..adapters import logs, writes
from ..core.errors import TransientError, WheelpinError
from .shared import Shared

log = logs.get_logger("wheelpin.serve")
# A renewal younger than this share of the lease is not asked again (a publish sends many
# writes in a row); a pause shows as a monotonic clock past it, so a resumed job renews.
FRESH_SHARE = 0.1
# A renewal that took longer than this share of the lease is not trusted.
SLOW_SHARE = 0.5


class Fenced(WheelpinError):
    """This job's repository lease was taken by another job: it must write nothing more."""


@dataclass
class Held:
    repository: str
    epoch: int
    renewed: float  # monotonic, when the last renewal was answered
    fenced: bool = False


class Leases:
    def __init__(self, shared: Shared, *, seconds: float, holder: str) -> None:
        self.shared = shared
        self.seconds = float(seconds)
        self.holder = holder
        self._local = threading.local()  # the lease of the job running in this thread

    @property
    def held(self) -> Held | None:
        held: Held | None = getattr(self._local, "held", None)
        return held

    def start(self) -> None:
        writes.add_check(self._before_write)

    def stop(self) -> None:
        writes.remove_check(self._before_write)

    def take(self, repository: str) -> float | None:
        """This thread's job holds `repository`'s lease now (None), or must wait that many
        seconds (another job's lease has not expired: a job handed back while its replica
        still runs it, or one whose end could not be written)."""
        epoch, wait = self.shared.take_lease(repository, self.holder, self.seconds)
        if epoch is None:
            return wait
        self._local.held = Held(repository, epoch, time.monotonic())
        return None

    def release(self) -> bool:
        """The job of this thread ended: its lease freed for the next job (unless it was
        taken). True when the job was fenced."""
        held = self.held
        self._local.held = None
        if held is None:
            return False
        if not held.fenced:
            try:
                self.shared.release_lease(held.repository, held.epoch)
            except TransientError as exc:  # the next job waits for it to expire instead
                log.warning("lease.unreleased", repository=held.repository, error=exc.message)
        return held.fenced

    def check(self) -> None:
        """Before an outside write of this thread's job: the lease renewed, or `Fenced`."""
        held = self.held
        if held is None:
            return  # not a job of a repository on PostgreSQL (a webhook thread, the embedded mode)
        if held.fenced:
            raise Fenced(f"{held.repository}: another replica took this job over; nothing more is written")
        if time.monotonic() - held.renewed < self.seconds * FRESH_SHARE:
            return
        asked = time.monotonic()
        if not self.shared.renew_lease(held.repository, held.epoch, self.seconds):
            held.fenced = True
            log.warning(
                "job.fenced",
                repository=held.repository,
                epoch=held.epoch,
                reason="another replica took this job over while this one was stalled: it writes nothing more",
            )
            raise Fenced(f"{held.repository}: another replica took this job over; nothing more is written")
        answered = time.monotonic()
        if answered - asked > self.seconds * SLOW_SHARE:
            raise TransientError(
                f"{held.repository}: the lease took {answered - asked:.1f} s to renew; not writing on it"
            )
        held.renewed = answered

    def _before_write(self, method: str, url: str) -> None:
        self.check()

"""Backoff policy (docs/design.md §2): when a recorded failure or refusal may be tried
again. The state file (`adapters/statefile.py`) keeps the records; the planner
(`core/decide/plan.py`) reads `retry_at` to decide between trying again and reporting.
Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from ..config.model import Component

BACKOFF_SECONDS = 600  # a failed build: ten minutes, doubled per failure of the same commit
MAX_BACKOFF = 86_400  # up to a day
REFUSAL_BACKOFF = 3600  # a write GitHub refused by a rule or permission: an hour, doubled


def doubling(first: float, attempts: int) -> float:
    """`first`, doubled for each attempt after the first, capped at MAX_BACKOFF."""
    return float(min(first * 2 ** max(attempts - 1, 0), MAX_BACKOFF))


@dataclass(frozen=True)
class Failure:
    """A failed build or verification of one upstream commit of one component."""

    component: str
    commit: str
    kind: str  # "build" | "verify"
    message: str
    attempts: int
    at: float
    judged_under: str = ""  # digest of what it failed under: config, consuming image ("" in older state files)
    reason: str = ""  # a refused wheel's problems alone, as a commit list says them ("": `message` says it all)

    @property
    def refused(self) -> bool:
        """The wheel was built and refused by the checks (not a failed build)."""
        return self.kind == "verify"

    @property
    def retry_at(self) -> float:
        if self.kind == "verify":
            return float("inf")  # the same commit gives the same wheel: wait for a new one
        return self.at + doubling(BACKOFF_SECONDS, self.attempts)


@dataclass(frozen=True)
class Refusal:
    """A proposal write GitHub refused (a rule, a missing permission), by what was written."""

    fingerprint: str
    message: str
    attempts: int
    at: float

    @property
    def retry_at(self) -> float:
        return self.at + doubling(REFUSAL_BACKOFF, self.attempts)


def config_digest(component: Component) -> str:
    """A digest of everything a component's config says: a failure under another config is
    judged again."""
    return hashlib.sha256(component.model_dump_json().encode()).hexdigest()[:16]


def retry_said(retry_at: float, now: float) -> str:
    """When a failure recorded against a commit is tried again, and how to try it now."""
    now_too = "`wheelpin reconcile --retry-failed` tries it now"
    if math.isinf(retry_at):
        return (
            "not tried again for this commit (the same commit gives the same wheel): a new upstream commit "
            f"or a changed config is; {now_too}"
        )
    minutes = max(math.ceil((retry_at - now) / 60), 1)
    wait = f"{minutes} min" if minutes < 120 else f"{minutes / 60:.0f} h"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(retry_at))
    return f"tried again by the first pass after {when} (in {wait}); {now_too}"

"""The one gate every outside write passes just before it is sent: a GitHub
request that writes (adapters/github/transport.py: a dispatch, a branch write, a pull
request, a comment, a close, a dashboard) and a registry request that writes
(adapters/registry.py: a publish's blobs and manifest, a prune's delete). Nothing is
checked unless a check is added: the service on PostgreSQL adds its lease's (app/lease.py),
which raises in a job that another replica took over, so that job writes nothing more."""

from __future__ import annotations

from collections.abc import Callable

WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_CHECKS: list[Callable[[str, str], None]] = []


def add_check(check: Callable[[str, str], None]) -> None:
    """`check(method, url)` is called before each write from now on; it raises to stop it."""
    if check not in _CHECKS:
        _CHECKS.append(check)


def remove_check(check: Callable[[str, str], None]) -> None:
    if check in _CHECKS:
        _CHECKS.remove(check)


def before(method: str, url: str) -> None:
    """Called by an adapter before it sends `method url`; a read passes unchecked."""
    if method in WRITES:
        for check in list(_CHECKS):
            check(method, url)

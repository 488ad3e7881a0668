"""`wheelpin serve`: the service — webhooks, the schedule, health and metrics — until
SIGTERM or SIGINT; then it stops listening and lets the running job finish (within
WHEELPIN_SHUTDOWN_GRACE seconds)."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from ..app.forges import forge_of
from ..app.service import Service
from ..app.settings import Settings
from ..app.webapp import HTTPServer
from ..core.errors import UsageError


def serve_command(*, host: str, port: int, settings: Settings) -> int:
    if settings.shard is not None and settings.database_url is not None:  # a bad shard list is said now
        raise UsageError(
            "WHEELPIN_INSTALLATION_IDS shards by hand, and WHEELPIN_DATABASE_URL makes the replicas "
            "share every installation: unset one of them"
        )
    settings.check_write_pacing()  # a gap between writes that would refuse them all: said now
    forge = forge_of(settings)
    if forge.missing_credentials() is None:
        forge.check_settings()  # a repository named that the forge does not have: said now
    service = Service(settings, forge=forge)
    try:
        server = HTTPServer(service, host=host, port=port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    health = None
    if settings.health_port is not None:  # probes on a listener of their own
        try:
            health = HTTPServer(service, host=host, port=settings.health_port, health_only=True)
        except OSError as exc:
            server.server.close()  # never started: only its listening socket to let go
            raise UsageError(
                f"cannot listen on {host}:{settings.health_port} (WHEELPIN_HEALTH_PORT: {exc.strerror or exc})"
            ) from None
    stop = threading.Event()

    def on_signal(number: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    service.start()
    server.start()
    if health is not None:
        health.start()
    sys.stderr.write(
        f"wheelpin: listening on {server.url}" + (f" (health on {health.url})" if health is not None else "") + "\n"
    )
    sys.stderr.flush()
    while not stop.wait(1.0):
        pass
    server.stop()
    if health is not None:
        health.stop()
    finished = service.stop()
    sys.stderr.write(
        "wheelpin: stopped\n"
        if finished
        else "wheelpin: stopped; the running job was abandoned (the next start repairs it)\n"
    )
    return 0

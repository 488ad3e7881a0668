"""The service's HTTP side, a plain WSGI application served by waitress:

- `POST /webhook`: a forge's deliveries. The body is read (at most the door's cap, 25 MiB
  for GitHub: larger → 413), then handed with the headers to the forge's door
  (adapters/github/door.py), which checks its signature before anything is parsed (missing
  or wrong → 401, nothing done), reads it (malformed → 400) and names the jobs it asks
  for: queued (202), or none (200). Nothing is reconciled inside the request.
- `GET /healthz`: the process is alive: its workers are there and tick (a wedged one fails it,
  so the container is restarted); answers before any credentials are set.
- `GET /readyz`: the forge (GitHub) answered the bot's credentials and the queue moves (else 503).
- `GET /metrics`: Prometheus text format.

The door stays open to idle and slow clients: waitress handles every
connection in one asyncore loop and gives a request to a thread only once it has fully
arrived, so a connection costs a slot and its buffers, never a thread. The slots are
many (WHEELPIN_HTTP_CONNECTIONS, fitted to the open-files limit), an idle connection is
closed after WHEELPIN_HTTP_IDLE_TIMEOUT seconds, and a request that is still arriving
after REQUEST_DEADLINE seconds (a slowloris, a header byte a second) is cut. One client
address holds at most WHEELPIN_HTTP_CONNECTIONS_PER_ADDRESS of the slots, and with
WHEELPIN_HEALTH_PORT the probes have a listener of their own (/healthz, /readyz, /metrics
only), so a full door never fails a liveness probe.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..adapters import logs
from ..core.errors import TransientError
from .jobs import Refused
from .service import Service

log = logs.get_logger("wheelpin.http")
StartResponse = Callable[..., Any]
Environ = dict[str, Any]

# The door's numbers (the connection limit and idle timeout are settings: bot/app/settings.py).
READ_CHUNK = 1 << 20  # the app reads a body a MiB at a time, never past the cap
# Seconds a request may take to arrive in full. GitHub gives up on an answer after 10 s
# (30 s on GHES), so a delivery still arriving after a minute is no delivery anyone waits
# for; it is what keeps a slowloris (never idle, never done) from holding a slot for
# days. Checked every CLEANUP_INTERVAL, so a request is cut within 60 to 80 s.
REQUEST_DEADLINE = 60
CLEANUP_INTERVAL = 10  # seconds between waitress's sweeps for idle and overdue connections
BACKLOG = 1024  # connections the kernel queues while waitress is busy (capped by net.core.somaxconn)
HEADER_LIMIT = 64 * 1024  # a request's headers (GitHub's are ~1 KiB); waitress allows 256 KiB in memory
INBUF_OVERFLOW = 64 * 1024  # body bytes a connection keeps in memory before spilling to a temporary file
# Open files one connection may need (its socket, a temporary file for a large body) and
# those kept for everything else (the worker's git, SQLite, HTTP pools, the scheduler).
FILES_PER_CONNECTION = 2
HEALTH_CONNECTIONS = 32  # the health port's slots: probes and a scraper, a few at a time
HEALTH_THREADS = 2
RESERVED_FILES = 256

STATUS = {
    200: "200 OK",
    202: "202 Accepted",
    400: "400 Bad Request",
    401: "401 Unauthorized",
    404: "404 Not Found",
    405: "405 Method Not Allowed",
    413: "413 Content Too Large",
    503: "503 Service Unavailable",
}


def _answer(start: StartResponse, status: int, body: Any, content_type: str = "application/json") -> list[bytes]:
    data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
    start(
        STATUS[status],
        [("Content-Type", content_type), ("Content-Length", str(len(data))), ("Cache-Control", "no-store")],
    )
    return [data]


def wire_limit(cap: int) -> int:
    """waitress's max_request_body_size for a door that takes `cap` bytes. A chunked body
    reaches waitress with its framing (a size line and a CRLF per chunk), which waitress
    counts against it; the payload itself is held to `cap` by the app. An eighth more lets
    a full body through in chunks of 64 bytes or more (framing: 6 bytes a chunk) and still
    refuses anything much larger before the app ever sees it."""
    return cap + cap // 8


def _headers(environ: Environ) -> dict[str, str]:
    """The request's headers as a door reads them: lower-case names (`x-github-event`)."""
    found = {key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            found[key.replace("_", "-").lower()] = str(environ[key])
    return found


def _read_body(environ: Environ, cap: int) -> bytes | None:
    """The request body, or None when it is over `cap`: read READ_CHUNK at a time, never
    past its length nor past the first byte over the cap. waitress gives the length of a
    chunked body once it has it all; without a length (another server) the body is read
    until it ends or passes the cap."""
    length_text = environ.get("CONTENT_LENGTH") or ""
    stream = environ["wsgi.input"]
    if re.fullmatch(r"[0-9]{1,20}", length_text):  # ASCII digits: isdigit() takes '²', int() does not
        if int(length_text) > cap:
            return None
        wanted = int(length_text)
    else:
        wanted = cap + 1
    parts: list[bytes] = []
    size = 0
    while size < wanted:
        part = stream.read(min(READ_CHUNK, wanted - size))
        if not part:
            break
        parts.append(bytes(part))
        size += len(part)
    return None if size > cap else b"".join(parts)


def _health(service: Service, path: str, start: StartResponse) -> list[bytes] | None:
    """The answer to a probe or a scrape, None for any other path."""
    if path == "/healthz":
        alive, reason = service.alive()
        return (
            _answer(start, 200, {"status": "alive"})
            if alive
            else _answer(start, 503, {"status": "wedged", "reason": reason})
        )
    if path == "/readyz":
        ready, reason = service.ready()
        return _answer(start, 200 if ready else 503, {"status": "ready" if ready else "not ready", "reason": reason})
    if path == "/metrics":
        return _answer(start, 200, service.metrics.render(), service.metrics.content_type)
    return None


def make_health_app(service: Service) -> Callable[[Environ, StartResponse], Iterable[bytes]]:
    """The health port's app (WHEELPIN_HEALTH_PORT): /healthz, /readyz and /metrics only."""

    def app(environ: Environ, start: StartResponse) -> list[bytes]:
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _answer(start, 405, {"message": "GET only"})
        return _health(service, environ.get("PATH_INFO", ""), start) or _answer(start, 404, {"message": "not found"})

    return app


def make_app(service: Service) -> Callable[[Environ, StartResponse], Iterable[bytes]]:
    def webhook(environ: Environ, start: StartResponse) -> list[bytes]:
        door = service.door
        headers = _headers(environ)
        context = door.context(headers) if door is not None else {}
        event = door.event_of(headers) if door is not None else ""
        with logs.bound(**context):
            if door is None:
                service.metrics.deliveries.labels(event=event or "unknown", outcome="no-secret").inc()
                log.error("webhook.no_secret")
                return _answer(start, 503, {"message": "no webhook secret is configured"})
            body = _read_body(environ, door.max_body)
            if body is None:
                service.metrics.deliveries.labels(event=event or "unknown", outcome="too-large").inc()
                log.warning("webhook.too_large", length=environ.get("CONTENT_LENGTH"))
                return _answer(start, 413, {"message": f"a delivery is at most {door.max_body} bytes"})
            try:
                delivery = door.read(headers, body, service.watchlist.routing)
            except Refused as refused:
                if refused.outcome is not None:
                    service.metrics.deliveries.labels(event=refused.event, outcome=refused.outcome).inc()
                return _answer(start, refused.status, {"message": refused.message})
            except TransientError as exc:  # routing reads the shared state, which may be down: as below
                service.metrics.deliveries.labels(event=event or "unknown", outcome="unqueued").inc()
                log.warning("webhook.unqueued", error=exc.message)
                return _answer(start, 503, {"message": exc.message})
            if delivery.reply is not None:
                service.metrics.deliveries.labels(event=delivery.event, outcome=delivery.outcome or "answered").inc()
                return _answer(start, 200, delivery.reply)
            try:
                jobs = service.take(delivery)
            # the shared queue (PostgreSQL) did not take it: a forge does not send it again by
            # itself, so the next poll or refresh picks up what it asked for (or someone
            # redelivers it by hand); a 503 says so in the hook's Recent Deliveries
            except TransientError as exc:
                service.metrics.deliveries.labels(event=delivery.event, outcome="unqueued").inc()
                log.warning("webhook.unqueued", error=exc.message)
                return _answer(start, 503, {"message": exc.message})
            if not jobs:
                return _answer(start, 200, {"message": "ignored"})
            return _answer(start, 202, {"message": "queued", "jobs": [job.kind for job in jobs]})

    def app(environ: Environ, start: StartResponse) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        if path == "/webhook":
            if method != "POST":
                return _answer(start, 405, {"message": "POST deliveries here"})
            return webhook(environ, start)
        if method not in ("GET", "HEAD"):
            return _answer(start, 405, {"message": "GET only"})
        return _health(service, path, start) or _answer(start, 404, {"message": "not found"})

    return app


def fit_connections(wanted: int) -> int:
    """How many connections fit in the process's open-files limit: the soft limit is
    raised toward the hard one as far as `wanted` connections need (Python does not raise
    it itself), and a limit that is still too low lowers the connections (and says so).
    Running out of files would be worse than a full door: waitress would spin on a
    listening socket it cannot accept from, and the worker could open nothing."""
    import resource

    need = wanted * FILES_PER_CONNECTION + RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return wanted
    fits = max(10, (soft - RESERVED_FILES) // FILES_PER_CONNECTION)
    log.warning(
        "http.connections_lowered",
        wanted=wanted,
        connections=fits,
        open_files=soft,
        hint="raise the open-files limit (ulimit -n) or lower WHEELPIN_HTTP_CONNECTIONS",
    )
    return fits


def _listeners(server: Any) -> list[Any]:
    """waitress's listening sockets: one, or several (a host name with more than one address)."""
    from waitress.server import BaseWSGIServer

    return (
        [server]
        if isinstance(server, BaseWSGIServer)
        else [each for each in server.map.values() if isinstance(each, BaseWSGIServer)]
    )


def _cap_per_address(server: Any, cap: int) -> None:
    """Close, as soon as it is accepted, a connection from an address that already holds
    `cap` (waitress's accept makes a channel through `channel_class`): one client, however
    many times it reconnects, cannot take every slot."""
    for listener in _listeners(server):

        def channel(
            owner: Any, conn: Any, addr: Any, adj: Any, map: Any = None, make: Any = listener.channel_class
        ) -> Any:
            host = addr[0] if isinstance(addr, tuple) else addr
            held = sum(
                1
                for each in list(owner.active_channels.values())
                if (each.addr[0] if isinstance(each.addr, tuple) else each.addr) == host
            )
            if held >= cap:
                log.info("http.address_over_cap", address=host, connections=held)
                conn.close()
                return None
            return make(owner, conn, addr, adj, map=map)

        listener.channel_class = channel


def _cut_overdue_requests(server: Any, deadline: float) -> None:
    """Make waitress's sweep (which closes connections idle past channel_timeout) also
    close a connection whose request has been arriving for more than `deadline` seconds.
    A request is first seen at a sweep, so it is cut within deadline + 2 sweeps of its start."""
    import weakref

    first_seen: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
    for listener in _listeners(server):

        def maintenance(now: float, listener: Any = listener, sweep: Any = listener.maintenance) -> None:
            sweep(now)
            for channel in list(listener.active_channels.values()):
                arriving = channel.request  # the request being parsed; None between requests
                if arriving is None or channel.requests:  # nothing arriving, or a request being served
                    continue
                if now - first_seen.setdefault(arriving, now) > deadline:
                    log.info("http.request_overdue", seconds=round(now - first_seen[arriving]))
                    channel.will_close = True

        listener.maintenance = maintenance


class HTTPServer:
    """waitress serving the app on a host and port (0: any free port), in its own thread,
    sized so that idle and slow clients cannot close the door (see the module's text)."""

    def __init__(
        self,
        service: Service,
        *,
        host: str = "127.0.0.1",
        port: int = 8080,
        threads: int = 8,
        health_only: bool = False,
    ) -> None:
        import logging
        import threading

        from waitress.server import create_server

        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is N" on every burst

        settings = service.settings
        body_cap = service.door.max_body if service.door is not None else READ_CHUNK  # no door: nothing is read
        # the health port: a few slots and threads of its own, so a probe never waits
        # behind webhook clients, whatever they hold of the main door
        self.connections = HEALTH_CONNECTIONS if health_only else fit_connections(settings.http_connections)
        self.server = create_server(
            (make_health_app if health_only else make_app)(service),
            host=host,
            port=port,
            threads=HEALTH_THREADS if health_only else threads,
            ident="wheelpin",
            clear_untrusted_proxy_headers=True,
            max_request_body_size=wire_limit(body_cap),
            max_request_header_size=HEADER_LIMIT,
            inbuf_overflow=INBUF_OVERFLOW,
            connection_limit=self.connections + 2,  # waitress counts its listening socket and its trigger too
            channel_timeout=settings.http_idle_timeout,
            cleanup_interval=CLEANUP_INTERVAL,
            backlog=BACKLOG,
            asyncore_use_poll=True,
        )  # select() cannot watch a file descriptor past 1023
        _cut_overdue_requests(self.server, REQUEST_DEADLINE)
        _cap_per_address(self.server, settings.http_connections_per_address)
        self.host = host
        self.port = int(self.server.effective_port)  # type: ignore[union-attr]
        self.thread = threading.Thread(target=self.server.run, name="wheelpin-http", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Stop listening, close open connections, let running requests end."""
        from waitress import wasyncore

        self.server.close()
        wasyncore.close_all(self.server._map)  # type: ignore[union-attr]
        self.server.task_dispatcher.shutdown()
        self.thread.join(5)

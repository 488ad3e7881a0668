"""The service's HTTP side, a plain WSGI application served by waitress:

- `POST /webhook`: GitHub deliveries. The body is read (at most 25 MiB, GitHub's own cap:
  larger → 413), its `X-Hub-Signature-256` checked in constant time before anything is
  parsed (missing or wrong → 401, nothing done), then parsed (malformed → 400) and turned
  into queued jobs (202), or ignored (200). Nothing is reconciled inside the request.
- `GET /healthz`: the process is alive (answers before any credentials are set).
- `GET /readyz`: GitHub answered the bot's credentials and the queue moves (else 503).
- `GET /metrics`: Prometheus text format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from ..core.webhooks import MAX_BODY, signature_ok
from .service import Service

log = structlog.get_logger("wheelpin.http")
StartResponse = Callable[..., Any]
Environ = dict[str, Any]

STATUS = {200: "200 OK", 202: "202 Accepted", 400: "400 Bad Request", 401: "401 Unauthorized",
          404: "404 Not Found", 405: "405 Method Not Allowed", 413: "413 Content Too Large",
          503: "503 Service Unavailable"}


def _answer(start: StartResponse, status: int, body: Any, content_type: str = "application/json") -> list[bytes]:
    data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
    start(STATUS[status], [("Content-Type", content_type), ("Content-Length", str(len(data))),
                           ("Cache-Control", "no-store")])
    return [data]


def _read_body(environ: Environ) -> bytes | None:
    """The request body, or None when it is over the cap (read no further than that)."""
    length_text = environ.get("CONTENT_LENGTH") or ""
    stream = environ["wsgi.input"]
    if length_text.isdigit():
        length = int(length_text)
        if length > MAX_BODY:
            return None
        return bytes(stream.read(length))
    data = stream.read(MAX_BODY + 1)  # chunked: no length given
    return None if len(data) > MAX_BODY else bytes(data)


def make_app(service: Service) -> Callable[[Environ, StartResponse], Iterable[bytes]]:
    def webhook(environ: Environ, start: StartResponse) -> list[bytes]:
        delivery = str(environ.get("HTTP_X_GITHUB_DELIVERY") or "")
        event = str(environ.get("HTTP_X_GITHUB_EVENT") or "")
        with structlog.contextvars.bound_contextvars(delivery=delivery or None, github_event=event or None):
            if service.secret is None:
                service.metrics.deliveries.labels(event=event or "unknown", outcome="no-secret").inc()
                log.error("webhook.no_secret")
                return _answer(start, 503, {"message": "no webhook secret is configured"})
            body = _read_body(environ)
            if body is None:
                service.metrics.deliveries.labels(event=event or "unknown", outcome="too-large").inc()
                log.warning("webhook.too_large", length=environ.get("CONTENT_LENGTH"))
                return _answer(start, 413, {"message": f"a delivery is at most {MAX_BODY} bytes"})
            if not signature_ok(service.secret, body, environ.get("HTTP_X_HUB_SIGNATURE_256")):
                service.metrics.deliveries.labels(event="unverified", outcome="bad-signature").inc()
                log.warning("webhook.bad_signature")
                return _answer(start, 401, {"message": "X-Hub-Signature-256 is missing or wrong"})
            if not event:
                return _answer(start, 400, {"message": "no X-GitHub-Event header"})
            try:
                payload = json.loads(body)
            except (ValueError, RecursionError):  # not JSON, not UTF-8, an integer past 4,300 digits, nested too deep
                payload = None
            if not isinstance(payload, dict):
                service.metrics.deliveries.labels(event=event, outcome="malformed").inc()
                return _answer(start, 400, {"message": "the body is not a JSON object"})
            if event == "ping":
                service.metrics.deliveries.labels(event=event, outcome="pong").inc()
                return _answer(start, 200, {"message": "pong", "zen": payload.get("zen")})
            try:
                jobs = service.deliver(event, delivery, payload)
            except (AttributeError, TypeError, ValueError, KeyError):  # signed, but not shaped as GitHub sends it
                service.metrics.deliveries.labels(event=event, outcome="malformed").inc()
                log.warning("webhook.unexpected_shape", exc_info=True)
                return _answer(start, 400, {"message": f"the {event} payload is not shaped as GitHub sends it"})
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
        if path == "/healthz":
            return _answer(start, 200, {"status": "alive"})
        if path == "/readyz":
            ready, reason = service.ready()
            return _answer(start, 200 if ready else 503, {"status": "ready" if ready else "not ready",
                                                          "reason": reason})
        if path == "/metrics":
            return _answer(start, 200, service.metrics.render(), service.metrics.content_type)
        return _answer(start, 404, {"message": "not found"})

    return app


class HTTPServer:
    """waitress serving the app on a host and port (0: any free port), in its own thread."""

    def __init__(self, service: Service, *, host: str = "127.0.0.1", port: int = 8080, threads: int = 8) -> None:
        import logging
        import threading

        from waitress.server import create_server

        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "Task queue depth is N" on every burst

        self.server = create_server(make_app(service), host=host, port=port, threads=threads,
                                    max_request_body_size=MAX_BODY + 1, ident="wheelpin", clear_untrusted_proxy_headers=True)
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

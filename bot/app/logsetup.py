"""structlog set up for every wheelpin process: always on stderr, JSON when stderr is
not a terminal, secrets redacted, so that `--json` output on stdout stays clean.

The libraries' own standard-library log records (waitress, urllib3, APScheduler,
procrastinate, psycopg's pool) go through structlog's `ProcessorFormatter`, rendered as
wheelpin's lines are: a JSON log stream holds no plain-text line. procrastinate's
per-job records (info) show only at debug."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SECRET_KEYS = re.compile(r"(token|password|secret|authorization|private_key|credential)", re.I)
REDACTED = "[redacted]"


def redact_secrets(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace the value of any field whose name says it holds a secret."""
    for key in list(event):
        if _SECRET_KEYS.search(key) and event[key] is not None:
            event[key] = REDACTED
    return event


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record comes (as structlog's PrintLogger
    is made at each configure), not to the one there when configured."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure_logging(*, level: str = "warning", fmt: str = "auto") -> None:
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    renderer: Any = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    shared: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    # wheelpin's events and the libraries' records both leave through the one handler below,
    # under its lock: two threads' lines never run into one (they did with two writers)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    handler = _Stderr()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_wheelpin", False)]:
        root.removeHandler(old)
    handler._wheelpin = True  # type: ignore[attr-defined]  # ours, replaced when configured again
    root.addHandler(handler)
    root.setLevel(logging.getLevelNamesMapping()[level.upper()])
    # a line per job and per worker tick: only when debugging
    logging.getLogger("procrastinate").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
    # cyclonedx's serializer logs each of its hundreds of fields as it registers them, once
    # a process: never a line a person debugging wheelpin wants
    logging.getLogger("py_serializable").setLevel(logging.WARNING)

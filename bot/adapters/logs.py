"""wheelpin's log lines: the one door every module logs through, and the stream they leave by.

structlog renders the lines (always on stderr, JSON when stderr is not a terminal, secrets
redacted, so that `--json` output on stdout stays clean), but it is loaded only when a line
is to be written: importing it costs a command more than the rest of its start-up (it
brings asyncio, and rich where rich is installed), and a quiet pass at the default level
(`warning`) writes none. So a module asks `get_logger(name)` for a `Logger` that checks the
level first, and binds its context with `bound(...)`, kept here in a ContextVar rather than
in structlog's.

The libraries' own standard-library log records (waitress, urllib3, APScheduler,
procrastinate, psycopg's pool) go through structlog's `ProcessorFormatter`, rendered as
wheelpin's lines are: a JSON log stream holds no plain-text line. procrastinate's per-job
records (info) show only at debug."""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType, ModuleType
from typing import Any

_SECRET_KEYS = re.compile(r"(token|password|secret|authorization|private_key|credential)", re.I)
REDACTED = "[redacted]"

# until configured, every line goes on to structlog, whose own default is to write them all
_threshold = logging.DEBUG
_context: ContextVar[Mapping[str, Any]] = ContextVar("wheelpin_log_context", default=MappingProxyType({}))
_pending: Callable[[ModuleType], None] | None = None  # configure_logging's structlog half, run on its load


# no line goes out through structlog half configured; reentrant, for a record written while configuring
_configuring = threading.RLock()


def _structlog() -> ModuleType:
    global _pending
    import structlog

    if _pending is not None:  # checked again under the lock: the first thread configures, the others wait
        with _configuring:
            if _pending is not None:
                _pending(structlog)
                _pending = None
    return structlog


class Logger:
    """A named logger whose lines below the configured level cost one comparison."""

    __slots__ = ("name", "_bound")

    def __init__(self, name: str, bound: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self._bound: Mapping[str, Any] = bound or {}

    def bind(self, **fields: Any) -> Logger:
        return Logger(self.name, {**self._bound, **fields})

    def _write(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        if level < _threshold:
            return
        logger = _structlog().get_logger(self.name)
        getattr(logger, method)(event, **{**_context.get(), **self._bound, **fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._write(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._write(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._write(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._write(logging.ERROR, "error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._write(logging.ERROR, "exception", event, fields)


def get_logger(name: str) -> Logger:
    return Logger(name)


@contextmanager
def bound(**fields: Any) -> Iterator[None]:
    """These fields on every line this thread writes inside the block (and what `bind`
    adds inside it), then the fields of before."""
    token = _context.set(MappingProxyType({**_context.get(), **fields}))
    try:
        yield
    finally:
        _context.reset(token)


def bind(**fields: Any) -> None:
    """These fields on this thread's lines until the enclosing `bound` block ends."""
    _context.set(MappingProxyType({**_context.get(), **fields}))


def redact_secrets(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace the value of any field whose name says it holds a secret."""
    for key in list(event):
        if _SECRET_KEYS.search(key) and event[key] is not None:
            event[key] = REDACTED
    return event


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record comes (as structlog's PrintLogger
    is made at each configure), not to the one there when configured; its formatter,
    structlog's, is made when the first record comes."""

    def __init__(self, use_json: bool) -> None:
        super().__init__()
        self._use_json = use_json
        self._rendering: logging.Formatter | None = None

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        if self._rendering is None:
            self._rendering = _rendering(_structlog(), self._use_json)
        return self._rendering.format(record)


def _shared(structlog: Any) -> list[Any]:
    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]


def _rendering(structlog: Any, use_json: bool) -> logging.Formatter:
    renderer = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    formatter: logging.Formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *_shared(structlog)],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    return formatter


def configure_logging(*, level: str = "warning", fmt: str = "auto") -> None:
    global _threshold, _pending
    number = logging.getLevelNamesMapping()[level.upper()]
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())

    def configure_structlog(structlog: Any) -> None:
        # wheelpin's events and the libraries' records both leave through the one handler
        # below, under its lock: two threads' lines never run into one (they did with two writers)
        structlog.configure(
            processors=[
                structlog.contextvars.merge_contextvars,
                *_shared(structlog),
                structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
            ],
            wrapper_class=structlog.make_filtering_bound_logger(number),
            logger_factory=structlog.stdlib.LoggerFactory(),
            cache_logger_on_first_use=False,
        )

    with _configuring:
        _threshold = number
        if "structlog" in sys.modules:  # loaded already (by a library, a test): configured now, nothing left pending
            configure_structlog(sys.modules["structlog"])
            _pending = None
        else:
            _pending = configure_structlog
    handler = _Stderr(use_json)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_wheelpin", False)]:
        root.removeHandler(old)
    handler._wheelpin = True  # type: ignore[attr-defined]  # ours, replaced when configured again
    root.addHandler(handler)
    root.setLevel(number)
    # a line per job and per worker tick: only when debugging
    logging.getLogger("procrastinate").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)
    # cyclonedx's serializer logs each of its hundreds of fields as it registers them, once
    # a process: never a line a person debugging wheelpin wants
    logging.getLogger("py_serializable").setLevel(logging.WARNING)

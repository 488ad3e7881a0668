"""What a failed local build's log says its cause is, in one line for the build's failure
sentence (adapters/localbuild.py): the last line of the build's own output that states an
error — a Python exception (`RuntimeError: …`), a compiler's or setuptools' `error: …`,
CMake's `CMake Error at …:` with the line that follows it. pip ends every failed build with
lines of its own that only point back up at that output ("╰─> See above for output.",
"note: This error originates from a subprocess, …", "ERROR: Failed building wheel for …"):
they are read past, never quoted. A log stating no error is said by its last lines, as
before. Only the log's last CAUSE_TAIL bytes are read, and what is said is printable text
of at most CAUSE_LIMIT characters: a build's output is upstream's code."""

from __future__ import annotations

import re
from pathlib import Path

from .progress import printable

CAUSE_TAIL = 16 * 1024  # bytes read from the log's end: pip's closing lines and the error above them
CAUSE_LIMIT = 300  # characters of the cause said
LAST_LINES = 3  # said when no line states an error

# pip's own lines around a failed build (pip/_internal/exceptions.py DiagnosticPipError,
# pip/_internal/utils/subprocess.py, pip/_internal/wheel_builder.py), as pip 23 to 26
# write them, and the line wheelpin's bounded log writes where it cut the output
_PIP = re.compile(
    r"""^(?:
        error:\ [a-z]+(?:-[a-z]+)+$                    # error: subprocess-exited-with-error
      | [×│╰]                                          # × … did not run successfully. │ exit code: 1 ╰─> …
      | \[end\ of\ output\]$
      | note:\ This\ (?:error\ originates\ from\ a\ subprocess|is\ an\ issue\ with\ the\ package)
      | hint:\ See\ above\ for
      | full\ command:\ | cwd:[ ]
      | .*:\ finished\ with\ status\ 'error'$
      | ERROR:\ (?:Failed\ building\ wheel\ for|Failed\ to\ build|Could\ not\ build\ wheels\ for)[ ]
      | Failed\ to\ build[ ]
      | Running\ setup\.py\ clean\ for[ ]
      | \[notice\][ ]
      | \[wheelpin:[ ]
    )""",
    re.VERBOSE,
)
# a line stating an error: `RuntimeError: …`, `subprocess.CalledProcessError: …`,
# `csrc/x.hip:3:5: error: …`, `fatal error: …`, `error: command 'hipcc' failed …`, `CMake Error at …`
_ERROR = re.compile(
    r"""^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit)(?::\ |$)
      | (?:^|[\s:])(?:fatal\ )?(?:error|Error|ERROR):(?:\ |$)
      | ^CMake\ Error\b""",
    re.VERBOSE,
)


def failure_cause(log: Path) -> str:
    """The cause of a failed build, as its log states it ("" when the log says nothing)."""
    try:
        with log.open("rb") as stream:
            start = stream.seek(max(stream.seek(0, 2) - CAUSE_TAIL, 0))
            tail = stream.read(CAUSE_TAIL)
    except OSError:
        return ""
    lines = [printable(line) for line in tail.decode("utf-8", errors="replace").replace("\r", "\n").split("\n")]
    if start > 0:
        lines = lines[1:]  # begun mid-line: its start, which may say what it is, was not read
    own = [line for line in lines if line and not _PIP.match(line)]
    stated = [index for index, line in enumerate(own) if _ERROR.search(line)]
    if not stated:
        return " / ".join(own[-LAST_LINES:])[-CAUSE_LIMIT:]
    last = stated[-1]
    cause = own[last]
    if cause.endswith(":") and last + 1 < len(own):  # `CMake Error at CMakeLists.txt:5 (message):` says it next
        cause += " " + own[last + 1]
    return cause[:CAUSE_LIMIT]

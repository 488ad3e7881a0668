"""What a failed local build's log says its cause is, in one line for the build's failure
sentence (adapters/localbuild.py). The cause is the first root error in the log: a
compiler's diagnostic as clang, gcc and hipcc print it (`csrc/x.hip:3:5: error: …`,
`x.c:1:10: fatal error: …`, the driver's `clang: error: …`) or CMake's `CMake Error at
…:` with its indented message. The first, because a compiler's first error is the root
and later ones are often its consequences, and because what the build tool then says
(setuptools' `error: command 'hipcc' failed with exit code 1`, torch's `RuntimeError:
Error compiling objects for extension`, setup.py's `subprocess.CalledProcessError:
Command ['cmake', …]`) only wraps it: that wrapper is added after the root, as ", then
…", when both fit. A log with no root error is said by its last line that states one (a
Python exception, an `error: …` line), and a log stating no error by its last lines.
pip ends every failed build with lines of its own that only point back up at that output
("╰─> See above for output.", "note: This error originates from a subprocess, …",
"ERROR: Failed building wheel for …"): they are read past, never quoted. Only the log's
last CAUSE_TAIL bytes are read, and what is said is printable text of at most
CAUSE_LIMIT characters: a build's output is upstream's code."""

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
# a root error: a compiler's diagnostic at a place (`FILE:LINE[:COL]: error: …`, as clang,
# gcc and hipcc print it, gcc's `fatal error:` too), its driver's or linker's own (`clang:
# error: …`, `ld.lld: error: …`, `cc1plus: fatal error: …`), or CMake's `CMake Error at
# FILE:LINE (COMMAND):` (`CMake Error:` and `CMake Error in …:` too) whose message follows
_ROOT = re.compile(
    r"""^(?:
        .+?:\d+(?::\d+)?:\ (?:fatal\ )?error:[ ]
      | (?:/\S*|[a-z0-9][a-z0-9._+-]*):\ (?:fatal\ )?error:[ ]  # a program's name, never an exception's
      | CMake\ Error\b
    )""",
    re.VERBOSE,
)
# a line stating an error, whose last one is the cause where no root error is read and the
# wrapper said after one: `RuntimeError: …`, `subprocess.CalledProcessError: …`, `error:
# command 'hipcc' failed …`
_ERROR = re.compile(
    r"""^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit)(?::\ |$)
      | (?:^|[\s:])(?:fatal\ )?(?:error|Error|ERROR):(?:\ |$)""",
    re.VERBOSE,
)


def _tail_lines(log: Path) -> list[tuple[str, int]] | None:
    """The log's last lines as (printable text, indentation), pip's own lines left out and
    blank ones kept (they are inside a CMake message); None when it cannot be read."""
    try:
        with log.open("rb") as stream:
            start = stream.seek(max(stream.seek(0, 2) - CAUSE_TAIL, 0))
            tail = stream.read(CAUSE_TAIL)
    except OSError:
        return None
    raw = tail.decode("utf-8", errors="replace").replace("\r", "\n").split("\n")
    if start > 0:
        raw = raw[1:]  # begun mid-line: its start, which may say what it is, was not read
    lines = [(printable(line), len(line) - len(line.lstrip())) for line in raw]
    return [(text, indent) for text, indent in lines if not _PIP.match(text)]


def _root_error(lines: list[tuple[str, int]], first: int) -> tuple[str, int]:
    """The root error that starts at lines[first], and the index of the line after it: a
    compiler's is its line (the source line and caret under it only repeat it), CMake's
    goes on while the lines are blank or indented further (cmake(1) indents a message)."""
    text, indent = lines[first]
    end = first + 1
    if text.startswith("CMake Error"):
        while end < len(lines) and (not lines[end][0] or lines[end][1] > indent):
            end += 1
        text = " ".join(line for line, _ in lines[first:end] if line)
    return text, end


def failure_cause(log: Path) -> str:
    """The cause of a failed build, as its log states it ("" when the log says nothing)."""
    lines = _tail_lines(log)
    if lines is None:
        return ""
    said = [index for index, (text, _) in enumerate(lines) if text]
    roots = {index for index in said if _ROOT.match(lines[index][0])}
    if roots:
        cause, end = _root_error(lines, min(roots))
        wrapper = next(
            (lines[i][0] for i in reversed(said) if i >= end and i not in roots and _ERROR.search(lines[i][0])), ""
        )
        if wrapper and len(cause) + len(", then ") + len(wrapper) <= CAUSE_LIMIT:
            return f"{cause}, then {wrapper}"
        return cause[:CAUSE_LIMIT]
    stated = [index for index in said if _ERROR.search(lines[index][0])]
    if not stated:
        return " / ".join(lines[index][0] for index in said[-LAST_LINES:])[-CAUSE_LIMIT:]
    last = said.index(stated[-1])
    cause = lines[said[last]][0]
    if cause.endswith(":") and last + 1 < len(said):  # a line ending in `:` says its error next
        cause += " " + lines[said[last + 1]][0]
    return cause[:CAUSE_LIMIT]

"""The cause a failed build's log states (adapters/buildcause.py), from logs shaped as the
tools upstream builds run write them: CMake's `CMake Error at FILE:LINE (message):` with
its message on the next line (cmake(1) `message(FATAL_ERROR …)`), clang's
`FILE:LINE:COL: error: …` and setuptools' `error: command '…' failed with exit code N`
(distutils' spawn), a script's own last words; and a hostile log's escapes and sizes.
pip's own closing lines are met for real in tests/adapters/test_sandbox.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.adapters.buildcause import CAUSE_LIMIT, failure_cause

PIP_END = (
    "      [end of output]\n  \n"
    "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
    "  ERROR: Failed building wheel for minicache\nFailed to build minicache\n"
    "ERROR: Failed to build one or more wheels\n"
)


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        (
            "-- The CXX compiler identification is Clang 19.1.7\nCMake Error at CMakeLists.txt:5 (message):\n"
            "  hipcc not found\n\n\n-- Configuring incomplete, errors occurred!\n" + PIP_END,
            "CMake Error at CMakeLists.txt:5 (message): hipcc not found",
        ),
        (
            "csrc/kernels.hip:3:5: error: use of undeclared identifier 'x'\n1 error generated.\n"
            "error: command '/opt/rocm/bin/hipcc' failed with exit code 1\n" + PIP_END,
            "error: command '/opt/rocm/bin/hipcc' failed with exit code 1",
        ),
        ("step 1\nstep 2\ncompiler error\n", "step 1 / step 2 / compiler error"),
        ("", ""),
    ],
)
def test_the_cause_is_the_line_that_states_the_error(tmp_path: Path, log: str, cause: str) -> None:
    (tmp_path / "build.log").write_text(log)
    assert failure_cause(tmp_path / "build.log") == cause


def test_a_hostile_log_is_said_as_bounded_printable_text(tmp_path: Path) -> None:
    (tmp_path / "build.log").write_bytes(
        b"x" * (4 << 20) + b"\n\x1b[31mValueError: \x1b]0;owned\x07" + b"y\x07" * 4000 + b"\x1b[0m\n" + PIP_END.encode()
    )
    cause = failure_cause(tmp_path / "build.log")
    assert cause.startswith("ValueError: y y y") and len(cause) == CAUSE_LIMIT
    assert cause.isprintable() and "owned" not in cause
    # a line longer than the tail read is not read from its middle
    (tmp_path / "build.log").write_bytes(b"ValueError: " + b"y" * (1 << 20) + b"\n" + PIP_END.encode())
    assert failure_cause(tmp_path / "build.log") == ""


def test_a_missing_log_says_nothing(tmp_path: Path) -> None:
    assert failure_cause(tmp_path / "none.log") == ""

"""The cause a failed build's log states (adapters/buildcause.py), from logs shaped as the
tools upstream builds run write them: CMake's `CMake Error at FILE:LINE (COMMAND):` with
its message indented under it (cmake(1) `message(FATAL_ERROR …)`, find_package's "Could
not find a package configuration file"), clang's `FILE:LINE:COL: error: …` with the
source line and caret under it (clang's "Expressive Diagnostics" documentation),
setuptools' `error: command '…' failed with exit code N` (distutils' spawn, through
setuptools/_distutils/compilers/C/unix.py), torch.utils.cpp_extension's ninja build
ending in `RuntimeError: Error compiling objects for extension` (_run_ninja_build), a
script's own last words; and a hostile log's escapes and sizes. pip's own closing lines,
gcc and CMake are met for real in tests/adapters/test_sandbox.py."""

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


# the log of a ROCm extension whose kernel does not compile, as clang (hipcc) prints the
# error: its place, the source line and a caret, then the count; gcc's lines are alike
HIPCC = (
    "/opt/rocm/bin/hipcc -I/usr/include/python3.12 -c csrc/x.hip -o build/temp/csrc/x.o -fPIC --offload-arch=gfx942\n"
    "csrc/x.hip:3:5: error: use of undeclared identifier 'foo'\n"
    "    3 |     foo(n);\n"
    "      |     ^\n"
    "csrc/x.hip:9:12: error: no matching function for call to 'launch'\n"
    "    9 |     return launch(grid);\n"
    "      |            ^~~~~~\n"
    "2 errors generated when compiling for gfx942.\n"
)
# what setup.py's build_ext prints under the compiler's error (distutils.errors.CompileError)
SETUPTOOLS = "error: command '/opt/rocm/bin/hipcc' failed with exit code 1\n"
# torch.utils.cpp_extension builds with ninja: ninja's FAILED line and the command, the
# compiler's output, then the two chained tracebacks of _run_ninja_build
TORCH = (
    "[1/2] /opt/rocm/bin/hipcc -c csrc/x.hip -o build/temp/csrc/x.o\n"
    "FAILED: build/temp/csrc/x.o\n"
    "/opt/rocm/bin/hipcc -c csrc/x.hip -o build/temp/csrc/x.o\n"
    + HIPCC.split("\n", 1)[1]
    + "ninja: build stopped: subcommand failed.\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2104, in _run_ninja_build\n'
    "    subprocess.run(\n"
    "subprocess.CalledProcessError: Command '['ninja', '-v', '-j', '2']' returned non-zero exit status 1.\n\n"
    "The above exception was the direct cause of the following exception:\n\n"
    "Traceback (most recent call last):\n"
    '  File "<string>", line 2, in <module>\n'
    '  File "/usr/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2120, in _run_ninja_build\n'
    "    raise RuntimeError(message) from e\n"
    "RuntimeError: Error compiling objects for extension\n"
)
# CMake run by setup.py (subprocess.check_call): find_package's message, indented and in
# paragraphs, then the traceback of the call that ran cmake
CMAKE = (
    "-- The CXX compiler identification is Clang 19.1.7\n"
    "CMake Error at CMakeLists.txt:12 (find_package):\n"
    '  By not providing "Findhip.cmake" in CMAKE_MODULE_PATH this project has\n'
    '  asked CMake to find a package configuration file provided by "hip", but\n'
    "  CMake did not find one.\n\n"
    '  Could not find a package configuration file provided by "hip" with any of\n'
    "  the following names:\n\n"
    "    hipConfig.cmake\n    hip-config.cmake\n\n\n"
    "-- Configuring incomplete, errors occurred!\n"
    "Traceback (most recent call last):\n"
    '  File "setup.py", line 40, in build_extension\n'
    "    subprocess.check_call(['cmake', src, *args], cwd=build)\n"
    "subprocess.CalledProcessError: Command '['cmake', '/tmp/src', '-DCMAKE_BUILD_TYPE=Release',"
    " '-DCMAKE_PREFIX_PATH=/opt/rocm']' returned non-zero exit status 1.\n"
)
NOT_FOUND = (
    'CMake Error at CMakeLists.txt:12 (find_package): By not providing "Findhip.cmake" in CMAKE_MODULE_PATH'
    ' this project has asked CMake to find a package configuration file provided by "hip", but CMake did not'
    ' find one. Could not find a package configuration file provided by "hip" with any of the following names:'
    " hipConfig.cmake hip-config.cmake"
)


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        (
            HIPCC + SETUPTOOLS + PIP_END,
            "csrc/x.hip:3:5: error: use of undeclared identifier 'foo',"
            " then error: command '/opt/rocm/bin/hipcc' failed with exit code 1",
        ),
        (
            TORCH + PIP_END,
            "csrc/x.hip:3:5: error: use of undeclared identifier 'foo',"
            " then RuntimeError: Error compiling objects for extension",
        ),
        (CMAKE + PIP_END, NOT_FOUND[:CAUSE_LIMIT]),
        (
            "x.c: In function 'main':\nx.c:1:10: fatal error: hip/hip_runtime.h: No such file or directory\n"
            "compilation terminated.\nerror: command '/usr/bin/gcc' failed with exit code 1\n" + PIP_END,
            "x.c:1:10: fatal error: hip/hip_runtime.h: No such file or directory,"
            " then error: command '/usr/bin/gcc' failed with exit code 1",
        ),
        (
            "clang: error: invalid target ID 'gfx9999'; format is a processor name followed by an optional"
            " colon-delimited list of features followed by an enable/disable sign (e.g., 'gfx908:sramecc+:xnack-')\n"
            + SETUPTOOLS
            + PIP_END,
            "clang: error: invalid target ID 'gfx9999'; format is a processor name followed by an optional"
            " colon-delimited list of features followed by an enable/disable sign (e.g., 'gfx908:sramecc+:xnack-'),"
            " then error: command '/opt/rocm/bin/hipcc' failed with exit code 1",
        ),
        (
            "-- The CXX compiler identification is Clang 19.1.7\nCMake Error at CMakeLists.txt:5 (message):\n"
            "  hipcc not found\n\n\n-- Configuring incomplete, errors occurred!\n" + PIP_END,
            "CMake Error at CMakeLists.txt:5 (message): hipcc not found",
        ),
        (
            'running build_ext\nTraceback (most recent call last):\n  File "setup.py", line 9\n'
            "RuntimeError: broken build: missing hipcc\n" + PIP_END,
            "RuntimeError: broken build: missing hipcc",
        ),
        (  # a compiler's warning, and a Python warning whose text says error:, are no root error
            "csrc/x.hip:3:5: warning: unused variable 'n' [-Wunused-variable]\n"
            "setup.py:7: UserWarning: error: hipify skipped csrc/y.cu\n"
            "RuntimeError: no ROCm found under /opt/rocm\n" + PIP_END,
            "RuntimeError: no ROCm found under /opt/rocm",
        ),
        ("step 1\nstep 2\ncompiler error\n", "step 1 / step 2 / compiler error"),
        ("", ""),
    ],
    ids=[
        "setuptools",
        "torch",
        "cmake",
        "gcc-fatal",
        "clang-driver",
        "cmake-message",
        "exception",
        "warnings",
        "no-error",
        "empty",
    ],
)
def test_the_cause_is_the_first_root_error_or_the_last_line_stating_one(tmp_path: Path, log: str, cause: str) -> None:
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

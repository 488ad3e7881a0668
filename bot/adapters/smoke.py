"""The smoke test of the exact wheels before they are published (docs/design.md §1.3,
Mooncake's release rule): `wheel.smoke`, a shell command such as
`python -c 'import mooncake'`, run once per python tag in a fresh venv holding only that
wheel (`pip install --no-deps --no-index`), where an interpreter for the tag exists on
this host. A tag without one is said, never passed in silence. Bounded: each step has a
timeout, its output is kept bounded while it is written (adapters/boundedlog.py) and only
its tail is said. The smoke command, the step that runs the wheel's code, runs in the
sandbox builds run in (adapters/sandbox.py), with their allow-listed environment; making
the venv and installing the wheel into it run none of the wheel's code.

On GitHub the bot runs no command of a repository: the build workflow smoke-tests its
wheels, and a failed smoke fails the run (docs/design.md §1.2).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.checks.wheelset import python_tags_of
from . import sandbox
from .boundedlog import BoundedLog
from .localbuild import build_environment

SMOKE_SECONDS = 600  # the smoke command's; making the venv and installing the wheel have as long each
TAIL = 1500  # characters of a failed step's output said
KEPT = 64 * 1024  # bytes of a step's output kept on disk, at its start and again at its end
_CPYTHON = re.compile(r"^cp(\d)(\d+)$")


@dataclass
class SmokeResult:
    passed: list[str] = field(default_factory=list)  # python tags whose smoke test passed
    failed: list[str] = field(default_factory=list)  # one sentence per tag that failed
    not_run: list[str] = field(default_factory=list)  # one sentence per tag with no interpreter here
    by_workflow: bool = False  # on GitHub: the build workflow ran it, not wheelpin


def interpreter_for(tag: str) -> str | None:
    """The python of this host that runs wheels of `tag` (`cp312` → python3.12; `py3` → this one)."""
    match = _CPYTHON.match(tag)
    if match is None:
        return sys.executable if tag in ("py3", "py2.py3") or tag.startswith("py3") else None
    version = f"{match.group(1)}.{match.group(2)}"
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        return None
    try:  # a name on PATH is not yet an interpreter (a pyenv shim of a version not installed)
        said = subprocess.run(
            [found, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if said.returncode == 0 and said.stdout.strip() == version else None


def smoke_wheels(command: str, wheels: Sequence[Path], *, seconds: int = SMOKE_SECONDS) -> SmokeResult:
    """`command` against each of `wheels`, in a fresh venv per python tag its file name
    carries, and per variant label (PEP 825) where the wheels of a tag are variant wheels:
    each is said as its row, `cp312 (variant amd_gfx942)`."""
    from ..core.wheel.metadata import split_variant_label

    rows: dict[str, Path] = {}
    for wheel in wheels:
        label = split_variant_label(wheel.name)[1]
        for tag in python_tags_of(wheel.name):
            rows[tag if label is None else f"{tag} (variant {label})"] = wheel
    return smoke_test(command, rows, seconds=seconds)


def smoke_said(command: str, smoked: SmokeResult) -> list[str]:
    """What a passed smoke test says: the tags it passed for, and each tag it could not run."""
    return ([f"smoke test `{command}` passed for {', '.join(smoked.passed)}"] if smoked.passed else []) + smoked.not_run


def smoke_test(command: str, wheels: dict[str, Path], *, seconds: int = SMOKE_SECONDS) -> SmokeResult:
    """`command` in a fresh venv per python tag → wheel (`wheels`; a tag may be followed by
    what tells its wheel from the others of that tag, `cp312 (variant amd_gfx942)`), stopped
    after `seconds` (the venv and the wheel's install, which the command does not choose,
    have SMOKE_SECONDS or `seconds` if longer: a loaded host's slow pip is not the command
    hanging)."""
    result = SmokeResult()
    sandboxed = sandbox.enabled()  # refused in one sentence before anything runs
    for tag, wheel in sorted(wheels.items()):
        python = interpreter_for(tag.split(" ", 1)[0])
        if python is None:
            result.not_run.append(f"{tag}: no interpreter for it on this host, smoke test not run")
            continue
        with tempfile.TemporaryDirectory(prefix="wheelpin-smoke-") as folder:
            failed = _one(command, python, wheel, Path(folder), seconds, sandboxed=sandboxed)
        if failed is None:
            result.passed.append(tag)
        else:
            result.failed.append(f"{tag}: {failed}")
    return result


def _one(command: str, python: str, wheel: Path, folder: Path, seconds: int, *, sandboxed: bool) -> str | None:
    """None when `command` passed with `wheel` installed alone, else what went wrong."""
    venv = folder / "venv"
    host_pip = importlib.util.find_spec("pip") is not None
    setup = max(seconds, SMOKE_SECONDS)
    step = _run([python, "-m", "venv", *(["--without-pip"] if host_pip else []), str(venv)], folder, setup)
    if step is not None:
        return f"the venv could not be made ({step})"
    venv_python = venv / "bin" / "python"
    # pip refuses a variant wheel's name (PEP 825, Backwards Compatibility: the label makes
    # an installer of today read the python tag as a build tag), so it installs a copy
    # named without the label: the same bytes, variant.json kept in its dist-info
    from ..core.wheel.metadata import split_variant_label

    installed, plain = wheel, split_variant_label(wheel.name)[0]
    if plain != wheel.name:
        (folder / "wheel").mkdir()
        installed = Path(shutil.copyfile(wheel, folder / "wheel" / plain))
    pip = [sys.executable, "-m", "pip", "--python", str(venv_python)] if host_pip else [str(venv_python), "-m", "pip"]
    step = _run(
        [
            *pip,
            "install",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--quiet",
            str(installed),
        ],
        folder,
        setup,
    )
    if step is not None:
        return f"pip install --no-deps {wheel.name} failed ({step})"
    scratch = folder / "tmp"
    environment = sandbox.sandbox_environment(
        {
            **build_environment(),
            "VIRTUAL_ENV": str(venv),
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        },
        sandboxed=sandboxed,
        scratch=scratch,
    )
    jail = sandbox.Jail(
        workdir=folder,
        scratch=scratch,
        writable=(folder,),
        readable=(sandbox.interpreter_home(python), *sandbox.readable_pythons()),
    )
    step = _run(sandbox.wrapped(command, jail) if sandboxed else command, folder, seconds, env=environment)
    return None if step is None else f"`{command}` failed ({step})"


def _run(command: Sequence[str] | str, cwd: Path, seconds: int, env: dict[str, str] | None = None) -> str | None:
    """None on exit 0; else the exit status and the tail of the output, in one line."""
    log = cwd / "output.log"
    output = BoundedLog(log, head=KEPT, tail=KEPT)
    try:
        process = subprocess.Popen(
            command,
            shell=isinstance(command, str),
            cwd=cwd,  # noqa: S602
            env=env if env is not None else build_environment(),
            stdout=output.writer,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        output.started()
        output.finish()
        return f"could not start: {exc.strerror or exc}"
    output.started()
    try:
        code = process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return f"still running after {seconds} s, stopped"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the command and whatever it started
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()
        output.finish()
    if code == 0:
        return None
    with log.open("rb") as stream:
        stream.seek(max(0, log.stat().st_size - TAIL))
        tail = " ".join(stream.read().decode("utf-8", "replace").split())
    return f"exit {code}: {tail}" if tail else f"exit {code}"

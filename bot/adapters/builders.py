"""The local builder (docs/design.md §1.2): `build.command` run in a clean checkout of the
upstream at the commit, with `{sha}`, `{sha8}`, `{out}` filled and the same values in
`WHEELPIN_*` variables. Output and exit status are kept in a log beside the wheels; a
`.complete` marker is written only after success, so a killed build is never taken
for a finished one. The build runs in its own process group, noted in `build.pid` while
it runs: a pass killed meanwhile leaves it running, and the next build of that commit
ends it first, so two builds never run side by side."""

from __future__ import annotations

import os
import re
import shlex
import signal
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.config import Component
from ..core.templates import commit_values, render
from .progress import waited
from .upstream import UpstreamRepo

COMPLETE = ".complete"


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    wheels: tuple[Path, ...]
    log: Path
    message: str


_SECRET_NAMES = re.compile(r"PASSWORD|TOKEN|SECRET|CREDENTIAL|PRIVATE_KEY|AUTH", re.I)


def build_environment() -> dict[str, str]:
    """The environment a build runs in: the process's, less wheelpin's own settings and
    anything that looks like a secret — a build runs upstream code."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith("WHEELPIN_") and key != "DOCKER_CONFIG" and not _SECRET_NAMES.search(key)}


def build_folder(cache: Path, component: str, commit: str) -> Path:
    return cache / "builds" / component / commit


PROVENANCE = "provenance"  # beside `out/`: who made these wheels, when they are not a build of wheelpin's


def seed_build(cache: Path, component: str, commit: str, wheels: Sequence[Path], *, provenance: str) -> list[Path]:
    """Wheels built elsewhere, taken as the build of `commit`: copied into the build
    folder and marked complete only once all are there (a stop halfway leaves no build)."""
    folder = build_folder(cache, component, commit)
    out = folder / "out"
    discard_build(cache, component, commit)
    staging = folder / "out.partial"
    staging.mkdir(parents=True)
    for wheel in wheels:
        shutil.copyfile(wheel, staging / wheel.name)
    note_provenance(cache, component, commit, provenance)
    (staging / COMPLETE).write_text(commit + "\n")
    staging.rename(out)
    return sorted(out.glob("*.whl"))


def note_provenance(cache: Path, component: str, commit: str, provenance: str) -> None:
    """Say where the build of `commit` comes from, when it is not a build of wheelpin's."""
    folder = build_folder(cache, component, commit)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PROVENANCE).write_text(provenance + "\n")


def discard_build(cache: Path, component: str, commit: str) -> None:
    """Forget the wheels held as the build of `commit` (another build is to be taken)."""
    shutil.rmtree(build_folder(cache, component, commit), ignore_errors=True)


def build_provenance(cache: Path, component: str, commit: str) -> str | None:
    path = build_folder(cache, component, commit) / PROVENANCE
    return path.read_text().strip() if path.exists() else None


def built_wheels(cache: Path, component: str, commit: str) -> list[Path] | None:
    out = build_folder(cache, component, commit) / "out"
    if not (out / COMPLETE).exists():
        return None
    return sorted(out.glob("*.whl"))


RUNNING = "build.pid"  # the process group of a build under way, and when its leader started


def _started(pid: int) -> str | None:
    """When process `pid` started (field 22 of /proc/PID/stat), None when it is gone: a
    pid the kernel gave again to another process is told apart by it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def end_orphaned_build(folder: Path) -> bool:
    """A pass killed while its build ran (SIGKILL: no `finally`) left the build running in
    its own session. End that process group, so no second build runs beside it; True when
    one was found."""
    marker = folder / RUNNING
    try:
        pid_text, started = marker.read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    now = _started(pid)
    found = False
    if now is None or now == started:  # the leader is ours (or gone, its children may not be)
        try:
            os.killpg(pid, signal.SIGKILL)
            found = True
        except (ProcessLookupError, PermissionError):
            pass
    marker.unlink(missing_ok=True)
    return found


def run_local_build(component: Component, commit: str, *, upstream: UpstreamRepo, cache: Path) -> BuildResult:
    folder = build_folder(cache, component.name, commit)
    end_orphaned_build(folder)
    out = folder / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    log = folder / "build.log"
    checkout = upstream.checkout(commit, cache / "checkouts" / component.name / commit[:12])
    values = {**commit_values(commit, component.name), "out": str(out)}
    command = component.build.command
    assert command is not None
    # a list is run as it is; a string through the shell, with the values quoted
    run: list[str] | str = ([render(part, values) for part in command] if isinstance(command, list)
                            else render(command, {k: shlex.quote(v) for k, v in values.items()}))
    environment = {**build_environment(), **{f"WHEELPIN_{k.upper()}": v for k, v in values.items()}}
    try:
        with log.open("wb") as stream:
            process = subprocess.Popen(run, shell=isinstance(run, str), cwd=checkout,  # noqa: S602
                                       stdout=stream, stderr=subprocess.STDOUT, env=environment,
                                       start_new_session=True)
            (folder / RUNNING).write_text(f"{process.pid} {_started(process.pid) or 0}\n")
            try:
                code = waited(process, f"build {component.name} {commit[:8]}", log,
                              component.build.timeout_minutes * 60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the build and every child it started
                process.wait()
                code = -1
            finally:
                try:
                    os.killpg(process.pid, signal.SIGKILL)  # children it left behind end with it
                except (ProcessLookupError, PermissionError):
                    pass
                (folder / RUNNING).unlink(missing_ok=True)
    except OSError as exc:
        log.write_text(f"cannot run the build command: {exc}\n")
        code = -2
    finally:
        upstream.remove_checkout(checkout)
    wheels = tuple(sorted(out.glob("*.whl")))
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        return BuildResult(False, wheels, log, f"build of {commit[:8]} failed (exit {code}): "
                           + " / ".join(tail)[-300:])
    if not wheels:
        return BuildResult(False, wheels, log, f"build of {commit[:8]} left no wheel in {{out}}")
    (out / COMPLETE).write_text(commit + "\n")
    return BuildResult(True, wheels, log, f"built {len(wheels)} wheel(s)")

"""A local build (docs/design.md §1.2), the process the `command` build kind
(loop/builders/command.py) runs: `build.command` in a clean checkout of the upstream at
the commit, with `{sha}`, `{sha8}`, `{out}` filled and the same values in `WHEELPIN_*`
variables. Output and exit status are kept in a log beside the wheels; a
`.complete` marker is written only after success, so a killed build is never taken
for a finished one. The build runs in a sandbox (adapters/sandbox.py: the bot's
processes, environment, credentials and cache out of its reach; all it started ends with
it), with an allow-listed environment, its output bounded (adapters/boundedlog.py). It
also runs in its own process group, noted in `build.pid` while it runs: unsandboxed
(WHEELPIN_SANDBOX=off), a pass killed meanwhile leaves it running, and the next build of
that commit ends it first, so two builds never run side by side."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..core.config.model import CommandBuild, Component
from ..core.config.templates import commit_values, render
from . import sandbox
from .boundedlog import BoundedLog, MiB
from .buildcache import COMPLETE, build_folder
from .buildcause import failure_cause
from .progress import waited
from .upstream import UpstreamRepo


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    wheels: tuple[Path, ...]
    log: Path
    message: str


# What a build or a smoke test is given of wheelpin's environment: an allow-list, never a
# deny-list (a token named GH_PAT or MY_SERVICE_API_KEY says nothing of what it is).
# The locale, the time zone, the terminal; proxies and package indexes (pip, uv) and the
# certificates they trust; where ROCm is and what a ROCm build is for. A value carrying
# credentials in a URL (`https://user:pass@proxy`) is left out all the same.
_PASSED = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "SOURCE_DATE_EPOCH",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_TRUSTED_HOST",
        "PIP_CERT",
        "PIP_DEFAULT_TIMEOUT",
        "PIP_DISABLE_PIP_VERSION_CHECK",
        "PIP_NO_CACHE_DIR",
        "PIP_PREFER_BINARY",
        "UV_INDEX_URL",
        "UV_EXTRA_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "UV_INDEX",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "ROCM_PATH",
        "ROCM_HOME",
        "HIP_PATH",
        "PYTORCH_ROCM_ARCH",
        "GPU_ARCHS",
        "MAX_JOBS",
        "CMAKE_BUILD_PARALLEL_LEVEL",
    }
)
PASS_SETTING = "WHEELPIN_BUILD_ENV"  # more names to pass, separated by commas: the operator's choice
_URL_CREDENTIALS = re.compile(r"://[^/@\s]*@")


def build_environment() -> dict[str, str]:
    """The environment a build and a smoke test run in: the allow-listed variables of the
    process (LC_* too) and those WHEELPIN_BUILD_ENV names; HOME and TMPDIR are the
    sandbox's (adapters/sandbox.py); the build's own WHEELPIN_* values are added by it."""
    passed = _PASSED | {name.strip() for name in os.environ.get(PASS_SETTING, "").split(",") if name.strip()}
    return {
        key: value
        for key, value in os.environ.items()
        if (key in passed or key.startswith("LC_")) and not _URL_CREDENTIALS.search(value)
    }


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


LOG_HEAD = 8 * MiB  # a build's log keeps its first bytes (how it began) …
LOG_TAIL = 8 * MiB  # … and its last (where it failed): adapters/boundedlog.py


@dataclass(frozen=True)
class LocalBuild:
    """What `build.command` of one commit runs, and where: said by a dry run, run by
    `run_local_build`."""

    checkout: Path  # the clean checkout of the commit it runs in
    out: Path  # where it leaves its wheels (`{out}`)
    run: list[str] | str  # the command, its placeholders filled
    values: dict[str, str]  # the placeholders' values, also given as WHEELPIN_* variables

    @property
    def said(self) -> str:
        return self.run if isinstance(self.run, str) else shlex.join(self.run)


def local_build(component: Component, commit: str, cache: Path) -> LocalBuild:
    out = build_folder(cache, component.name, commit) / "out"
    values = {**commit_values(commit, component.name), "out": str(out)}
    assert isinstance(component.build, CommandBuild), "a local build runs a `command` build"
    command = component.build.command
    # a list is run as it is; a string through the shell, with the values quoted
    run: list[str] | str = (
        [render(part, values) for part in command]
        if isinstance(command, list)
        else render(command, {k: shlex.quote(v) for k, v in values.items()})
    )
    return LocalBuild(cache / "checkouts" / component.name / commit[:12], out, run, values)


def run_local_build(component: Component, commit: str, *, upstream: UpstreamRepo, cache: Path) -> BuildResult:
    sandboxed = sandbox.enabled()  # refused in one sentence before anything is made
    folder = build_folder(cache, component.name, commit)
    end_orphaned_build(folder)
    out = folder / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    scratch = folder / "tmp"  # the build's /tmp and HOME, gone after it
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    log = folder / "build.log"
    planned = local_build(component, commit, cache)
    checkout = upstream.checkout(commit, planned.checkout)
    run, values = planned.run, planned.values
    environment = sandbox.sandbox_environment(
        {**build_environment(), **{f"WHEELPIN_{k.upper()}": v for k, v in values.items()}},
        sandboxed=sandboxed,
        scratch=scratch,
    )
    # the checkout's git metadata lives in the mirror (a worktree of it): shown read-only,
    # so setuptools-scm and `git describe` work, less FETCH_HEAD (it names the fetched URL)
    jail = sandbox.Jail(
        workdir=checkout,
        scratch=scratch,
        writable=(checkout, out),
        readable=(upstream.mirror, *sandbox.readable_pythons()),
        hidden=(upstream.mirror / "FETCH_HEAD",),
    )
    argv: list[str] | str = sandbox.wrapped(run, jail) if sandboxed else run
    try:
        output = BoundedLog(log, head=LOG_HEAD, tail=LOG_TAIL)
        try:
            process = subprocess.Popen(
                argv,
                shell=isinstance(argv, str),
                cwd=checkout,  # noqa: S602
                stdout=output.writer,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,
            )
        except OSError:
            output.started()
            output.finish()
            raise
        output.started()
        (folder / RUNNING).write_text(f"{process.pid} {_started(process.pid) or 0}\n")
        try:
            code = waited(process, f"build {component.name} {commit[:8]}", log, component.build.timeout_minutes * 60)
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
            written, cut = output.finish(), output.cut
    except OSError as exc:
        log.write_text(f"cannot run the build command: {exc}\n")
        code, written, cut = -2, 0, False
    finally:
        upstream.remove_checkout(checkout)
        shutil.rmtree(scratch, ignore_errors=True)
    said = (
        f" (its {written // MiB} MiB of output cut to the first {LOG_HEAD // MiB} and last "
        f"{LOG_TAIL // MiB} MiB in its log)"
        if cut
        else ""
    )
    wheels = tuple(sorted(out.glob("*.whl")))
    if code != 0:
        cause = failure_cause(log)
        return BuildResult(
            False, wheels, log, f"build of {commit[:8]} failed (exit {code}){said}" + (f": {cause}" if cause else "")
        )
    if not wheels:
        return BuildResult(False, wheels, log, f"build of {commit[:8]} left no wheel in {{out}}{said}")
    (out / COMPLETE).write_text(commit + "\n")
    return BuildResult(True, wheels, log, f"built {len(wheels)} wheel(s){said}")

"""Where a repository's command runs: a local build (`build.command`,
adapters/localbuild.py) and a smoke test (`wheel.smoke`, adapters/smoke.py) run upstream's
code, so they run in a bubblewrap sandbox (`bwrap`) that leaves the bot out of their reach:

- their own PID namespace with a fresh /proc (bwrap(1) `--unshare-pid`, `--proc`): the
  bot's processes, hence /proc/<pid>/environ with its settings and tokens, are not there
  (proc(5)); when the command ends, the namespace's init ends and the kernel kills every
  process left in it (pid_namespaces(7)), so a `setsid` daemon dies with its build;
  `--die-with-parent` does the same when wheelpin itself dies;
- a read-only view of the system: /usr, /bin, /lib*, /opt (ROCm lives there), /etc less
  its secrets, /sys; the python wheelpin runs on and the interpreters named (read-only);
  no /home, /root, /run (the docker socket), no cache folder (state, settings);
- writable: only the checkout, the output folder and a scratch folder of the build's, seen
  as /tmp, HOME a folder in it (so ~/.docker, ~/.config/containers, ~/.netrc are not there);
- the network kept (a build fetches its build dependencies with pip);
- an allow-listed environment (adapters/localbuild.py build_environment), no capability
  (bwrap(1): by default none is left in the sandbox), a new session (`--new-session`: it
  cannot push input into the bot's terminal).

Where bwrap cannot run, the command is refused in one sentence unless the operator set
WHEELPIN_SANDBOX=off, which runs it unsandboxed and is unsafe; never silently unsandboxed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError

SETTING = "WHEELPIN_SANDBOX"  # "off": run repository commands unsandboxed (unsafe)
READ_SETTING = "WHEELPIN_SANDBOX_READ"  # more read-only folders, separated by ':'
OFF = "off"

# The system as a build sees it, read-only; a link among them (/bin → usr/bin on a merged
# /usr) is made again as a link
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/sys")
# Secrets of /etc, hidden (an empty file or folder over them): password hashes, the host's
# ssh keys, TLS private keys, docker's and containers' own credentials
_ETC_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/docker",
    "/etc/containers/auth.json",
    "/etc/wheelpin",
    "/etc/netrc",
)
_GPU = ("/dev/kfd", "/dev/dri")  # a smoke test may touch the GPU: ROCm's device nodes, if any


class SandboxUnavailable(UsageError):
    """bwrap cannot run here and the operator has not opted out: the command is not run."""


@dataclass(frozen=True)
class Jail:
    """What one command may touch: `writable` folders (the checkout, the output), `readable`
    ones (interpreters), `scratch` (a folder of the caller's, seen as /tmp), `workdir`;
    `hidden` files in those folders show as empty."""

    workdir: Path
    scratch: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()


def undumpable() -> None:
    """This process made non-dumpable (prctl(2) PR_SET_DUMPABLE 0): its /proc/<pid>/environ,
    mem, fd… then belong to root and ptrace access is refused to other processes of the
    same user (proc(5)), so a command run unsandboxed cannot read the bot's settings and
    tokens there either; and no core dump holds them. Called at the start of a command
    that runs builds or smoke tests, or serves. Where prctl is not (not Linux), nothing.
    prctl is looked up among the symbols the process has loaded already (dlopen(3) of NULL,
    whose global scope holds the C library Python runs on), not by find_library, which runs
    `ldconfig -p` on every start of such a command."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def enabled() -> bool:
    """True when commands run sandboxed; raises SandboxUnavailable when they cannot be and
    the operator has not said WHEELPIN_SANDBOX=off (then False, said once as a warning)."""
    if os.environ.get(SETTING, "").strip().lower() == OFF:
        _warn_unsandboxed()
        return False
    problem = _problem()
    if problem is not None:
        raise SandboxUnavailable(
            f"builds and smoke tests run in a bubblewrap sandbox so they cannot read the bot's credentials, "
            f"and bwrap cannot run here ({problem}): install bubblewrap (Debian: apt-get install bubblewrap) "
            f"where user namespaces are allowed, or set {SETTING}={OFF} to run them unsandboxed (unsafe)"
        )
    return True


@functools.cache
def _warn_unsandboxed() -> None:
    from . import logs

    logs.get_logger("wheelpin.sandbox").warning(
        "sandbox.off",
        reason=f"{SETTING}={OFF}: builds and smoke tests run unsandboxed and can read "
        "what this user can (credentials files, the cache folder)",
    )


def unavailable() -> str | None:
    """Why builds cannot be sandboxed here (no bwrap, no user namespaces), None when they can."""
    return _problem()


@functools.cache
def _problem() -> str | None:
    """Why bwrap cannot run here, None when it can: asked once per process, with the
    namespaces and mounts a real command gets."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "no bwrap on PATH"
    try:
        done = subprocess.run(
            [
                bwrap,
                "--unshare-pid",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--tmpfs",
                "/tmp",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not start: {exc}"
    if done.returncode != 0:
        return " ".join(done.stderr.split())[:200] or f"exit {done.returncode}"
    return None


def interpreter_home(python: str | Path) -> Path:
    """The installation an interpreter runs from (`…/bin/python3.12` → `…`), found through
    its links (a venv's python is a link to its base's); what a sandbox must let it read."""
    return Path(os.path.realpath(python)).parent.parent


def readable_pythons() -> tuple[Path, ...]:
    """The python wheelpin runs on, its venv and base (a build or smoke often runs it),
    and the folders the operator named in WHEELPIN_SANDBOX_READ."""
    extra = [Path(part) for part in os.environ.get(READ_SETTING, "").split(":") if part.strip()]
    return (Path(sys.prefix), Path(sys.base_prefix), interpreter_home(sys.executable), *extra)


def wrapped(command: Sequence[str] | str, jail: Jail) -> list[str]:
    """`command` (a list as it is, a string through /bin/sh) inside the sandbox: bwrap's
    command line. The scratch folder is mounted first, as /tmp; then each folder the
    command may see, shallowest first, at its own path (a folder under /tmp included)."""
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [
        bwrap,
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    for device in _GPU:
        args += ["--dev-bind-try", device, device]
    for path in _SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for secret in _ETC_SECRETS:
        if os.path.isdir(secret) and not os.path.islink(secret):
            args += ["--tmpfs", secret]
        elif os.path.lexists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    resolv = Path("/etc/resolv.conf")
    if resolv.is_symlink() and resolv.exists():  # systemd-resolved's lives in /run, not shown
        target = resolv.resolve()
        args += ["--ro-bind", str(target), str(target)]
    args += ["--bind", str(jail.scratch), "/tmp", "--dir", "/var", "--symlink", "/tmp", "/var/tmp"]
    mounts = [(path, "--ro-bind") for path in jail.readable if path.exists() and not _system(path)]
    mounts += [(path, "--bind") for path in jail.writable]
    for folder, how in sorted(mounts, key=lambda mount: len(mount[0].parts)):
        args += [how, str(folder), str(folder)]
    for hidden in jail.hidden:
        if hidden.exists():
            args += ["--ro-bind", "/dev/null", str(hidden)]
    return [*args, "--chdir", str(jail.workdir), "--", *argv]


def _system(path: Path) -> bool:
    """A folder the system view already shows (read-only)."""
    return any(path == Path(root) or Path(root) in path.parents for root in _SYSTEM)


def sandbox_environment(environment: dict[str, str], *, sandboxed: bool, scratch: Path) -> dict[str, str]:
    """The command's environment: HOME an empty folder of the scratch one, TMPDIR /tmp (the
    scratch folder as the sandbox shows it; unsandboxed, the scratch folder itself)."""
    tmp = "/tmp" if sandboxed else str(scratch)
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {**environment, "HOME": f"{tmp}/home", "TMPDIR": tmp}

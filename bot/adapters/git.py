"""Running git: one small helper every git-using adapter shares, with a clean identity.

git's own config of the user (identity, hooks, signing) never leaks in: commands run
with a private HOME-less config and an explicit author/committer when they commit.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.errors import TransientError, UsageError

ZERO = "0" * 40


class GitError(TransientError):
    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        super().__init__(
            f"git {' '.join(str(a) for a in args[:2])} failed ({code}): {redact_urls(stderr.strip()[:300])}"
        )
        self.code = code
        self.stderr = stderr


def redact_urls(text: str) -> str:
    """git's messages name remote URLs; drop any user:password in them."""
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1", text)


def git_bytes(args: Sequence[str], *, cwd: Path | None = None) -> bytes | None:
    """A command's raw output (file contents), or None when it fails."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=git_env(), timeout=600)
    return done.stdout if done.returncode == 0 else None


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    environment.update(
        {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    )
    environment.update(extra or {})
    return environment


def git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float = 600,
) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input.encode() if isinstance(input, str) else input,
            capture_output=True,
            env=git_env(env),
            timeout=timeout,
        )
    except FileNotFoundError:
        raise UsageError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise TransientError(f"git {' '.join(args[:2])} timed out after {timeout:.0f}s") from None
    if check and done.returncode != 0:
        raise GitError(list(args), done.returncode, done.stderr.decode(errors="replace"))
    return done.stdout.decode(errors="replace")


def git_ok(args: Sequence[str], *, cwd: Path | None = None) -> bool:
    """Whether a git command succeeds (for questions such as --is-ancestor)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=git_env(), timeout=600)
    return done.returncode == 0

"""Running the real `wheelpin` command in a subprocess, as a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent  # the tree whose `bot` the tests run


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


# Any request to a host that is not loopback goes to a closed loopback port and fails at
# once: a test can never reach out of this machine, even by mistake.
OFFLINE = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost,::1",
    "https_proxy": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "no_proxy": "127.0.0.1,localhost,::1",
}


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a wheelpin subprocess of a test runs in: offline, none of the
    caller's WHEELPIN_ settings or registry credentials, GitHub writes unspaced, then `env`."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("WHEELPIN_") or k == "WHEELPIN_TEST_CACHE"}
    inherited.pop("DOCKER_CONFIG", None)  # a test's registry credentials are its own
    # GitHub writes not a second apart: a subprocess cannot be given the clock that skips the
    # waits (tests/conftest.py's `pacing_clock`), under which the spacing is tested in-process
    return {**inherited, **OFFLINE, "WHEELPIN_GITHUB_WRITE_GAP": "0", **(env or {})}


def wheelpin(
    *args: str, env: dict[str, str] | None = None, crash_after: int | None = None, cwd: Path | None = None
) -> Result:
    """`wheelpin ARGS…` in a subprocess; with `crash_after`, killed right after that many
    actions (tests/fixtures/crash.py); with `cwd`, run there (this tree's `bot` still the one
    imported)."""
    command = ["-m", "bot.cli"] if crash_after is None else ["-m", "tests.fixtures.crash", str(crash_after)]
    environ = environment(env)
    if cwd is not None:
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, *command, *args], capture_output=True, text=True, env=environ, timeout=600, cwd=cwd
    )
    return Result(done.returncode, done.stdout, done.stderr)

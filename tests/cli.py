"""Running the real `wheelpin` command in a subprocess, as a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def wheelpin(*args: str, env: dict[str, str] | None = None) -> Result:
    environment = {**os.environ, **(env or {})}
    done = subprocess.run([sys.executable, "-m", "bot.cli", *args], capture_output=True,
                          text=True, env=environment, timeout=600)
    return Result(done.returncode, done.stdout, done.stderr)

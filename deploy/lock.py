"""Writes deploy/requirements.lock: every dependency of the bot's image (wheelpin with its
`postgres` extra), pinned, with the sha256 of the one wheel pip picks for the image's
Python (CPython 3.11, manylinux x86_64). The Dockerfile installs it with
`--require-hashes`, then wheelpin itself with `--no-deps`.

Run from the project root after changing pyproject.toml's dependencies:
    python deploy/lock.py
(pip resolves as for the image, from the index pip is configured with; nothing is installed).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "linux_x86_64")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
            "--target",
            str(Path(scratch) / "target"),
            *[flag for platform in PLATFORMS for flag in ("--platform", platform)],
            f"{ROOT}[postgres]",
        ]
        subprocess.run(command, check=True)
        installed = json.loads(report.read_text())["install"]
    lines = [
        "# The bot's image's dependencies, pinned with their wheels' sha256 for CPython 3.11 on",
        "# manylinux x86_64. Written by `python deploy/lock.py`; the Dockerfile installs it with",
        "# --require-hashes. Do not edit by hand.",
    ]
    for item in sorted(installed, key=lambda entry: entry["metadata"]["name"].lower()):
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if name == "wheelpin":
            continue
        digest = item["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{name}=={version} \\\n    --hash=sha256:{digest}")
    (ROOT / "deploy" / "requirements.lock").write_text("\n".join(lines) + "\n")
    print(f"deploy/requirements.lock: {len(lines) - 3} packages")


if __name__ == "__main__":
    main()

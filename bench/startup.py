"""Benchmark: how fast `wheelpin` starts (issue 18): wall time of `--help`, `config validate`
and a no-op `reconcile --once --dry-run` of one component (the demo's downstream, its pin
current), each the median of `--runs` fresh processes, next to the targets and to a bare
`python -c pass`.

Two interpreters, side by side: this one (a development venv, where wheelpin is an editable
install: setuptools' editable finder runs at every start, ~13 ms of pathlib and urllib
imports) and wheelpin as users have it installed (a venv whose site-packages are this one's
libraries without the editable hook, wheelpin on the path), which the targets are about.

Run from the project root:  python bench/startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], cwd: Path, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, (command, done.stderr.decode()[-500:])
    return statistics.median(times)


def installed_python(scratch: Path) -> str:
    """A venv that sees this interpreter's libraries as plain paths (a .pth line is added to
    sys.path; the .pth files of that folder, the editable finder's among them, are not run)."""
    venv = scratch / "installed"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    libraries = [path for path in sys.path if path.endswith("site-packages")]
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "libraries.pth").write_text("\n".join(libraries) + "\n")
    return str(venv / "bin" / "python")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wheelpin-startup-") as scratch:
        work = Path(scratch)
        env = {**os.environ, "WHEELPIN_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
        wheelpin = [sys.executable, "-m", "bot"]
        made = subprocess.run([*wheelpin, "demo", "--workdir", str(work / "demo")], env=env, capture_output=True)
        assert made.returncode == 0, made.stderr.decode()[-500:]
        downstream = work / "demo" / "downstream"
        env["WHEELPIN_CACHE_DIR"] = str(work / "demo" / "cache")
        subprocess.run([*wheelpin, "reconcile", "--once"], cwd=downstream, env=env, capture_output=True)  # warm
        installed = installed_python(work)
        cases = [("python -c pass", ["-c", "pass"], None),
                 ("wheelpin --help", ["-m", "bot", "--help"], 0.150),
                 ("wheelpin config validate", ["-m", "bot", "config", "validate"], 0.150),
                 ("wheelpin reconcile --once --dry-run (1 component, no-op)",
                  ["-m", "bot", "reconcile", "--once", "--dry-run"], 0.250)]
        print(f"{'':58s} {'installed':>10s} {'dev venv':>10s}")
        for label, command, target in cases:
            seconds = timed([installed, *command], downstream, env, args.runs)
            dev = timed([sys.executable, *command], downstream, env, args.runs)
            goal = f"(target {target * 1000:.0f} ms: {'met' if seconds <= target else 'NOT met'})" if target else ""
            print(f"{label:58s} {seconds * 1000:7.1f} ms {dev * 1000:7.1f} ms {goal}", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: how fast `wheelpin` starts (issue 18): wall time of `--help`, `config validate`
and a no-op `reconcile --once --dry-run` of one component (the demo's downstream, its pin
current), each the median of `--runs` fresh processes, next to the targets and to a bare
`python -c pass`.

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
        cases = [("python -c pass", [sys.executable, "-c", "pass"], None),
                 ("wheelpin --help", [*wheelpin, "--help"], 0.150),
                 ("wheelpin config validate", [*wheelpin, "config", "validate"], 0.150),
                 ("wheelpin reconcile --once --dry-run (1 component, no-op)",
                  [*wheelpin, "reconcile", "--once", "--dry-run"], 0.250)]
        for label, command, target in cases:
            seconds = timed(command, downstream, env, args.runs)
            goal = f"(target {target * 1000:.0f} ms: {'met' if seconds <= target else 'NOT met'})" if target else ""
            print(f"{label:58s} {seconds * 1000:7.1f} ms {goal}", flush=True)


if __name__ == "__main__":
    main()

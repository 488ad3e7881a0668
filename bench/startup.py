"""Benchmark: how fast `wheelpin` starts: wall time of `--help`, `config validate`
and a no-op `reconcile --once --dry-run` of one component (the demo's downstream, its pin
current), each the median of `--runs` fresh processes, next to the targets.

Next to each command, its floor: a script that only imports the libraries the command
cannot do without and uses each once (pydantic with one model, packaging with one
requirement, tomli; for a pass also a settings model, sqlite3 and BuildKit's parser; a
quiet pass writes no log line, so structlog is not loaded for one). What the command takes
above it is wheelpin's own start-up. This machine's speed drifts by ±10 % from one minute
to the next, so the cases run interleaved, one round after another, and are compared
within one run.

Two interpreters: wheelpin as users have it installed (a venv whose site-packages are this
one's libraries without the editable hook, wheelpin on the path), which the targets are
about, and this one (a development venv, where wheelpin is an editable install:
setuptools' editable finder runs at every start).

With `--imports`, it prints instead where each command's start-up goes: `python -X
importtime`'s own time of each module, summed by package (wheelpin's by subpackage), the
least of `--runs` runs each, largest first: the module-level costs a change should lower.

Run from the project root:  python bench/startup.py [--runs 21] [--imports]
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

# "Is there an update?" as a user asks it of the local platform, after the interpreter.
DRY_RUN = ("-m", "bot", "reconcile", "--once", "--dry-run", "--platform", "local")

_VALIDATE_FLOOR = """import gc; gc.disable()
import os; os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"  # as wheelpin's own process (cli.main)
import argparse, tomli
from pydantic import BaseModel, Field
class M(BaseModel):
    x: int = Field(default=1, description="x")
M(x=2)
import packaging.requirements
packaging.requirements.Requirement("numpy==2.3.5")
"""
_PASS_FLOOR = (
    _VALIDATE_FLOOR
    + """import logging, sqlite3, subprocess
import dockerfile
class S(BaseModel):
    y: int = 1
S.model_validate({"y": "2"})
sqlite3.connect(":memory:").close()
"""
)


def installed_python(scratch: Path, python: str = sys.executable) -> str:
    """A venv of `python` (this interpreter, or another build of its Python version, such as
    the distribution's own) that sees this interpreter's libraries as plain paths (a .pth
    line is added to sys.path; the .pth files of that folder, the editable finder's among
    them, are not run), and wheelpin's modules compiled to bytecode, as pip compiles a
    package it installs: no start compiles one (where PYTHONDONTWRITEBYTECODE is set, every
    start would compile each module changed since its bytecode was last written, some 70 ms
    here)."""
    try:
        version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        version = ""
    ours = f"{sys.version_info.major}.{sys.version_info.minor}"
    if version != ours:
        sys.exit(
            f"{python} is Python {version or '(not runnable)'}, not {ours}: "
            "the installed venv uses this interpreter's libraries, built for its version"
        )
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "bot")], check=True)
    venv = scratch / "installed"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    libraries = [path for path in sys.path if path.endswith("site-packages")]
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "libraries.pth").write_text("\n".join(libraries) + "\n")
    return str(venv / "bin" / "python")


def interleaved(commands: dict[str, list[str]], cwd: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """The median wall time of each command, the commands run in turn `runs` times over."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            started = time.perf_counter()
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
            times[name].append(time.perf_counter() - started)
            assert done.returncode == 0, (command, done.stderr.decode()[-500:])
    return {name: statistics.median(values) for name, values in times.items()}


def import_costs(command: list[str], cwd: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """Seconds of module-level work per package (`-X importtime`'s self column), the least
    of `runs` runs each: what importing that package costs this command."""
    least: dict[str, float] = {}
    for _ in range(runs):
        done = subprocess.run(
            [command[0], "-X", "importtime", *command[1:]], cwd=cwd, env=env, capture_output=True, text=True
        )
        costs: dict[str, float] = {}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, _total, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
            parts = name.split(".")
            package = ".".join(parts[:2]) if parts[0] == "bot" else parts[0]
            costs[package] = costs.get(package, 0.0) + int(own) / 1e6
        for package, seconds in costs.items():
            least[package] = min(seconds, least.get(package, seconds))
    return least


def print_import_costs(cases: dict[str, list[str]], cwd: Path, env: dict[str, str], runs: int) -> None:
    for label, command in cases.items():
        costs = import_costs(command, cwd, env, runs)
        print(f"{label}: {sum(costs.values()) * 1000:.1f} ms of imports", flush=True)
        for package, seconds in sorted(costs.items(), key=lambda item: -item[1])[:15]:
            print(f"  {seconds * 1000:7.1f} ms  {package}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--imports", action="store_true", help="where start-up goes, by package (-X importtime)")
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
        if args.imports:
            print_import_costs(
                {
                    "wheelpin --help": [installed, "-m", "bot", "--help"],
                    "wheelpin config validate": [installed, "-m", "bot", "config", "validate"],
                    "wheelpin reconcile --once --dry-run --platform local (no-op)": [installed, *DRY_RUN],
                },
                downstream,
                env,
                min(args.runs, 7),
            )
            return
        cases = [
            ("python -c pass", ["-c", "pass"], None, None),
            ("wheelpin --help", ["-m", "bot", "--help"], 0.150, None),
            ("wheelpin config validate", ["-m", "bot", "config", "validate"], 0.150, _VALIDATE_FLOOR),
            (
                "wheelpin reconcile --once --dry-run (1 component, no-op)",
                ["-m", "bot", "reconcile", "--once", "--dry-run"],
                0.250,
                _PASS_FLOOR,
            ),
        ]
        commands: dict[str, list[str]] = {}
        for label, command, _target, floor in cases:
            commands[label] = [installed, *command]
            commands[f"dev {label}"] = [sys.executable, *command]
            if floor is not None:
                commands[f"floor {label}"] = [installed, "-c", floor]
        medians = interleaved(commands, downstream, env, args.runs)
        print(f"{'':58s} {'installed':>10s} {'dev venv':>10s} {'its libraries':>14s}")
        for label, _command, target, floor in cases:
            seconds = medians[label]
            goal = f"(target {target * 1000:.0f} ms: {'met' if seconds <= target else 'NOT met'})" if target else ""
            libraries = f"{medians[f'floor {label}'] * 1000:8.1f} ms" if floor is not None else f"{'':11s}"
            print(
                f"{label:58s} {seconds * 1000:7.1f} ms {medians[f'dev {label}'] * 1000:7.1f} ms   {libraries} {goal}",
                flush=True,
            )


if __name__ == "__main__":
    main()

"""Benchmark: "is there an update?" side by side with Renovate 39, on one machine, in one run.

Both look at the same downstream repository (the demo's, `wheelpin demo`, its image moved to
a loopback `docker-registry`) and the same registry:

- wheelpin: `wheelpin reconcile --once --dry-run --platform local`, which reads the upstream
  (git ls-remote), the pinned image and the registry's tags, and says what a pass would do.
- Renovate: `renovate --platform=local --dry-run=lookup`, whose dockerfile manager reads the
  same ARG pin (its `FROM ${ARG}`) and looks up the registry's tags and the pinned digest
  (https://docs.renovatebot.com/modules/platform/local/, "--dry-run=lookup"). A
  `renovate.json` in the repository points it at the plain-HTTP registry (`registryUrls`)
  and orders wheelpin's tags (`{version_base}-g{sha8}`) by a regex versioning
  (https://docs.renovatebot.com/modules/versioning/regex/).

Two cases: no-op (the pin is current) and found-update (a new upstream commit, its version
one patch up, whose image is published already: both tools find it). Each case runs pairs
A B A B (wheelpin, then Renovate), prints both times and their ratio pair by pair, and the
median ratio of the pairs. This machine's speed drifts, so the pairs are compared within
the run. Next to them, wheelpin's floor: a script that only loads the libraries such a pass
cannot do without (pydantic, validating the config; tomli; packaging; requests, since
both ask the registry: the no-op whether it still holds the pinned digest) and lists the upstream
with git, and the ratio Renovate's time would have to that floor: what is left above it is
wheelpin's own. Renovate's caches are emptied before each of its runs (`forget`). wheelpin runs as
users have it installed (bench/startup.py's venv without the editable install's hook, which a
development venv runs at every start).

Renovate is installed from npm into a cache folder when asked:

    python bench/renovate_ratio.py --install          # once: npm install renovate@39
    python bench/renovate_ratio.py [--pairs 5] [--python /usr/bin/python3.11]

Needs node and npm, docker-registry, skopeo and git on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))

from startup import DRY_RUN, installed_python  # noqa: E402

from tests.fixtures.servers import Registry  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wheelpin-bench" / "renovate-39"
# wheelpin's tags, {version_base}-g{sha8}, as Renovate's regex versioning reads them
TAG_VERSIONING = r"regex:^(?<major>\d+)\.(?<minor>\d+)\.(?<patch>\d+)-g[0-9a-f]{8}$"


def install(folder: Path) -> None:
    """Renovate 39 from the npm registry, without its packages' install scripts: re2's
    would fetch a prebuilt binary from GitHub's releases or else compile RE2 for many
    minutes; without it Renovate says "RE2 not usable, falling back to RegExp" and works
    the same (its regexes are the config's and a few managers')."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
            "--prefix",
            str(folder),
            "renovate@39",
        ],
        check=True,
    )


def renovate_command(folder: Path) -> Path:
    found = folder / "node_modules" / ".bin" / "renovate"
    if not found.exists():
        sys.exit(f"Renovate 39 is not installed in {folder}: run `python bench/renovate_ratio.py --install`")
    return found


def wheelpin(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "bot", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"wheelpin {' '.join(args)} failed ({done.returncode}): {done.stderr[-800:]}")
    return done.stdout


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def set_up(work: Path, registry: Registry, env: dict[str, str]) -> Path:
    """The demo's downstream repository, its image on the loopback registry and pinned there
    by digest (a pass of wheelpin published and proposed it, and the proposal was merged)."""
    wheelpin("demo", "--workdir", str(work / "demo"), cwd=work, env=env)
    downstream = work / "demo" / "downstream"
    dockerfile = downstream / "docker" / "Dockerfile"
    # the demo's pinned image, copied from its OCI layout folder to the registry as it is
    pinned = re.search(r'ARG DEMO_WHEEL_IMAGE="[^:"]+:([^@"]+)@(sha256:[0-9a-f]{64})"', dockerfile.read_text())
    assert pinned is not None, "the demo's Dockerfile pins no image"
    tag, digest = pinned.groups()
    moved = re.sub(r"^demo-cache-v(.*)$", r"\1", tag)  # {component}-v{version_base}-g{sha8} → {version_base}-g{sha8}
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--quiet",
            "--preserve-digests",
            "--dest-tls-verify=false",
            f"oci:{work / 'demo' / 'images'}:{tag}",
            f"docker://{registry.host}/demo-cache:{moved}",
        ],
        check=True,
    )
    dockerfile.write_text(
        dockerfile.read_text().replace(
            pinned.group(0), f'ARG DEMO_WHEEL_IMAGE="{registry.host}/demo-cache:{moved}@{digest}"'
        )
    )
    config = downstream / "wheelpin.toml"
    config.write_text(
        re.sub(
            r"(?m)^image = .*$",
            f'image = {{ repository = "{registry.host}/demo-cache", tag = "{{version_base}}-g{{sha8}}" }}',
            config.read_text(),
        )
    )
    (downstream / "renovate.json").write_text(
        json.dumps(
            {
                "enabledManagers": ["dockerfile"],
                "packageRules": [
                    {
                        "matchDatasources": ["docker"],
                        "registryUrls": [f"http://{registry.host}"],
                        "versioning": TAG_VERSIONING,
                    }
                ],
            },
            indent=2,
        )
        + "\n"
    )
    git("add", "-A", cwd=downstream)
    git(
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.org",
        "commit",
        "-q",
        "-m",
        "The image on the loopback registry; Renovate's config",
        cwd=downstream,
    )
    wheelpin("reconcile", "--once", cwd=downstream, env=env)  # builds, publishes, proposes the head
    branch = "wheelpin/demo-cache"
    git(
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.org",
        "merge",
        "-q",
        "--no-edit",
        branch,
        cwd=downstream,
    )
    git("branch", "-q", "-D", branch, cwd=downstream)
    return downstream


def new_release(work: Path, downstream: Path, env: dict[str, str]) -> str:
    """A new upstream commit (its version's patch one up), its image published by a pass of wheelpin in a
    clone of the downstream repository (whose proposal is thrown away): the downstream's pin
    is now behind a head whose image is there, which both tools find."""
    upstream = work / "demo" / "upstream"
    major, minor, patch = (upstream / "VERSION").read_text().strip().split(".")
    version = f"{major}.{minor}.{int(patch) + 1}"
    (upstream / "VERSION").write_text(version + "\n")
    git(
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.org",
        "commit",
        "-q",
        "-am",
        f"Release {version}",
        cwd=upstream,
    )
    head = git("rev-parse", "HEAD", cwd=upstream).strip()
    publisher = work / "demo" / "publisher"
    git("clone", "-q", str(downstream), str(publisher), cwd=work)
    wheelpin("reconcile", "--once", cwd=publisher, env=env)
    shutil.rmtree(publisher)
    return head


def renovate_env(work: Path, registry: Registry) -> dict[str, str]:
    (work / "renovate-global.json").write_text("{}\n")
    return {
        **os.environ,
        "RENOVATE_CONFIG_FILE": str(work / "renovate-global.json"),
        "RENOVATE_BASE_DIR": str(work / "renovate-base"),
        "RENOVATE_CACHE_DIR": str(work / "renovate-cache"),
        "LOG_LEVEL": "info",
        "NO_PROXY": ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"])),
    }


def forget(env: dict[str, str]) -> None:
    """Renovate's package and HTTP caches emptied: it keeps a registry's tag list for a while
    (a second run within minutes asks nothing and misses a new tag), and "is there an
    update?" is asked of the registry. wheelpin's cache holds content by digest alone."""
    shutil.rmtree(env["RENOVATE_CACHE_DIR"], ignore_errors=True)


def renovate_found(renovate: Path, downstream: Path, env: dict[str, str]) -> list[str]:
    """The new versions Renovate's lookup found (its debug log, as JSON lines)."""
    forget(env)
    done = subprocess.run(
        [str(renovate), "--platform=local", "--dry-run=lookup"],
        cwd=downstream,
        env={**env, "LOG_LEVEL": "debug", "LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"renovate failed ({done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}")
    return sorted(set(re.findall(r'"newVersion":"([^"]+)"', done.stdout)))


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed ({done.returncode}): {done.stderr.decode()[-800:]}")
    return seconds


def floor(python: str, upstream: Path) -> list[str]:
    """The floor of one pass: its libraries loaded and used once, the upstream listed."""
    script = f"""import gc; gc.disable()
import os; os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"  # as wheelpin's own process (cli.main)
import subprocess, tomli, packaging.version
from pydantic import BaseModel
class Upstream(BaseModel):
    repo: str
    branch: str
Upstream.model_validate(tomli.loads('repo = "{upstream}"\\nbranch = "main"'))
packaging.version.Version("0.1.2+g8ce0d451")
import requests
subprocess.run(["git", "ls-remote", "--heads", "{upstream}"], check=True, capture_output=True)
"""
    return [python, "-c", script]


def pairs(
    label: str,
    ours: list[str],
    base: list[str],
    theirs: list[str],
    cwd: Path,
    env: dict[str, str],
    their_env: dict[str, str],
    count: int,
) -> tuple[float, float]:
    """`count` pairs, A (wheelpin, then its floor) then B (Renovate); prints each pair and
    returns the median ratio and the median ratio at the floor: the most a pass that loads
    these libraries could reach, whatever wheelpin's own code did."""
    print(
        f"\n{label}\n  {'pair':>4s} {'wheelpin':>10s} {'floor':>9s} {'Renovate':>10s} {'ratio':>7s} {'at floor':>9s}",
        flush=True,
    )
    ratios = []
    at_floor = []
    for number in range(1, count + 1):
        a = timed(ours, cwd, env)
        least = timed(base, cwd, env)
        forget(their_env)
        b = timed(theirs, cwd, their_env)
        ratios.append(b / a)
        at_floor.append(b / least)
        times = f"{a * 1000:8.0f} ms {least * 1000:6.0f} ms {b * 1000:8.0f} ms"
        print(f"  {number:4d} {times} {b / a:6.1f}× {b / least:8.1f}×", flush=True)
    median = statistics.median(ratios)
    ceiling = statistics.median(at_floor)
    print(
        f"  median of {count} pairs: Renovate takes {median:.1f}× wheelpin's time ({ceiling:.1f}× the floor's)",
        flush=True,
    )
    return median, ceiling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help=f"npm install renovate@39 into {CACHE} first")
    parser.add_argument("--renovate", type=Path, default=CACHE, metavar="DIR", help="where Renovate is installed")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--python",
        default=sys.executable,
        metavar="PATH",
        help="the interpreter wheelpin runs on (default: this one; e.g. /usr/bin/python3.11, the distribution's "
        "own build of the same version)",
    )
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("--pairs: at least 1")
    if args.install:
        install(args.renovate)
    renovate = renovate_command(args.renovate)
    with tempfile.TemporaryDirectory(prefix="wheelpin-renovate-") as scratch:
        work = Path(scratch)
        registry = Registry(work / "registry")
        try:
            env = {**os.environ, "WHEELPIN_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
            downstream = set_up(work, registry, env)
            their_env = renovate_env(work, registry)
            ours = [installed_python(work, args.python), *DRY_RUN]
            theirs = [str(renovate), "--platform=local", "--dry-run=lookup"]
            said = wheelpin(*ours[3:], cwd=downstream, env=env)
            found = renovate_found(renovate, downstream, their_env)
            print(f"no-op: wheelpin says {said.splitlines()[0]!r}; Renovate finds {found or 'no update'}")
            upstream = work / "demo" / "upstream"
            base = floor(ours[0], upstream)
            no_op = pairs("no-op (the pin is current)", ours, base, theirs, downstream, env, their_env, args.pairs)
            head = new_release(work, downstream, env)
            said = wheelpin(*ours[3:], cwd=downstream, env=env)
            found = renovate_found(renovate, downstream, their_env)
            print(
                f"\nfound-update (upstream {head[:8]}): wheelpin says {said.splitlines()[0]!r}; "
                f"Renovate finds {found or 'no update'}"
            )
            update = pairs(
                "found-update (a new head, its image published)",
                ours,
                base,
                theirs,
                downstream,
                env,
                their_env,
                args.pairs,
            )
            print(
                f"\nmedian ratios: no-op {no_op[0]:.1f}×, found-update {update[0]:.1f}× (the goal: 10× or more); "
                f"at the floor, no-op {no_op[1]:.1f}×, found-update {update[1]:.1f}×"
            )
        finally:
            registry.stop()


if __name__ == "__main__":
    main()

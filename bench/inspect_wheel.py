"""Benchmark: `wheelpin wheel inspect` on the real cupy-rocm-7-0 wheel, beside the
pipeline a person runs by hand (unzip, then llvm-objcopy + clang-offload-bundler --list
on every `*.so*`; the pipeline checks no RECORD hash and reads only the first bundle of a
section, so it does less than wheelpin does).

Run from the project root:  python bench/inspect_wheel.py [--runs N] [--wheel PATH]
It downloads the wheel once (into $WHEELPIN_TEST_CACHE) unless --wheel is given, and
prints wall time, throughput (MB/s of wheel and of uncompressed ELF data) and peak RSS
of each side, and their ratio. Each side runs in its own child process.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures import hip, pypi  # noqa: E402


def elf_bytes(wheel: Path) -> tuple[int, int]:
    """(number of ELF members, their uncompressed bytes)."""
    count = size = 0
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                if member.read(4) == b"\x7fELF":
                    count += 1
                    size += info.file_size
    return count, size


def timed(command: list[str], **kwargs: object) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start


def run_wheelpin(wheel: Path) -> float:
    return timed([sys.executable, "-m", "bot.cli", "wheel", "inspect", "--json", str(wheel)], cwd=ROOT)


PIPELINE = """
set -e
cd "$WORK"
unzip -q -o "$WHEEL" -d x
find x -type f -name '*.so*' | while read -r f; do
  if "$LLVM/llvm-objcopy" --dump-section=.hip_fatbin="$f.fb" "$f" /dev/null 2>/dev/null; then
    "$LLVM/clang-offload-bundler" --list --type=o --input="$f.fb" >/dev/null || true
  fi
done
"""


def run_pipeline(wheel: Path) -> float:
    work = tempfile.mkdtemp(prefix="wheelpin-bench-")
    try:
        env = {**os.environ, "WORK": work, "WHEEL": str(wheel), "LLVM": str(hip.llvm_bin())}
        return timed(["bash", "-c", PIPELINE], env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_unzip_test(wheel: Path) -> float:
    """`unzip -t`: every member inflated and its CRC checked, nothing more (the yardstick a
    wheel inspection is held to)."""
    return timed(["unzip", "-tq", str(wheel)])


def peak_rss_mb(function, wheel: Path) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Run in a fresh child so that RUSAGE_CHILDREN's max RSS is this side's alone."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        seconds = function(wheel)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        os.write(write, f"{seconds} {peak}".encode())
        os._exit(0)
    os.close(write)
    data = os.read(read, 100).decode().split()
    os.waitpid(pid, 0)
    return float(data[0]), float(data[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wheel", type=Path)
    args = parser.parse_args()
    wheel = args.wheel or pypi.fetch(pypi.CUPY)
    wheel_mb = wheel.stat().st_size / 1e6
    elf_count, elf_size = elf_bytes(wheel)
    print(
        f"wheel {wheel.name}: {wheel_mb:.1f} MB, {elf_count} ELF members, "
        f"{elf_size / 1e6:.1f} MB of uncompressed ELF data"
    )
    results = {}
    for name, function in (
        ("wheelpin wheel inspect", run_wheelpin),
        ("unzip -t", run_unzip_test),
        ("unzip+objcopy+bundler", run_pipeline),
    ):
        runs = [peak_rss_mb(function, wheel) for _ in range(args.runs)]
        seconds = statistics.median(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        results[name] = seconds
        print(
            f"{name:24s} median {seconds:6.2f} s over {args.runs} runs | "
            f"{wheel_mb / seconds:7.1f} MB/s of wheel | {elf_size / 1e6 / seconds:7.1f} MB/s of ELF"
            f" | peak RSS {peak:6.1f} MB"
        )
    ratio = results["unzip+objcopy+bundler"] / results["wheelpin wheel inspect"]
    print(f"ratio: wheelpin is {ratio:.2f}x the speed of the pipeline")
    print(
        f"ratio: wheelpin takes {results['wheelpin wheel inspect'] / results['unzip -t']:.2f}x the time of "
        f"unzip -t (which checks CRCs only: no sha256, no ELF, no device code); "
        f"{len(os.sched_getaffinity(0))} CPUs"
    )


if __name__ == "__main__":
    main()

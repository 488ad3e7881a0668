"""Benchmark: `wheelpin wheel inspect` on hostile wheels, at the sizes they were reported
at. The service inspects adopted images in its single worker under a
2 GiB limit, so each case must end in under 20 s with a peak RSS under 300 MB, refused in
one sentence. Before their bounds, the cases as reported cost: the 255 MiB RECORD in a
1.1 MB wheel a 1.6 GB peak RSS, the plain bundle of 2M entries 600 MB, the 5 KB wheel of
zstd RLE blocks minutes of CPU, and the 2,000 members of 4 MiB 31 s.

Run from the project root:  python bench/hostile_inputs.py [--scale 1.0] [--only NAME]
Each case is built small on disk (tests/fixtures/hostile.py) by one child process and
inspected by another (so that the builder's memory is not counted); prints its exit code,
wall time, peak RSS (from wait4) and the first line it said.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures import hostile  # noqa: E402

SECONDS, RSS = 20.0, 300 << 20


def cases(scale: float) -> dict[str, Callable[[Path], Path]]:
    def n(value: float) -> int:
        return max(1, int(value * scale))

    return {
        "record-255MiB": lambda folder: hostile.huge_record_wheel(folder, n(255 << 20)),
        "plain-bundle-2M-entries": lambda folder: hostile.many_entries_wheel(folder, n(2_000_000)),
        "zstd-rle-declaring-2^63": lambda folder: hostile.rle_bomb_wheel(folder),
        "zstd-rle-declaring-4GiB-v2": lambda folder: hostile.rle_bomb_wheel(folder, version=2, declared=(1 << 32) - 1),
        "2000-members-of-4MiB": lambda folder: hostile.zeros_members_wheel(
            folder, members=n(2000), member_bytes=4 << 20
        ),
        "200k-empty-members": lambda folder: hostile.many_members_wheel(folder, n(200_000)),
        "nul-in-a-member-name": lambda folder: hostile.nul_name_wheel(folder, b"demo/a\0.py"),
        "metadata-not-utf8": lambda folder: hostile.write_zip(
            folder / hostile.WHEEL, hostile.dist_info(metadata=hostile.METADATA + b"Requires-Dist: caf\xe9\n")
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="size of each case (1.0: as reported)")
    parser.add_argument("--only", help="run only the case of this name")
    parser.add_argument("--build-into", type=Path, help=argparse.SUPPRESS)  # the builder child
    args = parser.parse_args()
    if args.build_into:
        print(cases(args.scale)[args.only](args.build_into))
        return 0
    worst = 0
    print(f"{'case':30} {'build s':>8} {'file MB':>8} {'exit':>4} {'s':>6} {'peak RSS MB':>11}  said")
    for name in cases(args.scale):
        if args.only and name != args.only:
            continue
        with tempfile.TemporaryDirectory(prefix="wheelpin-hostile-") as folder:
            started = time.perf_counter()
            wheel = Path(
                subprocess.run(
                    [sys.executable, __file__, "--scale", str(args.scale), "--only", name, "--build-into", folder],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
            )
            built = time.perf_counter() - started
            measured = hostile.inspect_measured(wheel, timeout=120)
            said = (measured.stderr.strip().splitlines() or [""])[-1][:110]
            over = measured.seconds > SECONDS or measured.peak_rss > RSS or measured.code == 0
            worst |= over
            print(
                f"{name:30} {built:8.1f} {wheel.stat().st_size / 1e6:8.2f} {measured.code:4} "
                f"{measured.seconds:6.2f} {measured.peak_rss / (1 << 20):11.0f}  "
                f"{'OVER ' if over else ''}{said}",
                flush=True,
            )
    print(f"bound: each under {SECONDS:g} s and {RSS >> 20} MB peak RSS, and refused (non-zero exit)")
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())

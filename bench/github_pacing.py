"""Benchmark: how GitHubHTTP's write pacing spreads content-creating requests, on a
simulated clock (no request is made, nothing really sleeps).

Run from the project root:  python bench/github_pacing.py [--writes 2000] [--per-minute 70] [--per-hour 500] [--gap 1]
Prints how long N back-to-back writes take, the most sent in any 60 s and any 3600 s
(GitHub's documented secondary limits are 80 and 500), the shortest time between two
(GitHub's REST best practices ask one second at least), and how many send times are held.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.github.transport import WRITE_GAP, WritePacer  # noqa: E402


def most_in(times: list[float], span: float) -> int:
    return max(bisect.bisect_left(times, start + span) - index for index, start in enumerate(times))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--per-minute", type=int, default=70)
    parser.add_argument("--per-hour", type=int, default=500)
    parser.add_argument("--gap", type=float, default=WRITE_GAP)
    args = parser.parse_args()
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    pacer = WritePacer(args.per_minute, args.per_hour, gap=args.gap, sleep=sleep, monotonic=lambda: clock[0])
    times, held = [], 0
    for _ in range(args.writes):
        pacer.wait()
        times.append(clock[0])
        held = max(held, len(pacer))
    gap = min(later - earlier for earlier, later in zip(times, times[1:], strict=False))
    print(
        f"{args.writes} writes: {times[-1] / 3600:.2f} h simulated; most in any minute {most_in(times, 60)}, "
        f"in any hour {most_in(times, 3600)}; shortest gap {gap:.2f} s; "
        f"send times held at most {held}"
    )


if __name__ == "__main__":
    main()

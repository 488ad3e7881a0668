"""Long transfers said as they go (bot/adapters/progress.py, issue 18): a bar on a terminal,
periodic structured events otherwise, nothing for short work; and the registry's uploads and
downloads said so, through a real registry."""

from __future__ import annotations

import io
import json
from pathlib import Path

from bot.adapters.progress import Progress
from tests.cli import wheelpin
from tests.fixtures.servers import Registry


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_bar_is_redrawn_at_most_ten_times_a_second_and_ends_its_line() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("upload ghcr.io/o/lmcache-wheel", 100_000_000, clock=clock, stream=stream, mode="bar")
    for _ in range(100):  # a chunk each 10 ms
        clock.now += 0.01
        progress.advance(1_000_000)
    progress.close()
    drawn = stream.getvalue().split("\r")[1:]
    assert 9 <= len(drawn) <= 11, len(drawn)
    assert drawn[-1].endswith("\n") and "100.0%" in drawn[-1] and "100.0 MB/100.0 MB" in drawn[-1]
    assert "[" + "#" * 30 + "]" in drawn[-1]


def test_short_work_says_nothing(capsys: object) -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("download", 10, clock=clock, stream=stream, mode="bar")
    progress.advance(10)
    progress.close()
    assert stream.getvalue() == ""


def test_uploads_and_downloads_are_logged_as_they_go(registry: Registry, env: dict[str, str],
                                                      rocm_wheel: Path) -> None:
    """WHEELPIN_PROGRESS_SECONDS=0: every chunk is past the interval, so the events show in a
    short test; a real one says a long transfer every 10 s."""
    env = {**env, "WHEELPIN_PROGRESS_SECONDS": "0", "WHEELPIN_LOG_FORMAT": "json", "WHEELPIN_LOG_LEVEL": "info"}
    to = f"{registry.host}/progress/lmcache:v1"
    published = wheelpin("image", "publish", str(rocm_wheel), "--to", to, "--json", env=env)
    assert published.code == 0, published.stderr
    events = [json.loads(line) for line in published.stderr.splitlines() if line.startswith("{")]
    uploads = [e for e in events if e["event"].startswith("progress") and e["what"].startswith("upload")]
    assert uploads and uploads[-1]["event"] == "progress.done"
    assert uploads[-1]["done_bytes"] == uploads[-1]["total_bytes"] > 0 and uploads[-1]["percent"] == 100.0
    assert all(e["done_bytes"] <= e["total_bytes"] for e in uploads)

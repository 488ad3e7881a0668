"""Long transfers said as they go (bot/adapters/progress.py): a bar on a terminal,
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


def test_uploads_and_downloads_are_logged_as_they_go(registry: Registry, env: dict[str, str], rocm_wheel: Path) -> None:
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


def test_a_local_build_is_said_as_it_runs_with_its_log_and_last_line(tmp_path: Path) -> None:
    """A build command that runs a while (here three steps 0.3 s apart) is said every tick:
    its time, its log's growth and its last line; `waited` returns the command's exit code."""
    import subprocess

    from structlog.testing import capture_logs

    from bot.adapters import progress

    log = tmp_path / "build.log"
    progress.configure(bar=False, interval=0.0)
    try:
        with log.open("wb") as stream, capture_logs() as events:
            process = subprocess.Popen(
                ["sh", "-c", "for i in 1 2 3; do echo step $i; sleep 0.3; done; exit 3"],
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
            code = progress.waited(process, "build lmcache 1a2b3c4d", log, 60)
    finally:
        progress.configure(bar=False, interval=10.0)
    assert code == 3
    said = [e for e in events if e["event"] == "progress"]
    assert len(said) >= 3 and said[-1]["what"] == "build lmcache 1a2b3c4d"
    assert [e["last_line"] for e in said][-1] == "step 3" and {"step 1", "step 2"} & {e["last_line"] for e in said}
    assert said[-1]["done_bytes"] == log.stat().st_size and said[-1]["elapsed_seconds"] >= 0.6
    assert events[-1]["event"] == "progress.done"


def test_a_build_past_its_time_is_still_stopped_by_the_deadline(tmp_path: Path) -> None:
    import subprocess

    import pytest

    from bot.adapters.progress import waited

    log = tmp_path / "build.log"
    with log.open("wb") as stream:
        process = subprocess.Popen(["sleep", "30"], stdout=stream)
        with pytest.raises(subprocess.TimeoutExpired):
            waited(process, "build slow", log, 0.3)
        process.kill()
        process.wait()


def test_a_build_logs_last_line_is_bounded_and_printable(tmp_path: Path) -> None:
    """Upstream's build writes what it likes: colours, carriage-return progress bars, bytes
    that are not UTF-8, a line of megabytes. What is said is its last line's printable text,
    read from the log's last 4 KiB, at most 120 characters."""
    from bot.adapters.progress import LOG_TAIL, NOTE_LIMIT, last_line

    log = tmp_path / "build.log"
    log.write_bytes(b"x" * 5_000_000 + b"\n\x1b[31mcompiling\x1b[0m foo.hip\r 40%\r\x1b]0;title\x07 80% \xff\xfe\n\n")
    assert last_line(log) == "80% \ufffd\ufffd"
    log.write_bytes(b"\x1b[1;32mBuilding wheel\x1b[0m for lmcache \x00\x07done\n")
    assert last_line(log) == "Building wheel for lmcache   done"
    log.write_bytes(b"y" * (3 * LOG_TAIL))
    assert last_line(log) == "y" * NOTE_LIMIT
    assert last_line(tmp_path / "missing.log") == ""


def test_a_builds_bar_shows_its_time_log_size_and_last_line() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress("build lmcache 1a2b3c4d", None, clock=clock, stream=stream, mode="bar")
    clock.now = 135.0
    progress.advance(3_400_000, note="[812/2048] Building HIP object csrc/kernels.hip.o")
    progress.close()
    drawn = stream.getvalue().split("\r")[-1]
    assert drawn.startswith("build lmcache 1a2b3c4d") and "  2m15s " in drawn and "3.4 MB" in drawn
    assert "[812/2048] Building HIP object" in drawn and drawn.endswith("\n")

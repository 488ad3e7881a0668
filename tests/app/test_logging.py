"""The log stream (bot/app/logsetup.py): the libraries' standard-library records are
rendered as wheelpin's own, so a JSON stream is all JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stderr_of(code: str, level: str = "info") -> list[str]:
    script = (
        f"from bot.app.logsetup import configure_logging\nconfigure_logging(level={level!r}, fmt='json')\n"
        "import logging, structlog\n" + code
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stderr.splitlines() if line]


def test_library_records_are_json_lines_like_wheelpin_s() -> None:
    lines = stderr_of(
        "structlog.get_logger('wheelpin').info('ours', token='s3cret')\n"
        "logging.getLogger('waitress').warning('Task queue depth is %d', 5)\n"
        "logging.getLogger('urllib3.connectionpool').info('Resetting dropped connection: %s', 'x')\n"
        "logging.getLogger('urllib3').debug('not shown at info')\n"
        "logging.getLogger('procrastinate.worker').info('Starting job t[1]()')\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    logging.getLogger('apscheduler').exception('job failed')\n"
    )
    records = [json.loads(line) for line in lines]  # every line JSON
    assert [r["event"] for r in records] == [
        "ours",
        "Task queue depth is 5",
        "Resetting dropped connection: x",
        "job failed",
    ]
    assert records[0]["token"] == "[redacted]"
    assert records[1]["logger"] == "waitress" and records[1]["level"] == "warning" and "timestamp" in records[1]
    assert "ZeroDivisionError" in records[3]["exception"]


def test_procrastinate_s_per_job_lines_show_when_debugging() -> None:
    lines = stderr_of("logging.getLogger('procrastinate.worker').info('Starting job t[1]()')", level="debug")
    assert [json.loads(line)["event"] for line in lines] == ["Starting job t[1]()"]


def test_lines_from_many_threads_never_run_into_one_another() -> None:
    """wheelpin's events and the libraries' records leave through one handler: with both
    written by many threads at once, each line is still one JSON document (two writers ran
    lines together under load, in the multi-replica tests)."""
    lines = stderr_of(
        "import threading\n"
        "def spam(n):\n"
        "    for i in range(400):\n"
        "        structlog.get_logger('wheelpin').info('ours', n=n, i=i, text='x' * 200)\n"
        "        logging.getLogger('waitress').warning('theirs %d %d %s', n, i, 'y' * 200)\n"
        "threads = [threading.Thread(target=spam, args=(n,)) for n in range(8)]\n"
        "[t.start() for t in threads]\n[t.join() for t in threads]\n"
    )
    records = [json.loads(line) for line in lines]
    assert len(records) == 8 * 400 * 2

"""The log stream (bot/adapters/logs.py): the libraries' standard-library records are
rendered as wheelpin's own, so a JSON stream is all JSON; structlog loads only for a line
that is written; a block's context is on its lines and gone after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stderr_of(code: str, level: str = "info") -> list[str]:
    script = (
        f"from bot.adapters import logs\nlogs.configure_logging(level={level!r}, fmt='json')\nimport logging\n" + code
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stderr.splitlines() if line]


def test_library_records_are_json_lines_like_wheelpin_s() -> None:
    lines = stderr_of(
        "logs.get_logger('wheelpin').info('ours', token='s3cret')\n"
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
        "        logs.get_logger('wheelpin').info('ours', n=n, i=i, text='x' * 200)\n"
        "        logging.getLogger('waitress').warning('theirs %d %d %s', n, i, 'y' * 200)\n"
        "threads = [threading.Thread(target=spam, args=(n,)) for n in range(8)]\n"
        "[t.start() for t in threads]\n[t.join() for t in threads]\n"
    )
    records = [json.loads(line) for line in lines]
    assert len(records) == 8 * 400 * 2


def test_structlog_loads_only_for_a_line_that_is_written() -> None:
    """At the default level a pass's info and debug lines are not written, and structlog
    (with asyncio, and rich where installed) is not imported for them."""
    lines = stderr_of(
        "import sys\n"
        "log = logs.get_logger('wheelpin.x')\n"
        "log.info('quiet', n=1)\nlog.bind(a=1).debug('quieter')\n"
        "with logs.bound(component='c'):\n    logs.bind(commit='abc')\n    log.info('still quiet')\n"
        "print('structlog' in sys.modules, file=sys.stderr)\n"
        "log.warning('loud', n=2)\n"
        "print('structlog' in sys.modules, file=sys.stderr)\n",
        level="warning",
    )
    assert lines[0] == "False" and lines[2] == "True", lines
    record = json.loads(lines[1])
    assert record["event"] == "loud" and record["n"] == 2 and record["level"] == "warning"


def test_a_block_s_context_is_on_its_lines_and_gone_after_it() -> None:
    lines = stderr_of(
        "log = logs.get_logger('wheelpin.x')\n"
        "with logs.bound(component='c', token='t0ken'):\n"
        "    logs.bind(commit='abc')\n"
        "    log.bind(step=1).info('inside', commit='def')\n"
        "    with logs.bound(component='d'):\n        log.info('nested')\n"
        "    log.info('back')\n"
        "log.info('after')\n"
    )
    records = {r["event"]: r for r in map(json.loads, lines)}
    # the call's own fields win over the bound logger's, which win over the block's
    assert records["inside"]["component"] == "c" and records["inside"]["commit"] == "def"
    assert records["inside"]["step"] == 1 and records["inside"]["token"] == "[redacted]"
    assert records["nested"]["component"] == "d" and records["nested"]["commit"] == "abc"
    assert records["back"]["component"] == "c" and records["back"]["commit"] == "abc"
    assert "component" not in records["after"] and "commit" not in records["after"]


def test_threads_writing_the_first_lines_at_once_all_go_out_configured() -> None:
    """The first lines of a service come from several threads at once: none may go out
    through structlog before it is configured (on stdout, unredacted)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import threading, time\n"
            "from bot.adapters import logs\n"
            "logs.configure_logging(level='info', fmt='json')\n"
            "import structlog\n"
            "real = structlog.configure\n"
            "def slow(**kw):\n    time.sleep(0.2)\n    real(**kw)\n"
            "structlog.configure = slow\n"
            "log = logs.get_logger('wheelpin.x')\n"
            "first = threading.Thread(target=lambda: log.info('first', token='s3cret'))\n"
            "first.start()\ntime.sleep(0.05)\n"
            "log.info('second', token='s3cret')\nfirst.join()\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines()]
    assert sorted(r["event"] for r in records) == ["first", "second"]
    assert {r["token"] for r in records} == {"[redacted]"}


def test_configured_again_once_structlog_is_loaded_the_new_level_holds() -> None:
    lines = stderr_of(
        "import structlog.testing\n"  # structlog loaded by something else before wheelpin's first line
        "logs.configure_logging(level='debug', fmt='json')\n"
        "logs.get_logger('wheelpin.x').debug('shown')\n",
        level="warning",
    )
    assert [json.loads(line)["event"] for line in lines] == ["shown"]

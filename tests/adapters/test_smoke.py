"""The smoke test of the exact wheels (adapters/smoke.py): a fresh venv per python tag
holding only the wheel, the command run there; a tag with no interpreter is said."""

from __future__ import annotations

import sys
from pathlib import Path

from bot.adapters.smoke import interpreter_for, smoke_test
from tests.fixtures.wheels import build_wheel

HERE = f"cp{sys.version_info.major}{sys.version_info.minor}"


def wheel(folder: Path, body: bytes = b"WHERE = __file__\n") -> Path:
    return build_wheel(
        folder, name="demo-cache", version="0.1.1", files={"demo_cache/__init__.py": body}, requires_dist=["numpy>=2.3"]
    )  # --no-deps: its requirements are not fetched


def test_the_exact_wheel_is_imported_from_a_fresh_venv(tmp_path: Path) -> None:
    built = wheel(tmp_path)
    probe = "python -c 'import demo_cache, sys; assert \"wheelpin-smoke-\" in demo_cache.WHERE, demo_cache.WHERE'"
    result = smoke_test(probe, {HERE: built, "py3": built})
    assert result.passed == sorted([HERE, "py3"]) and result.failed == [] and result.not_run == []


def test_a_failing_smoke_is_said_with_the_tail_of_its_output(tmp_path: Path) -> None:
    built = wheel(tmp_path, b"raise ImportError('libamdhip64.so.7: cannot open shared object file')\n")
    result = smoke_test("python -c 'import demo_cache'", {HERE: built})
    (failed,) = result.failed
    assert failed.startswith(f"{HERE}: `python -c 'import demo_cache'` failed (exit 1: ")
    assert "libamdhip64.so.7: cannot open shared object file" in failed


def test_a_tag_with_no_interpreter_is_said_not_passed(tmp_path: Path) -> None:
    assert interpreter_for("cp36") is None and interpreter_for(HERE) == sys.executable
    result = smoke_test("true", {"cp36": wheel(tmp_path)})
    assert result.passed == [] and result.not_run == ["cp36: no interpreter for it on this host, smoke test not run"]


def test_a_smoke_that_hangs_is_stopped(tmp_path: Path) -> None:
    result = smoke_test("sleep 30 & sleep 30", {HERE: wheel(tmp_path)}, seconds=2)
    assert result.failed == [f"{HERE}: `sleep 30 & sleep 30` failed (still running after 2 s, stopped)"]

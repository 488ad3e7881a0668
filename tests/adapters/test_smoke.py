"""The smoke test of the exact wheels (adapters/smoke.py): a fresh venv per python tag
holding only the wheel, the command run there; a tag with no interpreter is said."""

from __future__ import annotations

import sys
from pathlib import Path

from bot.adapters.smoke import interpreter_for, smoke_test, smoke_wheels
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


def test_each_variant_wheel_of_a_tag_is_smoked_in_a_venv_of_its_own(tmp_path: Path) -> None:
    """Variant wheels (PEP 825) of one python tag are several wheels, each smoked; pip reads
    none of their names (PEP 825's Backwards Compatibility: the label makes an installer of
    today see a build tag where the python tag is), so each is installed from a copy named
    without its label, its bytes as they are."""
    built = [
        build_wheel(
            tmp_path / label,
            name="demo-cache",
            version="0.1.1",
            files={"demo_cache/__init__.py": f"LABEL = {label!r}\n".encode()},
            tag=f"{HERE}-none-any",
            variant=(label, {"x86_64": {"level": [label.removeprefix("x8664")]}}),
        )
        for label in ("x8664v3", "x8664v4")
    ]
    probe = "python -c 'import demo_cache, importlib.metadata as m; print(demo_cache.LABEL); m.version(\"demo-cache\")'"
    result = smoke_wheels(probe, built)
    assert result.failed == [] and result.passed == [f"{HERE} (variant x8664v3)", f"{HERE} (variant x8664v4)"]
    failing = smoke_wheels("python -c 'import demo_cache; assert demo_cache.LABEL == \"x8664v3\"'", built)
    assert failing.passed == [f"{HERE} (variant x8664v3)"]
    (failed,) = failing.failed
    assert failed.startswith(f"{HERE} (variant x8664v4): ")
    assert built[0].exists() and built[0].name.endswith("-x8664v3.whl")  # the wheel itself is not renamed

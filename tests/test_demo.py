"""`wheelpin demo`'s ROCm part and its config: the upstream's wheel carries a HIP library
for gfx942 and gfx950 (written by wheelpin, no compiler), `wheel inspect` and a pass
verify it as they verify a real one, and the demo says where the config it wrote is, a
config the shipped example config/demo/ is a copy of."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot import SCHEMA_URL
from bot.commands.demo import BUILD_SCRIPT, DOCKERFILE, HIP_LIBRARY, config_text, make_upstream
from bot.core.wheel.hipstub import hip_library
from tests.cli import wheelpin

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ["--require-arch", "gfx942", "--require-arch", "gfx950"]


def demo_wheel(upstream: Path, out: Path) -> Path:
    """The upstream's wheel, built by its own script as the demo's pass builds it."""
    out.mkdir()
    subprocess.run(
        [sys.executable, "build_wheel.py", str(out)],
        cwd=upstream,
        check=True,
        capture_output=True,
        env={"WHEELPIN_SHA8": "05fc77a0", "PATH": "/usr/bin:/bin"},
    )
    (wheel,) = out.glob("*.whl")
    return wheel


def test_wheel_inspect_reads_the_demo_wheel_s_archs_and_it_passes_the_rocm_checks(tmp_path: Path) -> None:
    upstream, _ = make_upstream(tmp_path / "demo")
    assert (upstream / "build_wheel.py").read_text() == BUILD_SCRIPT
    wheel = demo_wheel(upstream, tmp_path / "dist")
    assert wheel.name == "demo_cache-0.1.0+g05fc77a0.rocm7.2.4-py3-none-linux_x86_64.whl"  # a platform wheel
    result = wheelpin("wheel", "inspect", str(wheel), *ARCHS, "--require-needed", "libamdhip64.so.*", "--json")
    assert result.code == 0, result.stdout + result.stderr
    report = result.json()
    assert report["archs"] == ["gfx942", "gfx950"] and report["problems"] == []
    (elf,) = report["elf"]
    assert elf == {**elf, "path": HIP_LIBRARY, "gpu": "hip", "needed": ["libamdhip64.so.7"], "soname": "_demo_hip.so"}
    missing = wheelpin("wheel", "inspect", str(wheel), "--require-arch", "gfx90a")
    assert missing.code == 1 and f"{HIP_LIBRARY} has no code for gfx90a (it carries gfx942, gfx950)" in missing.stdout


@pytest.mark.parametrize(
    ("needed", "problem"),
    [
        ("libamdhip64.so.6", "says rocm7.2.4, but its ELF files need libamdhip64.so.6 (ROCm 6)"),
        ("libcudart.so.12", f"{HIP_LIBRARY} needs libcudart.so.12, a CUDA library"),
    ],
)
def test_the_rocm_checks_refuse_the_demo_library_linked_otherwise(tmp_path: Path, needed: str, problem: str) -> None:
    """The same wheel with its library needing another ROCm's HIP runtime, or CUDA's: refused."""
    upstream, _ = make_upstream(tmp_path / "demo")
    (upstream / HIP_LIBRARY).write_bytes(
        hip_library(soname="_demo_hip.so", needed=[needed], targets=["gfx942", "gfx950"])
    )
    result = wheelpin("wheel", "inspect", str(demo_wheel(upstream, tmp_path / "dist")), *ARCHS)
    assert result.code == 1 and problem in result.stdout, result.stdout


def test_the_demo_shows_the_archs_and_says_where_its_config_is(tmp_path: Path) -> None:
    result = wheelpin("demo", "--workdir", str(tmp_path), env={"HOME": str(tmp_path / "home")})
    assert result.code == 0, result.stdout[-3000:] + result.stderr[-3000:]
    config = tmp_path / "downstream" / "wheelpin.toml"
    assert f"The config the demo wrote: {config}\n" in result.stdout
    assert f"  {config}   # the config the demo wrote\n" in result.stdout
    assert "(demo_cache/_demo_hip.so, code objects for gfx942 and gfx950, needing libamdhip64.so.7;" in result.stdout
    # the proposal as printed: its wheel table's GPU archs column, and the checks the wheel passed
    (row,) = [line for line in result.stdout.splitlines() if "-py3-none-linux_x86_64.whl` |" in line]
    cells = row.split(" | ")[1:]  # (the indent) | wheel | size | installed | sha256 | GPU archs | tags
    assert cells[4] == "gfx942, gfx950", row
    assert cells[1].endswith(")") and cells[2].endswith(")"), row  # each size old → new against the pinned wheel
    assert "    - ✅ HIP code for gfx942, gfx950 in every GPU library\n" in result.stdout
    assert "    - ✅ no CUDA library or CUDA device code\n    - ✅ needs libamdhip64.so.*\n" in result.stdout
    inspect = re.search(r"^  (wheelpin wheel inspect .*)$", result.stdout, flags=re.M)
    assert inspect is not None
    told = wheelpin(*inspect.group(1).split()[1:])
    assert told.code == 0 and "archs     gfx942 gfx950" in told.stdout and "problems  none" in told.stdout


def test_the_demo_s_json_names_its_config_and_its_proposal_the_archs(tmp_path: Path) -> None:
    result = wheelpin("demo", "--workdir", str(tmp_path), "--json", env={"HOME": str(tmp_path / "home")})
    assert result.code == 0, result.stderr
    demo = result.json()
    assert demo["config"] == str(tmp_path / "downstream" / "wheelpin.toml")
    assert Path(demo["config"]).read_text() == config_text(python=sys.executable)
    assert "| gfx942, gfx950 | py3-none-linux_x86_64 |" in demo["proposal"]


def test_the_config_starts_with_its_schema_and_the_shipped_example_is_a_copy() -> None:
    """config/demo/ is what the demo writes, with `python3` for the demo's own interpreter
    and the Dockerfile pinning a made-up first build."""
    written = config_text(python=sys.executable)
    assert written.splitlines()[0] == f"#:schema {SCHEMA_URL}"
    assert (ROOT / "config/demo/wheelpin.toml").read_text() == config_text(python="python3")
    shipped = (ROOT / "config/demo/docker/Dockerfile").read_text()
    image = re.search(r'^ARG DEMO_WHEEL_IMAGE="([^"]+)"$', shipped, flags=re.M)
    sha256 = re.search(r"^ARG DEMO_WHEEL_SHA256=([0-9a-f]{64})$", shipped, flags=re.M)
    assert image and sha256
    assert shipped == DOCKERFILE.format(image=image.group(1), sha256=sha256.group(1))

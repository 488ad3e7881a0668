"""`wheelpin demo`: wheelpin's checks, shown on wheels the command builds itself.

No network, no credentials: in a scratch folder it writes the wheel pinned today and a
new build of the same package whose requirements changed, inspects the new one the way
the bot does before publishing, and diffs its Requires-Dist against the pinned one with
the consuming image's constraints. (The full loop joins this demo with the reconciler.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..core.checks import WheelRules, problems
from ..core.inspect import inspect_wheel
from ..core.requirements import RequirementsDiff, diff_requirements, find_conflicts
from ..core.wheelbuild import build_wheel
from .output import emit_json, emit_text
from .wheel import diff_text, report_json, report_text

PINNED_COMMIT = "05fc77a0d1c2b3a4e5f60718293a4b5c6d7e8f90"
NEW_COMMIT = "3d3aa833bbf1e2d3c4b5a69788796a5b4c3d2e1f"
IMAGE_CONSTRAINTS = ("numpy==2.3.5", "torch==2.10.0a0+git3d3aa83")


def _package(version: str, requires: list[str], out: Path) -> Path:
    source = f'"""A tiny stand-in for an LMCache-like package."""\n__version__ = "{version}"\n'
    return build_wheel(
        out,
        name="demo-cache",
        version=version,
        files={"demo_cache/__init__.py": source.encode()},
        requires_dist=requires,
        summary="wheelpin demo package",
    )


def demo_command(*, workdir: Path | None, json: bool) -> int:
    root = workdir or Path(tempfile.mkdtemp(prefix="wheelpin-demo-"))
    wheels = root / "wheels"
    pinned = _package(
        f"0.5.6.dev97+g{PINNED_COMMIT[:8]}.rocm7.2.4",
        ["numpy>=2.3", "torch>=2.9", "msgspec"],
        wheels,
    )
    new = _package(
        f"0.5.6.dev98+g{NEW_COMMIT[:8]}.rocm7.2.4",
        ["numpy<=2.2.6", "torch>=2.9", "redis>=5; extra == 'redis'", "nvtx; sys_platform == 'win32'"],
        wheels,
    )
    report = inspect_wheel(new)
    found = problems(report, WheelRules(expect_name="demo-cache", expect_commit=NEW_COMMIT))
    base = diff_requirements(
        inspect_wheel(pinned).requires_dist, report.requires_dist,
        old_source=pinned.name, new_source=new.name,
    )
    conflicts = find_conflicts(report.requires_dist, IMAGE_CONSTRAINTS, source=new.name)
    diff = RequirementsDiff(base.added, base.removed, base.changed, tuple(conflicts))
    if json:
        emit_json({"workdir": str(root), "inspect": report_json(report, found),
                   "diff": diff.to_json(), "constraints": list(IMAGE_CONSTRAINTS)})
        return 0
    emit_text(f"wheelpin demo in {root}\n")
    emit_text("1. The new build, checked as the bot checks it before publishing:")
    emit_text(f"   wheelpin wheel inspect {new} --expect-name demo-cache --expect-commit {NEW_COMMIT[:12]}")
    emit_text(report_text(report, found) + "\n")
    emit_text("2. Its requirements against the wheel pinned today, and the image's pins:")
    emit_text(f"   wheelpin wheel diff {pinned} {new} " + " ".join(f"--constraint '{c}'" for c in IMAGE_CONSTRAINTS))
    emit_text(diff_text(pinned.name, new.name, diff) + "\n")
    emit_text("The conflict above is what a proposal would flag loudly: the new build asks for "
              "numpy<=2.2.6 while the image ships numpy==2.3.5.")
    return 0

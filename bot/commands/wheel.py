"""`wheelpin wheel inspect` and `wheelpin wheel diff`: the verify and diff steps, by hand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..adapters import logs
from ..adapters.imageread import read_image
from ..adapters.imagestore import reference_of
from ..adapters.inspectpool import inspect_wheel
from ..app.settings import Settings
from ..app.wiring import Registries, target_of
from ..core.checks.api import CHECKS
from ..core.checks.base import Given
from ..core.checks.rules import WheelRules, problems
from ..core.errors import InputError, UsageError, doing
from ..core.proposal.requirements import RequirementsDiff, TargetEnvironment, diff_requirements, find_conflicts
from ..core.sizes import size_text
from ..core.wheel.report import WheelReport, read_wheel_metadata
from .output import emit_json, emit_text

log = logs.get_logger("wheelpin.wheel")


@dataclass(frozen=True, kw_only=True)
class InspectOptions:
    wheel: Path
    given: Mapping[str, Given] = field(default_factory=dict)  # each check's flag value, by check name
    json: bool = False


def flagged_checks() -> list[str]:
    """The checks `wheel inspect` has a flag for, by name."""
    return [name for name, check in CHECKS.items() if check.flag is not None]


def rules_from(options: InspectOptions) -> WheelRules:
    try:
        return WheelRules.from_flags(options.given)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def report_json(report: WheelReport, found: list[str]) -> dict[str, object]:
    version = report.version_parsed
    return {
        "file": report.filename,
        "path": report.path,
        "name": report.name,
        "normalized_name": str(report.wheel_name.name),
        "version": report.version,
        "version_base": version.public,
        "local": version.local,
        "build": report.build,
        "tags": list(report.tags),
        "sha256": report.sha256,
        "size": report.size,
        "installed_size": report.installed_size,
        "variant": (
            {"label": report.variant.label, "properties": list(report.variant.properties)} if report.variant else None
        ),
        "requires_python": report.requires_python,
        "requires_dist": list(report.requires_dist),
        "archs": report.archs,
        "cuda_archs": report.cuda_archs,
        "elf": [elf.to_json() for elf in report.elf],
        "notes": list(report.notes),
        "problems": found,
    }


def report_text(report: WheelReport, found: list[str]) -> str:
    hip = [elf for elf in report.elf if elf.gpu == "hip"]
    cuda = [elf for elf in report.elf if elf.gpu == "cuda"]
    lines = [
        report.filename,
        f"  name      {report.name}",
        f"  version   {report.version}",
        f"  tags      {', '.join(report.tags)}",
        f"  sha256    {report.sha256}",
        f"  size      {_exactly(report.size)}",
        f"  installed {_exactly(report.installed_size)}",
    ]
    if report.variant is not None:
        lines.append(f"  variant   {report.variant.label}")
        lines += [f"    {prop}" for prop in report.variant.properties]
    lines += [
        f"  archs     {' '.join(report.archs) or '-'}",
        f"  ELF files {len(report.elf)} ({len(hip)} with HIP code, {len(cuda)} with CUDA code)",
    ]
    for elf in report.elf:
        code = f"{elf.gpu} {' '.join(elf.archs)}" if elf.gpu else "no device code"
        lines.append(f"    {elf.path}: {code}; needs {', '.join(elf.needed) or 'nothing'}")
    lines.append(f"  requires  {len(report.requires_dist)}")
    lines += [f"    {requirement}" for requirement in report.requires_dist]
    lines += [f"  note: {note}" for note in report.notes]
    if found:
        lines.append(f"  problems  {len(found)}")
        lines += [f"    - {problem}" for problem in found]
    else:
        lines.append("  problems  none")
    return "\n".join(lines)


def _exactly(size: int) -> str:
    """`3.1 MB (3145728 bytes)`; a size under a kB is said in bytes once."""
    return size_text(size) + (f" ({size} bytes)" if size >= 1000 else "")


def inspect_command(options: InspectOptions) -> int:
    rules = rules_from(options)
    report = inspect_wheel(options.wheel)
    found = problems(report, rules)
    log.info("wheel.inspected", wheel=report.filename, problems=len(found), elf=len(report.elf))
    if options.json:
        emit_json(report_json(report, found))
    else:
        emit_text(report_text(report, found))
    return 1 if found else 0


@dataclass(frozen=True, kw_only=True)
class DiffOptions:
    old: str
    new: str
    constraints: tuple[str, ...] = ()
    constraints_file: Path | None = None
    python_version: str = "3.12"
    platform: str = "linux_x86_64"
    extras: tuple[str, ...] = ()
    json: bool = False


def read_constraints_file(path: Path) -> list[str]:
    """A pip-style constraints file: one requirement a line, `#` comments."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the constraints file ({exc.strerror})") from None
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise UsageError(f"{path}:{number}: pip options such as {line.split()[0]} are not supported")
        found.append(line)
    return found


def requires_dist_of(reference: str, settings: Settings) -> tuple[str, list[str]]:
    """The Requires-Dist of a wheel file, or of the wheel(s) in an image (from its
    annotations when wheelpin wrote it: no layer is fetched)."""
    path = Path(reference)
    if path.exists() or reference.endswith(".whl"):
        if not path.exists():
            raise InputError(f"{reference}: no such wheel file")
        return path.name, list(read_wheel_metadata(path).requires_dist)
    target = target_of(reference)
    pointer = reference_of(target)
    if pointer is None:
        raise UsageError(f"{reference}: name the image by tag or digest")
    with doing(f"reading {reference} (to compare its wheels)"):
        info = read_image(Registries(settings).store(target), pointer)
    if not info.wheels:
        raise InputError(f"{reference}: the image holds no wheel")
    merged: list[str] = []
    for wheel in info.wheels:
        merged += [r for r in wheel.requires_dist if r not in merged]
    return reference, merged


def diff_command(options: DiffOptions, settings: Settings) -> int:
    old_name, old = requires_dist_of(options.old, settings)
    new_name, new = requires_dist_of(options.new, settings)
    constraints = list(options.constraints)
    if options.constraints_file is not None:
        constraints += read_constraints_file(options.constraints_file)
    environment = TargetEnvironment(
        python_version=options.python_version, platform=options.platform, extras=options.extras
    )
    try:
        diff = diff_requirements(old, new, old_source=old_name, new_source=new_name)
        conflicts = find_conflicts(new, constraints, environment=environment, source=new_name)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    diff = RequirementsDiff(diff.added, diff.removed, diff.changed, tuple(conflicts))
    if options.json:
        emit_json({"old": old_name, "new": new_name, **diff.to_json()})
    else:
        emit_text(diff_text(old_name, new_name, diff))
    return 1 if diff.conflicts else 0


def diff_text(old_name: str, new_name: str, diff: RequirementsDiff) -> str:
    lines = [f"Requires-Dist {old_name} → {new_name}"]
    if diff.empty:
        lines.append("  no change")
    for change in diff.added:
        lines.append(f"  + {' | '.join(change.new or ())}")
    for change in diff.removed:
        lines.append(f"  - {' | '.join(change.old or ())}")
    for change in diff.changed:
        lines.append(f"  ~ {' | '.join(change.old or ())}  →  {' | '.join(change.new or ())}")
    for conflict in diff.conflicts:
        lines.append(f"  CONFLICT {conflict.requirement} vs the image's {conflict.constraint}")
    return "\n".join(lines)

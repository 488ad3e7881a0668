"""The rules a wheel must pass before it is published (docs/design.md §1.3), as problems.

`problems(report, rules)` is pure: each broken rule is one sentence. The same rules
serve `wheel inspect` (from its options) and the reconciler (from a component's config).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .amdgpu import TargetId
from .inspect import WheelReport
from .localversion import segment_problems

# Libraries that only a CUDA build links against (ROCm builds of torch ship
# libtorch_hip / libc10_hip instead of libtorch_cuda / libc10_cuda).
CUDA_LIBRARIES: tuple[str, ...] = (
    "libcudart*",
    "libcuda.so*",
    "libnvrtc*",
    "libcublas*",
    "libtorch_cuda*",
    "libc10_cuda*",
)
_COMMIT_SEGMENT = re.compile(r"^g([0-9a-f]{8,40})$")
_HEX = re.compile(r"^[0-9a-f]{8,40}$")
_TAG_COMMIT = re.compile(r"(?:^|[^A-Za-z0-9])g([0-9a-f]{8,40})(?=$|[^A-Za-z0-9])")


@dataclass(frozen=True, kw_only=True)
class WheelRules:
    """What a wheel must be: from `wheel inspect`'s options or a component's config."""

    require_archs: tuple[TargetId, ...] = ()
    expect_name: str | None = None
    expect_commit: str | None = None
    rocm: bool = True  # refuse CUDA libraries and CUDA device code
    require_needed: tuple[str, ...] = ()
    forbid_needed: tuple[str, ...] = ()
    local_segments: tuple[str, ...] = ()  # normalized (core/localversion.py)

    def __post_init__(self) -> None:
        if self.expect_commit is not None and not _HEX.match(self.expect_commit.lower()):
            raise ValueError(
                f"expected commit {self.expect_commit!r} is not 8 to 40 hex digits"
            )

    @property
    def forbidden(self) -> tuple[str, ...]:
        return (CUDA_LIBRARIES if self.rocm else ()) + tuple(self.forbid_needed)


def problems(report: WheelReport, rules: WheelRules) -> list[str]:
    """Every rule the wheel breaks, one sentence each; empty when it passes."""
    found = list(report.integrity)
    found += _name_problems(report, rules)
    found += _commit_problems(report, rules)
    found += segment_problems(report.version, rules.local_segments)
    found += _arch_problems(report, rules)
    found += _library_problems(report, rules)
    return found


def _name_problems(report: WheelReport, rules: WheelRules) -> list[str]:
    if rules.expect_name is None:
        return []
    if canonicalize_name(report.name) == canonicalize_name(rules.expect_name):
        return []
    return [f"distribution is {report.name!r}, expected {rules.expect_name!r}"]


def _commit_problems(report: WheelReport, rules: WheelRules) -> list[str]:
    if rules.expect_commit is None:
        return []
    commit = rules.expect_commit.lower()
    local = report.version_parsed.local
    if local is None:
        return [f"version {report.version} carries no commit (expected g{commit[:8]})"]
    for segment in local.split("."):
        match = _COMMIT_SEGMENT.match(segment)
        if match:
            written = match.group(1)
            if commit.startswith(written) or written.startswith(commit):
                return []
    return [f"version {report.version} does not carry commit g{commit[:8]}"]


def version_commit(version: str) -> str | None:
    """The commit a version's local part carries as g<hex> (LMCache's `+g05fc77a0`), or None."""
    local = Version(version).local if _valid(version) else None
    for segment in (local or "").split("."):
        match = _COMMIT_SEGMENT.match(segment)
        if match:
            return match.group(1)
    return None


def tag_commit_problems(tag: str, reports: list[WheelReport]) -> list[str]:
    """A tag naming a commit (`…-g05fc77a0-…`) over wheels whose versions carry another:
    the tag would drift from its wheel. Wheels that carry no commit are not judged."""
    named = _TAG_COMMIT.findall(tag)
    if not named:
        return []
    found: list[str] = []
    for report in reports:
        commit = version_commit(report.version)
        if commit is not None and not any(c.startswith(commit) or commit.startswith(c) for c in named):
            found.append(f"{report.filename}: tag {tag} names commit g{named[0][:8]}, but the wheel's "
                         f"version {report.version} carries g{commit[:8]}")
    return found


def _valid(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def _arch_problems(report: WheelReport, rules: WheelRules) -> list[str]:
    if not rules.require_archs:
        return []
    hip = [elf for elf in report.elf if elf.gpu == "hip"]
    wanted = ", ".join(str(arch) for arch in rules.require_archs)
    if not hip:
        return [f"no HIP device code found, but {wanted} is required"]
    found: list[str] = []
    for elf in hip:
        targets = [TargetId.parse(text) for text in elf.targets]
        missing = [
            str(arch)
            for arch in rules.require_archs
            if not any(target.covers(arch) for target in targets)
        ]
        if missing:
            found.append(
                f"{elf.path} has no code for {', '.join(missing)} "
                f"(it carries {', '.join(elf.targets)})"
            )
    return found


def _library_problems(report: WheelReport, rules: WheelRules) -> list[str]:
    found: list[str] = []
    for elf in report.elf:
        for library in elf.needed:
            hits = [pattern for pattern in rules.forbidden if fnmatch.fnmatchcase(library, pattern)]
            if hits:
                kind = "a CUDA library" if set(hits) & set(CUDA_LIBRARIES) else "a forbidden library"
                found.append(f"{elf.path} needs {library}, {kind} ({hits[0]})")
        if rules.rocm and elf.gpu == "cuda":
            archs = f" ({', '.join(elf.archs)})" if elf.archs else ""
            found.append(f"{elf.path} carries CUDA device code{archs}")
    for pattern in rules.require_needed:
        if not any(
            fnmatch.fnmatchcase(library, pattern) for elf in report.elf for library in elf.needed
        ):
            found.append(f"no ELF file in the wheel needs a library matching {pattern}")
    return found

"""The rules a wheel must pass before it is published (docs/design.md §1.3), as problems.

`problems(report, rules)` is pure: each broken rule is one sentence. The same rules
serve `wheel inspect` (from its options) and the reconciler (from a component's config).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from packaging.utils import canonicalize_name

from .amdgpu import TargetId, sorted_processors
from .localversion import local_parts, segment_problems
from .rocmlibs import grafted
from .rocmrules import rocm_major_problems, vendored_rocm_problems

if TYPE_CHECKING:  # a wheel's report is read here; the reading (inspect) loads where a wheel is read
    from .inspect import WheelReport

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
    wanted_archs: tuple[TargetId, ...] = ()  # used where present; none present is refused
    expect_name: str | None = None
    expect_commit: str | None = None
    rocm: bool = True  # refuse CUDA libraries and CUDA device code
    require_needed: tuple[str, ...] = ()
    forbid_needed: tuple[str, ...] = ()
    local_segments: tuple[str, ...] = ()  # normalized (core/localversion.py)
    allow_vendored_rocm: bool = False  # a wheel may carry ROCm's own libraries (core/rocmlibs.py)

    def __post_init__(self) -> None:
        if self.expect_commit is not None and not _HEX.match(self.expect_commit.lower()):
            raise ValueError(
                f"expected commit {self.expect_commit!r} is not 8 to 40 hex digits"
            )

    @property
    def forbidden(self) -> tuple[str, ...]:
        return (CUDA_LIBRARIES if self.rocm else ()) + tuple(self.forbid_needed)


# The kinds of problem, in the order a person should read them: the root cause first (a
# wheel of another distribution is most often the build's non-ROCm variant, and explains
# every CUDA library and missing arch after it).
KINDS = ("name", "integrity", "set", "commit", "abi", "cuda", "archs", "libraries")


class Finding(NamedTuple):
    """One broken rule: its kind (KINDS), its sentence, and for a library an ELF needs,
    what the sentence says it of (`head`, "x.so needs") and the library (`item`), so that
    several libraries of one ELF can be said in one sentence."""

    kind: str
    text: str
    head: str = ""
    item: str = ""


def kinded_problems(report: WheelReport, rules: WheelRules) -> list[Finding]:
    """Every rule the wheel breaks, kinds from KINDS."""
    found = [Finding("integrity", text) for text in report.integrity]
    found += [Finding("name", text) for text in _name_problems(report, rules)]
    found += [Finding("commit", text) for text in _commit_problems(report, rules)]
    found += [Finding("abi", text) for text in segment_problems(report.version, rules.local_segments)]
    found += [Finding("abi", text) for text in rocm_major_problems(report)]
    found += [Finding("archs", text) for text in _arch_problems(report, rules) + _wanted_problems(report, rules)]
    found += _library_problems(report, rules)
    return found


def problems(report: WheelReport, rules: WheelRules) -> list[str]:
    """Every rule the wheel breaks, one sentence each; empty when it passes."""
    return [finding.text for finding in kinded_problems(report, rules)]


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
    if report.version_parsed.local is None:
        return [f"version {report.version} carries no commit (expected g{commit[:8]})"]
    if any(commit.startswith(written) or written.startswith(commit) for written in commits_in(report.version)):
        return []
    return [f"version {report.version} does not carry commit g{commit[:8]}"]


def commits_in(version: str) -> list[str]:
    """The commits a version's local part carries as g<hex> (LMCache's `+g05fc77a0`)."""
    return [match.group(1) for part in local_parts(version) if (match := _COMMIT_SEGMENT.match(part))]


def tag_commit_problems(tag: str, reports: list[WheelReport]) -> list[str]:
    """A tag naming a commit (`…-g05fc77a0-…`) over wheels whose versions carry another:
    the tag would drift from its wheel. Wheels that carry no commit are not judged."""
    named = _TAG_COMMIT.findall(tag)
    if not named:
        return []
    found: list[str] = []
    for report in reports:
        carried = commits_in(report.version)
        commit = carried[0] if carried else None
        if commit is not None and not any(c.startswith(commit) or commit.startswith(c) for c in named):
            found.append(f"{report.filename}: tag {tag} names commit g{named[0][:8]}, but the wheel's "
                         f"version {report.version} carries g{commit[:8]}")
    return found


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


def _wanted_problems(report: WheelReport, rules: WheelRules) -> list[str]:
    """Wanted archs are optional one by one, but a wheel with none of them is no use."""
    if not rules.wanted_archs:
        return []
    targets = [TargetId.parse(text) for elf in report.elf if elf.gpu == "hip" for text in elf.targets]
    if any(target.covers(arch) for arch in rules.wanted_archs for target in targets):
        return []
    carries = ", ".join(report.archs) or "no HIP device code"
    return [f"none of the wanted archs {', '.join(map(str, rules.wanted_archs))} has a code object "
            f"(the wheel carries {carries})"]


def partial_archs(report: WheelReport) -> tuple[str, ...]:
    """The HIP processors that some GPU libraries of the wheel carry and others lack."""
    libraries = [set(elf.archs) for elf in report.elf if elf.gpu == "hip"]
    if len(libraries) < 2:
        return ()
    everywhere = libraries[0].intersection(*libraries[1:])
    return tuple(sorted_processors(libraries[0].union(*libraries[1:]) - everywhere))


def missing_wanted(wanted: Sequence[str], carried: Sequence[str]) -> list[str]:
    """The wanted archs no GPU library of the wheels has code for (`carried`: the union
    of their processors, as an image's wheel entries record it)."""
    have = [TargetId.parse(arch) for arch in carried]
    return [arch for arch in wanted if not any(target.covers(TargetId.parse(arch)) for target in have)]


def _library_problems(report: WheelReport, rules: WheelRules) -> list[Finding]:
    found: list[Finding] = []
    for elf in report.elf:
        for library in elf.needed:
            hits = [pattern for pattern in rules.forbidden if fnmatch.fnmatchcase(library, pattern)]
            if hits:
                cuda = bool(set(hits) & set(CUDA_LIBRARIES))
                found.append(Finding("cuda" if cuda else "libraries", f"{elf.path} needs {library}, "
                                     f"{'a CUDA library' if cuda else 'a forbidden library'} ({hits[0]})",
                                     head=f"{elf.path} needs", item=library))
        if rules.rocm and elf.gpu == "cuda":
            archs = f" ({', '.join(elf.archs)})" if elf.archs else ""
            found.append(Finding("cuda", f"{elf.path} carries CUDA device code{archs}"))
    # A copy auditwheel grafted into the wheel (libamdhip64-5f3a9c1e.so.7) is not a library
    # the image provides, which is what a required one is.
    provided = [library for elf in report.elf for library in elf.needed if not grafted(library)]
    for pattern in rules.require_needed:
        if not any(fnmatch.fnmatchcase(library, pattern) for library in provided):
            found.append(Finding("libraries", f"no ELF file in the wheel needs a library matching {pattern}"))
    if not rules.allow_vendored_rocm:
        found += [Finding("libraries", text) for text in vendored_rocm_problems(report)]
    return found

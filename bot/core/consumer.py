"""A new wheel checked against the image that will consume it (docs/design.md §1, step 5):
what is installed there and which libraries are there, from `core/imagefs.ImageFiles`.
Pure.

- **Constraints**: every installed distribution pins its version (`numpy==2.3.5`): the
  constraints the image ships, merged with those typed by hand (core/requirements).
- **Dependents**: what `pip install --no-deps WHEEL` would leave inconsistent: an installed
  distribution whose Requires-Dist excludes the new wheel's version, or one that needs a
  package in versions the new wheel's own ranges exclude (moving that package to suit the
  wheel would break it).
- **Libraries**: each DT_NEEDED of each ELF file of the wheel, found as the loader would:
  in the folders of the ELF's RUNPATH (`$ORIGIN` is where the wheel installs it, in the
  image's main site folder), the wheel's own files, `LD_LIBRARY_PATH`, ld.so.conf and the
  default folders. One not found is a verification problem (`libamdhip64.so.7` against a
  ROCm 6 image).
Requirements are evaluated for the image's Python and for linux x86_64.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .config import Consumer
from .dockerpins import parse
from .imagefs import ImageFiles, Installed, resolve_folder
from .requirements import Conflict, TargetEnvironment, compatible, find_conflicts

if TYPE_CHECKING:  # a wheel's report is read here; the reading (inspect) loads where a wheel is read
    from .inspect import WheelReport


@dataclass(frozen=True)
class Dependent:
    dependent: str  # name==version installed in the image
    requirement: str  # its Requires-Dist line that the change breaks
    why: str

    def to_json(self) -> dict[str, str]:
        return {"dependent": self.dependent, "requirement": self.requirement, "why": self.why}


class WheelAsks(Protocol):
    """What a wheel declares, as the checks against an image need it (a WheelEntry or a
    WheelReport has it)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def requires_dist(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ConsumerReport:
    image: str
    python: str | None
    rocm: str | None  # the image's ROCm version
    installed: dict[str, str]  # canonical name → version
    dependents: tuple[Dependent, ...]
    unresolved: tuple[str, ...] = ()  # "lmcache/c_ops.so needs libamdhip64.so.7, which the image does not have …"

    @property
    def constraints(self) -> tuple[str, ...]:
        """One `name==version` per installed distribution: the image's own constraints."""
        return tuple(sorted(f"{name}=={version}" for name, version in self.installed.items() if _valid(version)))

    def to_json(self) -> dict[str, object]:
        return {"image": self.image, "python": self.python, "rocm": self.rocm, "installed": self.installed,
                "dependents": [d.to_json() for d in self.dependents], "unresolved": list(self.unresolved)}


def target(files: ImageFiles) -> TargetEnvironment:
    """The marker environment of the image: its Python, Linux on x86_64."""
    return TargetEnvironment(python_version=files.python_version or "3.12")


def _requirements(lines: Sequence[str], env: TargetEnvironment) -> list[Requirement]:
    found = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if env.applies(requirement.marker):
            found.append(requirement)
    return found


def check(image: str, files: ImageFiles, wheels: Sequence[WheelAsks],
          reports: Sequence[WheelReport] = ()) -> ConsumerReport:
    """The wheels against the image: dependents, and (given the wheels' inspections) the
    libraries their ELF files need that the image lacks."""
    installed = files.installed()
    env = target(files)
    dependents = [found for wheel in wheels for found in _dependents(wheel, installed, env)]
    unresolved = [problem for report in reports for problem in _libraries(report, files)]
    return ConsumerReport(image, files.python_version, files.rocm_version(),
                          {name: dist.version for name, dist in installed.items()},
                          tuple(dict.fromkeys(dependents)), tuple(dict.fromkeys(unresolved)))


def _valid(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def _dependents(wheel: WheelAsks, installed: dict[str, Installed], env: TargetEnvironment) -> list[Dependent]:
    ours = canonicalize_name(wheel.name)
    wanted = {canonicalize_name(r.name): r.specifier for r in _requirements(wheel.requires_dist, env)}
    found: list[Dependent] = []
    for name, dist in sorted(installed.items()):
        if name == ours:
            continue
        for requirement in _requirements(dist.requires, env):
            needs = canonicalize_name(requirement.name)
            who = f"{dist.name}=={dist.version}"
            if needs == ours and not requirement.specifier.contains(wheel.version, prereleases=True):
                found.append(Dependent(who, str(requirement), f"excludes {wheel.name} {wheel.version}"))
            elif needs in wanted and str(wanted[needs]) and not compatible(requirement.specifier, wanted[needs]):
                found.append(Dependent(who, str(requirement), f"{wheel.name} asks {requirement.name}"
                                       f"{wanted[needs]}, and no version satisfies both"))
    return found


def _libraries(report: WheelReport, files: ImageFiles) -> list[str]:
    """Each DT_NEEDED of the wheel's ELF files that the loader would not find, as a sentence."""
    site = files.main_site or "usr/lib/python3/dist-packages"
    own = {posixpath.join(site, elf.path) for elf in report.elf}  # every ELF member, `*.libs/` too
    present = set(files.libraries) | own
    names = {posixpath.basename(path) for path in present}
    folders = files.library_folders()
    problems = []
    for elf in report.elf:
        origin = posixpath.dirname(posixpath.join(site, elf.path))
        searched = [resolve_folder(folder, origin) for folder in elf.runpath] + folders
        for library in elf.needed:
            if "/" in library:
                found = posixpath.normpath(library).lstrip("/") in present
            else:
                found = library in names and any(posixpath.join(folder, library) in present for folder in searched)
            if not found:
                problems.append(f"{elf.path} needs {library}, which the image does not have where the loader looks")
    return problems


_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def reference_in(consumer: Consumer, text: str, *, where: str) -> str:
    """The consuming image a Dockerfile names: the default of `ARG from_arg`, or the image of
    `FROM … AS from_stage` with the global ARGs' defaults put in. ValueError, in one
    sentence, when the file does not say."""
    parsed = parse(text, where=where)
    if consumer.from_arg is not None:
        declared = [d for d in parsed.declarations(consumer.from_arg) if d.default is not None]
        if not declared:
            raise ValueError(f"{where}: no `ARG {consumer.from_arg}=…` names the consuming image (consumer.from_arg)")
        value = declared[0].default.value  # type: ignore[union-attr]
    else:
        assert consumer.from_stage is not None
        stage = parsed.stage(consumer.from_stage)
        if stage is None:
            raise ValueError(f"{where}: no `FROM … AS {consumer.from_stage}` (consumer.from_stage)")
        value = stage.image.value
    defaults = {d.name: d.default.value for d in parsed.args if d.stage is None and d.default is not None}
    value = _VARIABLE.sub(lambda m: defaults.get(m.group(1) or m.group(2), m.group(0)), value)
    if "$" in value or not value:
        raise ValueError(f"{where}: the consuming image {value!r} uses an ARG with no default")
    return value


def conflicts_with(report: ConsumerReport, wheels: Sequence[WheelAsks], files: ImageFiles) -> list[Conflict]:
    """The wheels' Requires-Dist against what the image has installed, for its Python."""
    requires = [r for wheel in wheels for r in wheel.requires_dist]
    return find_conflicts(requires, report.constraints, environment=target(files), source="the wheel")


_ROCM_SEGMENT = re.compile(r"(?:^|[+.])rocm(\d+(?:\.\d+)*)")
_HIP_RUNTIME = re.compile(r"^libamdhip64\.so\.(\d+)$")


def wheel_rocm(versions: Sequence[str], needed: Sequence[str]) -> str | None:
    """The ROCm a wheel was built for: its local version's `rocm7.2.4`, else the major
    version of the HIP runtime its libraries need (`libamdhip64.so.7`)."""
    for version in versions:
        if match := _ROCM_SEGMENT.search(version.partition("+")[2]):
            return match.group(1)
    majors = sorted({m.group(1) for name in needed if (m := _HIP_RUNTIME.match(name))})
    return majors[-1] if majors else None

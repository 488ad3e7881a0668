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
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .imagefs import ImageFiles, Installed, resolve_folder
from .inspect import WheelReport


@dataclass(frozen=True)
class Dependent:
    dependent: str  # name==version installed in the image
    requirement: str  # its Requires-Dist line that the change breaks
    why: str


@dataclass(frozen=True)
class ConsumerReport:
    image: str
    python: str | None
    rocm: str | None  # the image's ROCm version
    installed: dict[str, str]  # canonical name → version
    constraints: tuple[str, ...]  # name==version, one per installed distribution
    dependents: tuple[Dependent, ...]
    unresolved: tuple[str, ...]  # "lmcache/c_ops.so needs libamdhip64.so.7, which the image does not have"

    def to_json(self) -> dict[str, object]:
        return {"image": self.image, "python": self.python, "rocm": self.rocm, "installed": len(self.installed),
                "dependents": [d.__dict__ for d in self.dependents], "unresolved": list(self.unresolved)}


def environment(python: str | None) -> dict[str, str]:
    """PEP 508 marker values for the image: its Python, Linux on x86_64, CPython."""
    version = python or "3"
    return {"python_version": version, "python_full_version": version + ".0", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "platform_release": "", "platform_version": "", "implementation_version": version + ".0",
            "extra": ""}


def _requirements(lines: Sequence[str], env: dict[str, str]) -> list[Requirement]:
    found = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate(env):
            found.append(requirement)
    return found


def check(image: str, files: ImageFiles, reports: Sequence[WheelReport]) -> ConsumerReport:
    installed = files.installed()
    env = environment(files.python_version)
    constraints = tuple(sorted(f"{name}=={dist.version}" for name, dist in installed.items()
                               if _valid(dist.version)))
    dependents: list[Dependent] = []
    for report in reports:
        dependents += _dependents(report, installed, env)
    unresolved = [problem for report in reports for problem in _libraries(report, files)]
    return ConsumerReport(image, files.python_version, files.rocm_version(),
                          {name: dist.version for name, dist in installed.items()}, constraints,
                          tuple(dict.fromkeys(dependents)), tuple(dict.fromkeys(unresolved)))


def _valid(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def _dependents(report: WheelReport, installed: dict[str, Installed], env: dict[str, str]) -> list[Dependent]:
    ours = canonicalize_name(report.name)
    wanted = {canonicalize_name(r.name): r.specifier for r in _requirements(report.requires_dist, env)}
    found: list[Dependent] = []
    for name, dist in sorted(installed.items()):
        if name == ours:
            continue
        for requirement in _requirements(dist.requires, env):
            target = canonicalize_name(requirement.name)
            who = f"{dist.name}=={dist.version}"
            if target == ours and not requirement.specifier.contains(report.version, prereleases=True):
                found.append(Dependent(who, str(requirement), f"excludes {report.name} {report.version}"))
            elif target in wanted and target in installed and _disjoint(requirement.specifier, wanted[target],
                                                                         installed[target].version):
                found.append(Dependent(who, str(requirement), f"{report.name} asks {requirement.name}"
                                       f"{wanted[target]}, which leaves no version both accept"))
    return found


def _disjoint(theirs: SpecifierSet, ours: SpecifierSet, installed: str) -> bool:
    """Whether no version satisfies both, judged on the versions either names and the one
    installed (a version between them satisfies both only if one of those does)."""
    if not str(ours) or not str(theirs):
        return False
    candidates = {installed, *(spec.version for spec in [*theirs, *ours] if "*" not in spec.version)}
    versions = [c for c in candidates if _valid(c)]
    return bool(versions) and not any(theirs.contains(v, prereleases=True) and ours.contains(v, prereleases=True)
                                      for v in versions)


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

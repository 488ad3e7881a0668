"""A new wheel checked against the image that will consume it (docs/design.md §1, step 5):
what is installed there and which libraries are there, from `core/image/files.ImageFiles`.
Pure.

- **Constraints**: every installed distribution pins its version (`numpy==2.3.5`): the
  constraints the image ships, merged with those typed by hand (core/proposal/requirements.py).
- **Dependents**: what `pip install --no-deps WHEEL` would leave inconsistent: an installed
  distribution whose Requires-Dist excludes the new wheel's version, or one that needs a
  package in versions the new wheel's own ranges exclude (moving that package to suit the
  wheel would break it).
- **Absent**: the wheel's requirements that no installed distribution meets by name
  (`grpcio>=1.78.0`): what installing it would bring into the image.
- **Libraries**: each DT_NEEDED of each ELF file of the wheel, found as the loader would
  (`core/image/ldso.py`): a soname already loaded by a distribution the wheel requires (torch's
  `libc10.so`, loaded by `import torch` before the wheel's extension), else a path
  through the image's symlinks from DT_RPATH, `LD_LIBRARY_PATH`, DT_RUNPATH (`$ORIGIN` is
  where the wheel installs the ELF file, in the image's main site folder; the wheel's own
  files are there), ld.so.conf and the default folders. One not found is a verification
  problem (`libamdhip64.so.7` against a ROCm 6 image); one an installed distribution that
  the wheel does not require has is said with its name.
- **Platform**: a wheel whose platform tag names an architecture (`linux_x86_64`) against
  the `os` and `architecture` of the image's config (`wrong_platform`): pip there refuses
  a wheel of another platform, so it is a verification problem too. A pure-Python wheel
  (`any`) installs on every platform, and is never refused for it.
Requirements are evaluated for the image's Python and for linux x86_64, no extra.
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

from ..config.model import Consumer
from ..pins.locate import parse
from ..proposal.requirements import Conflict, TargetEnvironment, compatible, find_conflicts
from ..wheel.localversion import carried
from ..wheel.rocmlibs import hip_majors
from .files import ImageFiles, Installed
from .ldso import Tree, conf_folders, locate, search_folders
from .oci import wheel_architecture

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    from ..wheel.report import WheelReport


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
    absent: tuple[str, ...] = ()  # the wheels' requirements the image has no distribution for: "grpcio>=1.78.0"

    @property
    def constraints(self) -> tuple[str, ...]:
        """One `name==version` per installed distribution: the image's own constraints."""
        return tuple(sorted(f"{name}=={version}" for name, version in self.installed.items() if _valid(version)))

    def to_json(self) -> dict[str, object]:
        return {
            "image": self.image,
            "python": self.python,
            "rocm": self.rocm,
            "installed": self.installed,
            "dependents": [d.to_json() for d in self.dependents],
            "unresolved": list(self.unresolved),
            "absent": list(self.absent),
        }


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


def check(
    image: str, files: ImageFiles, wheels: Sequence[WheelAsks], reports: Sequence[WheelReport] = ()
) -> ConsumerReport:
    """The wheels against the image: dependents, the requirements it has nothing for, and
    (given the wheels' inspections) the libraries their ELF files need that it lacks."""
    installed = files.installed()
    env = target(files)
    dependents = [found for wheel in wheels for found in _dependents(wheel, installed, env)]
    unresolved = [problem for report in reports for problem in _libraries(report, files, installed, env)]
    return ConsumerReport(
        image,
        files.python_version,
        files.rocm_version(),
        {name: dist.version for name, dist in installed.items()},
        tuple(dict.fromkeys(dependents)),
        tuple(dict.fromkeys(unresolved)),
        tuple(_absent(wheels, installed, env)),
    )


def wrong_platform(image: str, platform: tuple[str, str] | None, wheels: Sequence[str]) -> str | None:
    """The wheels (file names) whose platform tag names an architecture the image `image`
    is not, in one sentence naming both; None when every one fits, or the image's config
    says no platform (`platform`: its `os` and `architecture`, adapters/imagedocs
    `config_platform`). pip in that image refuses them ("is not a supported wheel on this
    platform": the platform tag does not match). The one rule of the pass's check
    (loop/consumers.py) and of the dry run's forecast of it (loop/preview.py)."""
    if platform is None:
        return None
    system, architecture = platform
    wrong: dict[str, list[str]] = {}
    for wheel in wheels:
        named = wheel_architecture(wheel)
        if named is not None and (system != "linux" or named != architecture):
            wrong.setdefault(named, []).append(wheel)
    if not wrong:
        return None
    built = "; ".join(
        f"{', '.join(files)} {'is' if len(files) == 1 else 'are'} built for linux/{named}"
        for named, files in wrong.items()
    )
    them = "it" if sum(map(len, wrong.values())) == 1 else "them"
    return (
        f"{built}, and the consuming image {image} is {system}/{architecture}: "
        f"pip there would refuse {them} (the platform tag does not match)"
    )


def _absent(wheels: Sequence[WheelAsks], installed: dict[str, Installed], env: TargetEnvironment) -> list[str]:
    """Each requirement of the wheels whose distribution the image does not have, without
    its marker (it applies): `grpcio>=1.78.0`."""
    ours = {canonicalize_name(wheel.name) for wheel in wheels}
    found = []
    for wheel in wheels:
        for requirement in _requirements(wheel.requires_dist, env):
            name = canonicalize_name(requirement.name)
            if name not in installed and name not in ours:
                extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
                found.append(
                    requirement.name
                    + extras
                    + (f" @ {requirement.url}" if requirement.url else str(requirement.specifier))
                )
    return list(dict.fromkeys(found))


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
                found.append(
                    Dependent(
                        who,
                        str(requirement),
                        f"{wheel.name} asks {requirement.name}{wanted[needs]}, and no version satisfies both",
                    )
                )
    return found


def _libraries(
    report: WheelReport, files: ImageFiles, installed: dict[str, Installed], env: TargetEnvironment
) -> list[str]:
    """Each DT_NEEDED of the wheel's ELF files that the loader would not find, as a sentence."""
    site = files.main_site or "usr/lib/python3/dist-packages"
    own = {posixpath.join(site, elf.path) for elf in report.elf}  # every ELF member, `*.libs/` too
    tree = Tree(
        {path for path, target in files.libraries.items() if not target} | own,
        {**files.links, **{path: target for path, target in files.libraries.items() if target}},
    )
    conf = conf_folders(files.texts)
    loaded = _loaded(report, installed, env)
    has = _owners(installed)
    problems = []
    for elf in report.elf:
        origin = posixpath.dirname(posixpath.join(site, elf.path))
        for library in elf.needed:
            if "/" not in library and library in loaded:
                continue  # the loader matches a soname already loaded before it searches
            folders = search_folders(rpath=elf.rpath, runpath=elf.runpath, origin=origin, env=files.env, conf=conf)
            if locate(library, folders, tree) is None:
                text = f"{elf.path} needs {library}, which the image does not have where the loader looks"
                if owner := has.get(library):
                    text += (
                        f"; {owner.name} {owner.version} in the image has it, but {report.name} does not "
                        f"require {owner.name}"
                    )
                problems.append(text)
    return problems


def _owners(installed: dict[str, Installed]) -> dict[str, Installed]:
    """Each shared object name an installed distribution's RECORD lists, and that distribution."""
    owners: dict[str, Installed] = {}
    for _name, dist in sorted(installed.items()):
        for path in dist.libraries:
            owners.setdefault(posixpath.basename(path), dist)
    return owners


def _loaded(wheel: WheelAsks, installed: dict[str, Installed], env: TargetEnvironment) -> dict[str, Installed]:
    """The shared objects loaded before the wheel's extensions are: those of the installed
    distributions it requires, and of those they require. `import lmcache` runs `import
    torch`, which loads torch/lib/libc10.so; the loader then matches a DT_NEEDED
    `libc10.so` with no RUNPATH to it. One level down is enough: it covers a library a
    requirement takes from its own requirement (torch's from triton); a deeper chain is
    one no wheel wheelpin follows has, and each level widens what is taken on trust."""
    required: dict[str, Installed] = {}
    for requirement in _requirements(wheel.requires_dist, env):
        dist = installed.get(canonicalize_name(requirement.name))
        if dist is not None:
            required[canonicalize_name(dist.name)] = dist
            for deeper in _requirements(dist.requires, env):
                if (below := installed.get(canonicalize_name(deeper.name))) is not None:
                    required.setdefault(canonicalize_name(below.name), below)
    return _owners(required)


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


def wheel_rocm(versions: Sequence[str], needed: Sequence[str]) -> str | None:
    """The ROCm a wheel was built for: its local version's `rocm7.2.4`, else the major
    version of the HIP runtime its libraries need (`libamdhip64.so.7`)."""
    for version in versions:
        if segment := carried(version, "rocm"):
            return segment.removeprefix("rocm")
    majors = hip_majors(needed)
    return majors[-1] if majors else None

"""The Requires-Dist diff and the constraint check (docs/design.md §1.5).

A requirement's identity is its normalised name (PEP 503); a name listed several times
(other markers or extras) is compared as the set of its entries, each written in a
canonical form, so the same specifiers in another order are no change. A constraint of
the consuming image (`numpy==2.3.5`) conflicts with a requirement whose marker applies
to the target environment and whose specifier admits no version the constraint admits.
Versions are compared with pre-releases allowed (ROCm torch is `2.10.0a0+git…`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version


def parse_requirement(text: str, *, source: str) -> Requirement:
    """A PEP 508 requirement; ValueError naming `source` when it is malformed."""
    try:
        return Requirement(text)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        raise ValueError(f"{source}: requirement {text!r} is malformed ({reason})") from None


def canonical_entry(requirement: Requirement) -> str:
    """One requirement written canonically: name normalised, extras and specifiers sorted."""
    text: str = canonicalize_name(requirement.name)
    if requirement.extras:
        text += "[" + ",".join(sorted(canonicalize_name(e) for e in requirement.extras)) + "]"
    if requirement.url:
        text += f" @ {requirement.url}"
        if requirement.marker:
            text += " "
    elif requirement.specifier:
        text += str(requirement.specifier)
    if requirement.marker:
        text += f"; {requirement.marker}"
    return text


def group_requirements(requirements: Iterable[str], *, source: str) -> dict[NormalizedName, frozenset[str]]:
    grouped: dict[NormalizedName, set[str]] = defaultdict(set)
    for text in requirements:
        requirement = parse_requirement(text, source=source)
        grouped[canonicalize_name(requirement.name)].add(canonical_entry(requirement))
    return {name: frozenset(entries) for name, entries in grouped.items()}


@dataclass(frozen=True)
class RequirementChange:
    """One name whose entries differ; `old`/`new` are None when it was added/removed."""

    name: str
    old: tuple[str, ...] | None
    new: tuple[str, ...] | None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "old": _joined(self.old),
            "new": _joined(self.new),
            "old_entries": list(self.old) if self.old is not None else None,
            "new_entries": list(self.new) if self.new is not None else None,
        }


def _joined(entries: tuple[str, ...] | None) -> str | None:
    return None if entries is None else " | ".join(entries)


@dataclass(frozen=True)
class Conflict:
    requirement: str
    constraint: str

    def to_json(self) -> dict[str, str]:
        return {"requirement": self.requirement, "constraint": self.constraint}


@dataclass(frozen=True)
class RequirementsDiff:
    added: tuple[RequirementChange, ...] = ()
    removed: tuple[RequirementChange, ...] = ()
    changed: tuple[RequirementChange, ...] = ()
    conflicts: tuple[Conflict, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, object]:
        return {
            "added": [change.to_json() for change in self.added],
            "removed": [change.to_json() for change in self.removed],
            "changed": [change.to_json() for change in self.changed],
            "conflicts": [conflict.to_json() for conflict in self.conflicts],
        }


def diff_requirements(
    old: Iterable[str], new: Iterable[str], *, old_source: str = "old", new_source: str = "new"
) -> RequirementsDiff:
    """What changed from `old` to `new` (Requires-Dist strings as written)."""
    before = group_requirements(old, source=old_source)
    after = group_requirements(new, source=new_source)
    added = [RequirementChange(name, None, tuple(sorted(after[name]))) for name in sorted(after.keys() - before.keys())]
    removed = [
        RequirementChange(name, tuple(sorted(before[name])), None) for name in sorted(before.keys() - after.keys())
    ]
    changed = [
        RequirementChange(name, tuple(sorted(before[name])), tuple(sorted(after[name])))
        for name in sorted(before.keys() & after.keys())
        if before[name] != after[name]
    ]
    return RequirementsDiff(tuple(added), tuple(removed), tuple(changed))


@dataclass(frozen=True, kw_only=True)
class TargetEnvironment:
    """Where the wheel will be installed: the marker environment of the consuming image."""

    python_version: str = "3.12"
    platform: str = "linux_x86_64"
    extras: tuple[str, ...] = ()

    def markers(self, extra: str = "") -> dict[str, str]:
        system, _, machine = self.platform.partition("_")
        full = self.python_version if self.python_version.count(".") >= 2 else f"{self.python_version}.0"
        return {
            "python_version": ".".join(self.python_version.split(".")[:2]),
            "python_full_version": full,
            "implementation_name": "cpython",
            "implementation_version": full,
            "platform_python_implementation": "CPython",
            "os_name": "posix" if system in {"linux", "darwin"} else "nt",
            "sys_platform": system,
            "platform_system": {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}.get(system, system),
            "platform_machine": machine,
            "platform_release": "",
            "platform_version": "",
            "extra": extra,
        }

    def applies(self, marker: Marker | None) -> bool:
        if marker is None:
            return True
        extras = ("", *(canonicalize_name(e) for e in self.extras))
        return any(marker.evaluate(self.markers(extra)) for extra in extras)


def find_conflicts(
    requirements: Iterable[str],
    constraints: Iterable[str],
    *,
    environment: TargetEnvironment = TargetEnvironment(),
    source: str = "wheel",
) -> list[Conflict]:
    """Requirements that the image's constraints make unsatisfiable in `environment`."""
    by_name: Mapping[NormalizedName, list[Requirement]] = defaultdict(list)
    for text in constraints:
        constraint = parse_requirement(text, source="constraints")
        if environment.applies(constraint.marker):
            by_name[canonicalize_name(constraint.name)].append(constraint)
    conflicts: list[Conflict] = []
    for text in requirements:
        requirement = parse_requirement(text, source=source)
        if not environment.applies(requirement.marker):
            continue
        for constraint in by_name.get(canonicalize_name(requirement.name), []):
            if not compatible(requirement.specifier, constraint.specifier):
                conflicts.append(Conflict(text, str(constraint)))
    return conflicts


def compatible(wanted: SpecifierSet, allowed: SpecifierSet) -> bool:
    """Whether some version satisfies both specifier sets (pre-releases allowed).

    Exact, and the common case: the candidates are the versions both sets name, and
    a version just above each of them, which covers every interval those bounds make.
    """
    candidates = _candidates(wanted) | _candidates(allowed)
    if not candidates:
        return True
    return any(
        wanted.contains(version, prereleases=True) and allowed.contains(version, prereleases=True)
        for version in candidates
    )


def _candidates(specifiers: SpecifierSet) -> set[Version]:
    found: set[Version] = set()
    for specifier in specifiers:
        text = specifier.version.removesuffix(".*")
        try:
            version = Version(text)
        except InvalidVersion:
            continue  # === with an arbitrary string: nothing to reason about
        found.add(version)
        release = ".".join(str(part) for part in version.release)
        found.add(Version(f"{release}.0.0.1"))  # just above, not a post-release
        bumped = (*version.release[:-1], version.release[-1] + 1)
        found.add(Version(".".join(str(part) for part in bumped)))
        if version.local is None:
            found.add(Version(f"{version.public}+wheelpin"))
    return found

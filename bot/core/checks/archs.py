"""Every ELF with HIP code carries a code object for each required GPU target (a generic
target serves its family's processors: core/wheel/amdgpu.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .base import Finding, Flag, TargetsCheck

if TYPE_CHECKING:
    from ..wheel.amdgpu import TargetId
    from ..wheel.report import WheelReport


class ArchsCheck(TargetsCheck):
    name = "require_archs"
    kind = "archs"
    label = "GPU archs"
    field = "archs"
    wants_elf = True
    flag = Flag(
        "--require-arch",
        "every ELF with HIP code must carry this GPU target (repeatable)",
        metavar="ARCH",
        repeatable=True,
    )

    def check(self, report: WheelReport, rule: tuple[TargetId, ...]) -> list[Finding]:
        from ..wheel.amdgpu import TargetId

        if not rule:
            return []
        hip = [elf for elf in report.elf if elf.gpu == "hip"]
        wanted = ", ".join(str(arch) for arch in rule)
        if not hip:
            return self.found([f"no HIP device code found, but {wanted} is required"])
        found: list[str] = []
        for elf in hip:
            targets = [TargetId.parse(text) for text in elf.targets]
            missing = [str(arch) for arch in rule if not any(target.covers(arch) for target in targets)]
            if missing:
                found.append(f"{elf.path} has no code for {', '.join(missing)} (it carries {', '.join(elf.targets)})")
        return self.found(found)

    def passed(self, rule: tuple[TargetId, ...]) -> list[str]:
        return ["HIP code for " + ", ".join(map(str, rule)) + " in every GPU library"] if rule else []


def partial_archs(report: WheelReport) -> tuple[str, ...]:
    """The HIP processors that some GPU libraries of the wheel carry and others lack."""
    from ..wheel.amdgpu import sorted_processors

    libraries = [set(elf.archs) for elf in report.elf if elf.gpu == "hip"]
    if len(libraries) < 2:
        return ()
    everywhere = libraries[0].intersection(*libraries[1:])
    return tuple(sorted_processors(libraries[0].union(*libraries[1:]) - everywhere))


def missing_wanted(wanted: Sequence[str], carried: Sequence[str]) -> list[str]:
    """The wanted archs no GPU library of the wheels has code for (`carried`: the union
    of their processors, as an image's wheel entries record it)."""
    from ..wheel.amdgpu import TargetId

    have = [TargetId.parse(arch) for arch in carried]
    return [arch for arch in wanted if not any(target.covers(TargetId.parse(arch)) for target in have)]

"""Wanted GPU targets are optional one by one (a missing one is a proposal note:
core/proposal/assemble.py), but a wheel with code for none of them is no use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Finding, Flag, TargetsCheck

if TYPE_CHECKING:
    from ..wheel.amdgpu import TargetId
    from ..wheel.report import WheelReport


class WantedArchsCheck(TargetsCheck):
    name = "wanted_archs"
    kind = "archs"
    label = "GPU archs"
    field = "archs_wanted"
    wants_elf = True
    flag = Flag(
        "--want-arch",
        "a GPU target used where present; a wheel with code for none of them fails (repeatable)",
        metavar="ARCH",
        repeatable=True,
    )

    def check(self, report: WheelReport, rule: tuple[TargetId, ...]) -> list[Finding]:
        from ..wheel.amdgpu import TargetId

        if not rule:
            return []
        targets = [TargetId.parse(text) for elf in report.elf if elf.gpu == "hip" for text in elf.targets]
        if any(target.covers(arch) for arch in rule for target in targets):
            return []
        carries = ", ".join(report.archs) or "no HIP device code"
        return self.found(
            [f"none of the wanted archs {', '.join(map(str, rule))} has a code object (the wheel carries {carries})"]
        )

    def passed(self, rule: tuple[TargetId, ...]) -> list[str]:
        return ["HIP code for at least one of " + ", ".join(map(str, rule))] if rule else []

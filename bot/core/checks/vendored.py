"""The consuming image provides ROCm, so a wheel carries none of its libraries
(core/wheel/rocmrules.py says which and how each is found)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport


class VendoredRocmCheck(WheelCheck[bool]):
    name = "allow_vendored_rocm"
    kind = "libraries"
    label = "libraries"
    field = "allow_vendored_rocm"
    flag = Flag(
        "--allow-vendored-rocm",
        "allow ROCm's own libraries in the wheel (libamdhip64-5f3a9c1e.so.7 that "
        "auditwheel grafted); by default the image must provide them",
    )
    default = False

    def check(self, report: WheelReport, rule: bool) -> list[Finding]:
        from ..wheel.rocmrules import vendored_rocm_problems

        return [] if rule else self.found(vendored_rocm_problems(report))

"""The ABI a wheel's local version promises: the segments its image tag promises
(torch2.10, cxx11abi1: core/wheel/localversion.py), and a ROCm it names (rocm7.2.4) that is the
one its ELF files link against (core/wheel/rocmrules.py), judged whenever both are there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport


class SegmentsCheck(WheelCheck[tuple[str, ...]]):
    name = "local_segments"
    kind = "abi"
    label = "ABI"
    field = "local_segments"
    flag = Flag(
        "--expect-segment",
        "the local version must carry this segment, such as torch2.10 (repeatable)",
        metavar="SEGMENT",
        repeatable=True,
    )
    default = ()

    def accept(self, value: Any) -> tuple[str, ...]:
        from ..wheel.localversion import normalized_segment

        return tuple(normalized_segment(segment) for segment in value)

    def check(self, report: WheelReport, rule: tuple[str, ...]) -> list[Finding]:
        from ..wheel.localversion import segment_problems
        from ..wheel.rocmrules import rocm_major_problems

        return self.found(segment_problems(report.version, rule) + rocm_major_problems(report))

    def passed(self, rule: tuple[str, ...]) -> list[str]:
        return ["local version carries " + ", ".join(rule)] if rule else []

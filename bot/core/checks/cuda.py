"""A ROCm wheel links no CUDA library and carries no CUDA device code: either means the
build took its CUDA variant."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Finding, Flag, Given, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport

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


class CudaCheck(WheelCheck[bool]):
    name = "rocm"
    kind = "cuda"
    label = "CUDA"
    field = "rocm"
    flag = Flag("--no-rocm-check", "allow CUDA libraries and CUDA device code")
    default = True

    def from_flag(self, given: Given) -> bool:
        return not given  # the check is on unless the switch is given

    def check(self, report: WheelReport, rule: bool) -> list[Finding]:
        if not rule:
            return []
        found = self.needing(report, CUDA_LIBRARIES, "a CUDA")
        for elf in report.elf:
            if elf.gpu == "cuda":
                archs = f" ({', '.join(elf.archs)})" if elf.archs else ""
                found.append(Finding(self.kind, f"{elf.path} carries CUDA device code{archs}"))
        return found

    def passed(self, rule: bool) -> list[str]:
        return ["no CUDA library or CUDA device code"] if rule else []

"""Some ELF of the wheel needs (DT_NEEDED) a library of each required glob, as the image
provides it: a copy auditwheel grafted into the wheel (libamdhip64-5f3a9c1e.so.7) is not."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport


class NeededCheck(WheelCheck[tuple[str, ...]]):
    name = "require_needed"
    kind = "libraries"
    label = "libraries"
    field = "require_needed"
    wants_elf = True
    flag = Flag(
        "--require-needed", "some ELF must need a library matching GLOB (repeatable)", metavar="GLOB", repeatable=True
    )
    default = ()

    def check(self, report: WheelReport, rule: tuple[str, ...]) -> list[Finding]:
        from ..wheel.rocmlibs import grafted

        provided = [library for elf in report.elf for library in elf.needed if not grafted(library)]
        return self.found(
            [
                f"no ELF file in the wheel needs a library matching {pattern}"
                for pattern in rule
                if not any(fnmatch.fnmatchcase(library, pattern) for library in provided)
            ]
        )

    def passed(self, rule: tuple[str, ...]) -> list[str]:
        return [f"needs {glob}" for glob in rule]

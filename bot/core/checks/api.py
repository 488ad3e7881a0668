"""The wheel checks, by name, in the order they run: the order `wheel inspect` lists a
wheel's problems in, its flags' order in `--help`, and the order of the lines a proposal's
Verification section says. A new check is one module in this folder and one line here
(docs/wheels.md, "Add a check"); tests/core/checks/test_check_contract.py holds each to the
contract of base.WheelCheck.

The CLI builds `wheel inspect`'s flags from CHECKS on every start-up (`wheelpin --help`
too), so a check module imports what it judges with (packaging, amdgpu, localversion…)
inside the methods that judge: importing this registry loads no more than the standard
library's typing and abc.
"""

from __future__ import annotations

from typing import Any

from .archs import ArchsCheck
from .base import WheelCheck
from .commit import CommitCheck
from .cuda import CudaCheck
from .forbidden import ForbiddenCheck
from .glibc import GlibcCheck
from .name import NameCheck
from .needed import NeededCheck
from .segments import SegmentsCheck
from .variant import VariantArchsCheck
from .vendored import VendoredRocmCheck
from .wanted import WantedArchsCheck
from .wheelset import VariantSetCheck, WheelSetCheck

CHECKS: dict[str, WheelCheck[Any]] = {
    check.name: check
    for check in (
        NameCheck(),
        CommitCheck(),
        WheelSetCheck(),
        VariantSetCheck(),
        SegmentsCheck(),
        ArchsCheck(),
        WantedArchsCheck(),
        VariantArchsCheck(),
        CudaCheck(),
        ForbiddenCheck(),
        NeededCheck(),
        VendoredRocmCheck(),
        GlibcCheck(),
    )
}

# The kinds of problem in the order a person should read them: the root cause first (a
# wheel of another distribution is most often the build's non-ROCm variant, and explains
# every CUDA library and missing arch after it). "integrity" is the archive's own (the
# reading of the wheel finds it, no rule asks it); a check of a kind not placed here is
# read after these.
_READ_FIRST = ("name", "integrity", "set", "commit", "abi", "cuda", "archs", "libraries")
KINDS: tuple[str, ...] = tuple(dict.fromkeys([*_READ_FIRST, *(check.kind for check in CHECKS.values())]))

LABELS: dict[str, str] = {"integrity": "archive", **{check.kind: check.label for check in CHECKS.values()}}

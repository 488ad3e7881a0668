"""AMDGPU target ids: parsing, ordering, and which code objects serve which GPUs.

Used by the verify step (docs/design.md §1.3): a wheel must carry code for every GPU arch a
component requires. A target id is a processor plus optional features
(`gfx90a:xnack-:sramecc+`); a generic processor (`gfx9-4-generic`) serves every
processor of its family, as listed in LLVM's AMDGPUUsage ("Generic processors").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# LLVM AMDGPUUsage, table "AMDGPU Generic Processors" (LLVM 20–22): each generic
# processor and the processors its code objects run on.
GENERIC_FAMILIES: dict[str, frozenset[str]] = {
    "gfx9-generic": frozenset({"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}),
    "gfx9-4-generic": frozenset({"gfx940", "gfx941", "gfx942", "gfx950"}),
    "gfx10-1-generic": frozenset({"gfx1010", "gfx1011", "gfx1012", "gfx1013"}),
    "gfx10-3-generic": frozenset({"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}),
    "gfx11-generic": frozenset(
        {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"}
    ),
    "gfx12-generic": frozenset({"gfx1200", "gfx1201"}),
    "gfx12-5-generic": frozenset({"gfx1250", "gfx1251"}),
}

# Every processor of LLVM's AMDGPUUsage "Processors" table (LLVM 22), for catching typos.
KNOWN_PROCESSORS: frozenset[str] = frozenset(
    """gfx600 gfx601 gfx602 gfx700 gfx701 gfx702 gfx703 gfx704 gfx705 gfx801 gfx802 gfx803
    gfx805 gfx810 gfx900 gfx902 gfx904 gfx906 gfx908 gfx909 gfx90a gfx90c gfx940 gfx941 gfx942
    gfx950 gfx1010 gfx1011 gfx1012 gfx1013 gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035
    gfx1036 gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151 gfx1152 gfx1153 gfx1200 gfx1201
    gfx1250 gfx1251""".split()
) | frozenset(GENERIC_FAMILIES)

_PROCESSOR = re.compile(r"^gfx(?:[0-9]{1,2}[0-9a-f]{2}|[0-9]{1,2}(?:-[0-9]+)?-generic)$")
_FEATURE = re.compile(r"^[a-z][a-z0-9_-]*[+-]$")
_SPECIFIC = re.compile(r"^gfx([0-9]{1,2})([0-9a-f])([0-9a-f])$")
_GENERIC = re.compile(r"^gfx([0-9]{1,2})(?:-([0-9]+))?-generic$")


@dataclass(frozen=True, order=False)
class TargetId:
    """One AMDGPU target id: `processor` and its features as written (`xnack-`)."""

    processor: str
    features: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> TargetId:
        """Parse `gfx90a:xnack-`; raise ValueError for anything that is not a target id."""
        processor, *features = text.strip().split(":")
        if not _PROCESSOR.match(processor):
            raise ValueError(f"{text!r} is not an AMDGPU processor name (such as gfx942)")
        for feature in features:
            if not _FEATURE.match(feature):
                raise ValueError(f"{text!r} has a malformed feature {feature!r} (want e.g. xnack-)")
        return cls(processor, tuple(features))

    @classmethod
    def parse_known(cls, text: str) -> TargetId:
        """Parse, and refuse processors LLVM does not know (a typo such as gfx9500)."""
        target = cls.parse(text)
        if target.processor not in KNOWN_PROCESSORS:
            raise ValueError(f"{target.processor!r} is not an AMDGPU processor LLVM knows")
        return target

    @property
    def is_generic(self) -> bool:
        return self.processor.endswith("-generic")

    def __str__(self) -> str:
        return ":".join((self.processor, *self.features))

    def covers(self, wanted: TargetId) -> bool:
        """Whether a code object built for this target runs on the `wanted` one.

        The processor must be the same, or this is a generic processor whose family
        holds it. A feature named by `wanted` must not be set the other way here: a
        code object with no xnack setting runs in either mode, `xnack-` only without.
        A `wanted` with no features is served by any setting of them.
        """
        if wanted.processor != self.processor:
            family = GENERIC_FAMILIES.get(self.processor)
            if family is None or wanted.processor not in family:
                return False
        mine = {f[:-1]: f[-1] for f in self.features}
        return all(mine.get(f[:-1], f[-1]) == f[-1] for f in wanted.features)


def processor_sort_key(processor: str) -> tuple[int, int, int, str]:
    """Order processors by generation, as AMD lists them: gfx908 < gfx90a < gfx942 < gfx1030.

    Generic processors sort after every specific processor of their generation.
    """
    specific = _SPECIFIC.match(processor)
    if specific:
        major, minor, stepping = specific.groups()
        return (int(major), int(minor, 16), int(stepping, 16), "")
    generic = _GENERIC.match(processor)
    if generic:
        major, minor = generic.groups()
        return (int(major), 16, int(minor or "0"), processor)
    return (999, 0, 0, processor)


def sorted_processors(processors: set[str] | frozenset[str] | list[str]) -> list[str]:
    return sorted(set(processors), key=processor_sort_key)

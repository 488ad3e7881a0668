"""A variant wheel's properties (PEP 825: `namespace :: feature :: value` in its
dist-info's variant.json) that name AMD GPU targets are promises an installer picks the
wheel by, so each must be kept: every ELF with HIP code carries code for each target named.
The names are the AMD variant provider's (github.com/wheelnext/amd-variant-provider):
namespace `amd` (plugin.py, `AMDVariantPlugin.namespace`), feature `gfx_arch`
(plugin.py's `AMDVariantFeatureKey.GFX`) or `gfx_archs` (detect_rocm.py's
`AMDVariantFeatureKey.GFX_ARCHS`), values such as gfx942. PEP 825 makes a wheel fit a
system when one value of each feature does, so a wheel that lists gfx942 and gfx950 is
installed on either: both need code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Finding, Flag, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport

AMD_NAMESPACE = "amd"
AMD_TARGET_FEATURES = frozenset({"gfx_arch", "gfx_archs"})


class VariantArchsCheck(WheelCheck[bool]):
    name = "allow_variant_mismatch"
    kind = "variant"
    label = "variant"
    field = "allow_variant_mismatch"
    wants_elf = True
    flag = Flag(
        "--allow-variant-mismatch",
        "allow a variant wheel whose `amd :: gfx_arch` properties name GPU "
        "targets it has no code for; by default each named target must have a code object in every GPU "
        "library",
    )
    default = False

    def check(self, report: WheelReport, rule: bool) -> list[Finding]:
        if rule or report.variant is None:
            return []
        from ..wheel.amdgpu import TargetId

        promised = report.variant.values(AMD_NAMESPACE, AMD_TARGET_FEATURES)
        if not promised:
            return []
        said = f"variant {report.variant.label} promises " + ", ".join(promised)
        found: list[str] = []
        targets: list[TargetId] = []
        for value in promised:
            try:
                targets.append(TargetId.parse(value))
            except ValueError:
                found.append(f"{said}, but {value} is not an AMDGPU processor name (such as gfx942)")
        hip = [elf for elf in report.elf if elf.gpu == "hip"]
        if targets and not hip:
            found.append(f"{said}, but the wheel has no HIP device code")
        for elf in hip:
            carried = [TargetId.parse(text) for text in elf.targets]
            missing = [str(target) for target in targets if not any(have.covers(target) for have in carried)]
            if missing:
                found.append(
                    f"{said}, but {elf.path} has no code for {', '.join(missing)} (it carries {', '.join(elf.targets)})"
                )
        return self.found(found)

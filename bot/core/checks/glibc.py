"""The wheel's platform tag promises to run on the consuming images' glibc. PEP 600 defines
the promise: a `manylinux_X_Y_ARCH` wheel works on any distribution with glibc X.Y or newer
(manylinux1, manylinux2010 and manylinux2014 are its legacy names for 2.5, 2.12 and 2.17).
A `linux_ARCH` tag (PEP 425's default) promises nothing, nor does musllinux (musl, not
glibc), so with this rule set such a wheel is refused: what it needs is unknown, and
`auditwheel repair` gives it a tag that says. A pure wheel (`any`) runs anywhere."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .base import Finding, Flag, Given, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport

Glibc = tuple[int, int]

_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_")
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}  # PEP 600 "Legacy manylinux tags"
_VERSION = re.compile(r"^(\d+)\.(\d+)$")


def glibc_version(text: str) -> Glibc:
    """`2.28` as (2, 28); ValueError for anything else."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a glibc version such as 2.28")
    return int(match.group(1)), int(match.group(2))


def glibc_needed(platform: str) -> Glibc | None:
    """The glibc a platform tag promises to run on, None when it promises none."""
    match = _MANYLINUX.match(platform)
    if match is not None:
        return int(match.group(1)), int(match.group(2))
    return _LEGACY.get(platform.split("_", 1)[0])


class GlibcCheck(WheelCheck[Glibc | None]):
    name = "max_glibc"
    kind = "glibc"
    label = "glibc"
    field = "max_glibc"
    flag = Flag(
        "--max-glibc",
        "the consuming images' glibc, such as 2.28: the wheel's manylinux tag must need no newer one",
        metavar="VERSION",
    )
    default = None

    def accept(self, value: Any) -> Glibc | None:
        return glibc_version(value) if isinstance(value, str) else value

    def from_flag(self, given: Given) -> Glibc | None:
        return self.accept(given)

    def check(self, report: WheelReport, rule: Glibc | None) -> list[Finding]:
        if rule is None:
            return []
        from ..wheel.metadata import wheel_filename_parts

        platforms = sorted({tag.platform for tag in wheel_filename_parts(report.filename)[3]})
        needs = sorted((glibc, platform) for platform in platforms if (glibc := glibc_needed(platform)))
        if "any" in platforms or any(glibc <= rule for glibc, _ in needs):
            return []
        have = ".".join(map(str, rule))
        if needs:
            (major, minor), platform = needs[0]
            return self.found(
                [
                    f"platform tag {platform} needs glibc {major}.{minor} or newer, the images have "
                    f"{have} (wheel.max_glibc)"
                ]
            )
        return self.found(
            [
                f"platform tag {', '.join(platforms)} promises no glibc version (PEP 600: only a "
                "manylinux tag does); auditwheel repair gives the wheel one"
            ]
        )

    def passed(self, rule: Glibc | None) -> list[str]:
        return [] if rule is None else [f"manylinux tag needs glibc {'.'.join(map(str, rule))} at most"]

"""What a wheel's local version says about its build (docs/design.md §1.3): the segments
a component requires (`wheel.local_segments`, e.g. torch2.10 and cxx11abi1, the ABI its
image tag promises), and the values image tag placeholders take from it (`{local_torch}`).

A local version is the part after `+`, read as `packaging` normalizes it (lower case,
`-` and `_` written as `.`; PEP 440, local version identifiers). It is a run of
dot-separated parts, so a segment such as `torch2.10` spans two parts: `torch2` and `10`.
A segment is named by its letters before its trailing number: `torch` in `torch2.10`,
`cxx11abi` in `cxx11abi1`, `rocm` in `rocm7.2.4`. What a wheel carries under a name is
the first part that is that name and digits, with the all-digit parts that follow it.
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

_NAME = re.compile(r"^([a-z0-9]*?[a-z])[0-9]*$")
# Segments that say an ABI the wheel's compiled code binds to whatever its tag says: the
# torch it was built against (its C++ extension links libtorch) and libstdc++'s dual ABI.
ABI_NAMES = ("torch", "cxx11abi")
_COMMIT_PART = re.compile(r"^g(?:it)?[0-9a-f]{7,40}$")  # setuptools-scm's g<hex>, a git<hex> build note
_SEGMENT = re.compile(r"^[a-z0-9]+(?:\.[a-z0-9]+)*$")
_PLACEHOLDER = re.compile(r"^local_([a-z][a-z0-9]*?)(_digits)?$")


def normalized_segment(text: str) -> str:
    """`text` as a local version writes it (lower case, `-`/`_` as `.`); ValueError if it
    is not a run of letters and digits between dots, or has no name (letters) of its own."""
    segment = re.sub(r"[-_]", ".", text.strip().lower())
    if not _SEGMENT.match(segment) or segment_name(segment) is None:
        raise ValueError(f"{text!r} is not a local version segment such as torch2.10 or cxx11abi1")
    return segment


def segment_name(segment: str) -> str | None:
    """The name of a segment: its text before the trailing number (`torch` of torch2.10)."""
    match = _NAME.match(segment.split(".")[0])
    return match.group(1) if match else None


def local_parts(version: str) -> list[str]:
    """The dot-separated parts of `version`'s local version, normalized; none if it has none."""
    try:
        local = Version(version).local
    except InvalidVersion:
        return []
    return local.split(".") if local else []


def carried(version: str, name: str) -> str | None:
    """What `version` carries under segment name `name` (`torch2.11`), or None."""
    parts = local_parts(version)
    for index, part in enumerate(parts):
        if part.startswith(name) and part[len(name) :].isdigit():
            end = index + 1
            while end < len(parts) and parts[end].isdigit():
                end += 1
            return ".".join(parts[index:end])
    return None


def segments(version: str) -> list[str]:
    """Every named segment of `version`'s local version but those naming a commit:
    `rocm7.2.4`, `torch2.10`, `cxx11abi1` of `0.5.6+g05fc77a0.rocm7.2.4.torch2.10.cxx11abi1`."""
    found: list[str] = []
    for part in local_parts(version):
        if part.isdigit() and found:
            found[-1] += "." + part
        elif _COMMIT_PART.match(part) or segment_name(part) is None:
            found.append("")  # a part that is no segment ends the one before it
        else:
            found.append(part)
    return [segment for segment in found if segment and not segment.startswith(".")]


def segment_problems(version: str, wanted: Sequence[str]) -> list[str]:
    """One sentence per wanted segment the version does not carry. A segment is carried
    when a run of the local version starts with all its parts (torch2.10 is carried by
    torch2.10 and torch2.10.1, not by torch2.1 nor torch2.11)."""
    found: list[str] = []
    for segment in wanted:
        name = segment_name(segment) or segment
        has = carried(version, name)
        if has is not None and has.split(".")[: segment.count(".") + 1] == segment.split("."):
            continue
        instead = f"carries {has}" if has is not None else f"carries no {name} segment"
        found.append(f"version {version} {instead}, expected {segment} (wheel.local_segments)")
    return found


def is_local_placeholder(field: str) -> bool:
    """Whether a template field is `{local_NAME}` or `{local_NAME_digits}`."""
    return _PLACEHOLDER.match(field) is not None


def local_value(version: str, field: str) -> str | None:
    """The value of placeholder `field` for `version`: `{local_torch}` is `2.10` for a
    wheel carrying torch2.10, `{local_torch_digits}` is `210`; None if not carried."""
    match = _PLACEHOLDER.match(field)
    if match is None:
        return None
    name, digits = match.group(1), match.group(2) is not None
    has = carried(version, name)
    if has is None:
        return None
    value = has[len(name) :]
    return value.replace(".", "") if digits else value

"""Upstream tags in version order (docs/design.md §1.1): which tags an `upstream.tags`
pattern matches, the version each carries, and how two versions compare, so the newest
release is followed and an older one is never proposed over a newer pin.

A pattern is a glob (`v*`) or names its version part (`v{version}-rocm`; glob characters
may surround it). A version compares as PEP 440 when every candidate parses as one, else
loosely, by its numeric components (as Renovate's "loose" versioning does): `0.5.10`
after `0.5.9`, a bare release after its suffixed builds (`1.2.0` after `1.2.0-rc1`).
Pure: no I/O.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

PLACEHOLDER = "{version}"
MAX_TAG = 256  # a git ref name longer than this is not a release tag worth comparing


@dataclass(frozen=True)
class TagPattern:
    text: str
    regex: re.Pattern[str]
    named: bool  # the version part is named by `{version}`; else the tag without a leading `v`

    @classmethod
    def parse(cls, text: str) -> TagPattern:
        if text.count(PLACEHOLDER) > 1:
            raise ValueError(f"tag pattern {text!r} names {PLACEHOLDER} more than once")
        if "{" in text.replace(PLACEHOLDER, "") or "}" in text.replace(PLACEHOLDER, ""):
            raise ValueError(f"tag pattern {text!r}: the only placeholder is {PLACEHOLDER}")
        if PLACEHOLDER not in text:
            return cls(text, re.compile(fnmatch.translate(text)), False)
        before, after = text.split(PLACEHOLDER)
        body = _glob(before) + r"(?P<version>[0-9][0-9A-Za-z.+_-]*?)" + _glob(after)
        return cls(text, re.compile(rf"(?s:{body})\Z"), True)

    def version_of(self, tag: str) -> str | None:
        """The version `tag` carries, or None when the pattern does not match it."""
        if len(tag) > MAX_TAG:
            return None
        match = self.regex.match(tag)
        if match is None:
            return None
        return match.group("version") if self.named else tag.removeprefix("v")


ANY_RELEASE = TagPattern(  # any tag that reads as a release: `1.2`, `v1.2.3-rocm`
    "v{version}", re.compile(r"v?(?P<version>[0-9][0-9A-Za-z.+_-]*)\Z"), True)


def _glob(part: str) -> str:
    """A glob's characters (`*`, `?`, `[…]`) as a regular expression, the rest literal."""
    return fnmatch.translate(part).removeprefix("(?s:").removesuffix(")\\Z")


_NUMBERS = re.compile(r"\d+(?:\.\d+)*")
_TOKEN = re.compile(r"\d+|[A-Za-z]+")


def loose_key(version: str) -> tuple[Any, ...]:
    """Numeric components first, then a bare release after a suffixed one, then the
    suffix's own tokens (numbers as numbers)."""
    match = _NUMBERS.match(version)
    numbers = tuple(int(n) for n in match.group().split(".")) if match else ()
    suffix = version[match.end():] if match else version
    tokens = tuple((0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in _TOKEN.findall(suffix))
    return (numbers, 1 if not suffix else 0, tokens)


def ordering(versions: Iterable[str]) -> Any:
    """A sort key over `versions`: PEP 440 when all of them parse, else loose."""
    listed = list(versions)
    try:
        parsed = {v: Version(v) for v in listed}
    except InvalidVersion:
        return loose_key
    return lambda v: parsed[v] if v in parsed else loose_key(v)


def newest(tags: Mapping[str, str], pattern: TagPattern) -> str | None:
    """The tag with the highest version among `tags` (name → commit) that the pattern
    matches; None when none does. Creation order never matters: a backport tagged later
    than a higher release is not the newest."""
    versions = {tag: v for tag in tags if (v := pattern.version_of(tag)) is not None}
    if not versions:
        return None
    key = ordering(versions.values())
    return max(versions, key=lambda tag: (key(versions[tag]), tag))


def tag_on(commit: str, tags: Mapping[str, str], pattern: TagPattern) -> str | None:
    """The matching tag of the highest version on `commit` (None: it has none)."""
    return newest({tag: commit_ for tag, commit_ in tags.items() if commit_ == commit}, pattern)


def release_of(commit: str, tags: Mapping[str, str], pattern: TagPattern) -> str | None:
    """The highest version among the matching tags on `commit` (None: it has none)."""
    found = tag_on(commit, tags, pattern)
    return pattern.version_of(found) if found is not None else None


def is_older(candidate: str, than: str) -> bool:
    """True when version `candidate` is strictly older than version `than`."""
    key = ordering([candidate, than])
    return bool(key(candidate) < key(than))

"""Upstream tags in version order (docs/design.md §1.1): which tags an `upstream.tags`
pattern matches, the version each carries, and the newest of them, so the newest release
is followed and an older one is never proposed over a newer pin.

A pattern is a glob (`v*`) or names its version part (`v{version}-rocm`; glob characters
may surround it). Versions are told valid and ordered by a versioning
(`core/versioning/`): the one `upstream.versioning` names, else PEP 440 when every
candidate is one and loose otherwise (`0.5.10` after `0.5.9`, `1.2.0` after `1.2.0-rc1`).
A tag whose version the versioning refuses is not a release. Pure: no I/O.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .api import versioning_of
from .loose import loose_key as loose_key  # the loose order's key, for callers sorting loosely

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
    "v{version}", re.compile(r"v?(?P<version>[0-9][0-9A-Za-z.+_-]*)\Z"), True
)


def _glob(part: str) -> str:
    """A glob's characters (`*`, `?`, `[…]`) as a regular expression, the rest literal."""
    return fnmatch.translate(part).removeprefix("(?s:").removesuffix(")\\Z")


def newest(tags: Mapping[str, str], pattern: TagPattern, versioning: str | None = None) -> str | None:
    """The tag with the highest version among `tags` (name → commit) that the pattern
    matches, by `versioning` (a name of VERSIONINGS; None: the default); None when none
    does. Creation order never matters: a backport tagged later than a higher release is
    not the newest."""
    versions = {tag: v for tag in tags if (v := pattern.version_of(tag)) is not None}
    order = versioning_of(versioning, versions.values())
    releases = {tag: v for tag, v in versions.items() if order.is_valid(v)}
    if not releases:
        return None
    return max(releases, key=lambda tag: (order.key(releases[tag]), tag))


def tag_on(commit: str, tags: Mapping[str, str], pattern: TagPattern, versioning: str | None = None) -> str | None:
    """The matching tag of the highest version on `commit` (None: it has none)."""
    return newest({tag: commit_ for tag, commit_ in tags.items() if commit_ == commit}, pattern, versioning)


def release_of(commit: str, tags: Mapping[str, str], pattern: TagPattern, versioning: str | None = None) -> str | None:
    """The highest version among the matching tags on `commit` (None: it has none)."""
    found = tag_on(commit, tags, pattern, versioning)
    return pattern.version_of(found) if found is not None else None


def is_older(candidate: str, than: str, versioning: str | None = None) -> bool:
    """True when version `candidate` is strictly older than version `than` (False when
    the versioning refuses either)."""
    order = versioning_of(versioning, [candidate, than])
    return order.is_valid(candidate) and order.is_valid(than) and order.is_older(candidate, than)

"""The `loose` versioning: a tolerant order for release tags that are not PEP 440
(`0.5.10-rocm`, `2026.01-nightly`), after the idea of Renovate's "loose" versioning
(https://docs.renovatebot.com/modules/versioning/loose/): sort what can be sorted, skip
what cannot.

The rule: a version opens with its release, numeric parts separated by dots, compared as
numbers part by part (`0.5.10` after `0.5.9`; a shorter release before a longer one it
starts: `1.2` before `1.2.0`; a version opening with no number before every one that does).
On equal releases, the bare release comes after any suffixed one (`1.2.0` after `1.2.0-rc1`,
and after `1.2.0-rocm` too: any suffix is read as a pre-release's). Then the suffixes
compare token by token, a token being a run of digits or of letters, with separators
ignored: digits as numbers, letters as text without case, a number before a word (`rc2`
before `rc10`, `rc1` before `rocm`). A version with no letter and no digit has nothing to
order by and is not one."""

from __future__ import annotations

import re

from .base import Examples, Versioning

_RELEASE = re.compile(r"\d+(?:\.\d+)*")
_TOKEN = re.compile(r"\d+|[A-Za-z]+")

LooseKey = tuple[tuple[int, ...], int, tuple[tuple[int, int, str], ...]]


def loose_key(version: str) -> LooseKey:
    """The release's numbers, then a bare release after a suffixed one, then the suffix's
    own tokens (numbers as numbers, before words)."""
    match = _RELEASE.match(version)
    numbers = tuple(int(n) for n in match.group().split(".")) if match else ()
    suffix = version[match.end() :] if match else version
    tokens = tuple((0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in _TOKEN.findall(suffix))
    return (numbers, 1 if not suffix else 0, tokens)


class Loose(Versioning):
    name = "loose"
    examples = Examples(
        ascending=(
            "nightly",
            "0.5.3-rocm",
            "0.5.9-rocm",
            "0.5.10-rc1",
            "0.5.10-rc2",
            "0.5.10-rc10",
            "0.5.10-rocm",
            "0.5.10",
            "0.5.10.1",
            "2026.01-nightly",
            "2026.01",
        ),
        invalid=("", "-", "..", "+_-"),
        prereleases=(("1.2.0-rc1", "1.2.0"), ("1.2.0-beta.2", "1.2.0"), ("3.0-alpha", "3.0")),
    )

    def is_valid(self, version: str) -> bool:
        return _TOKEN.search(version) is not None

    def key(self, version: str) -> LooseKey:
        return loose_key(version)

"""Which superseded wheel images may go (docs/design.md §1, step 7; `image.prune_after_days`).

Pure decisions, no I/O: `loop/prune.py` reads the registry and the downstream's branches
and deletes what `decide` says. A tag may go only when all of these hold:
- it is one of this component's tags (its tag template matches it);
- neither it nor its digest is written in any pin file on any branch of the downstream
  (the base, open proposals, anyone's branch), and it is not the image of the head;
- wheelpin first saw it so, unpinned, at least the grace period ago (kept in the state
  file: a tag pinned again starts its grace afresh).

What shares its digest decides too. A registry deletes a manifest by digest with every
tag naming it (distribution/distribution answers a tag delete with UNSUPPORTED, PR
#3174), so a digest goes only when every tag naming it may go. A tag whose image another,
kept tag names (someone re-tagged it) is kept: a delete by tag alone is only a MAY of the
OCI Distribution Spec v1.1 ("Deleting tags"), and a registry that took it for a manifest
delete would take the kept tag with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def pinned_words(texts: Iterable[str]) -> frozenset[str]:
    """Every tag-like word and every `sha256:` digest written in `texts`: a tag or digest
    found here is pinned somewhere, however the file spells the reference around it (an
    `ARG`, a `FROM`, a comment, a tag and digest split over two lines)."""
    words: set[str] = set()
    for text in texts:
        for word in _TOKEN.findall(text):
            words.add(word)
            if _HEX64.fullmatch(word):
                words.add("sha256:" + word)
    return frozenset(words)


@dataclass(frozen=True)
class PruneDecision:
    by_digest: dict[str, tuple[str, ...]] = field(default_factory=dict)  # digest → its tags, all of which go
    shared: tuple[str, ...] = ()  # tags that may go, kept as a kept tag names their image
    unpinned: dict[str, float] = field(default_factory=dict)  # our tags unpinned → since when: the new record
    waiting: int = 0  # tags unpinned but still within their grace period


def decide(
    tags: Mapping[str, str],
    *,
    ours: re.Pattern[str],
    pinned: frozenset[str],
    keep: Iterable[str],
    since: Mapping[str, float],
    now: float,
    grace_seconds: float,
) -> PruneDecision:
    """`tags`: every tag of the repository → its digest. `keep`: tags and digests kept
    whatever the branches say (the head's image, one published this pass)."""
    kept = pinned | frozenset(keep)
    unpinned = {
        tag: since.get(tag, now)
        for tag, digest in tags.items()
        if ours.match(tag) and tag not in kept and digest not in kept
    }
    due = {tag for tag, first in unpinned.items() if now - first >= grace_seconds}
    named: dict[str, list[str]] = {}
    for tag, digest in tags.items():
        named.setdefault(digest, []).append(tag)
    by_digest: dict[str, tuple[str, ...]] = {}
    shared: list[str] = []
    for digest, names in sorted(named.items()):
        going = sorted(tag for tag in names if tag in due)
        if going and len(going) == len(names):
            by_digest[digest] = tuple(going)
        elif not all(tag in unpinned for tag in names):  # a kept tag names it; else it waits for the last
            shared += going
    return PruneDecision(by_digest, tuple(shared), unpinned, len(unpinned) - len(due))

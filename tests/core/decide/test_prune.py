"""Which superseded wheel images may go (core/decide/prune.py): only wheelpin's own tags, named
nowhere on any branch, past their grace period, and never an image another kept tag names."""

from __future__ import annotations

from bot.core.config.templates import tag_pattern
from bot.core.decide.prune import decide, pinned_words

OURS = tag_pattern("lmcache-v{version}-g{sha8}-rocm-torch{local_torch_digits}", component="lmcache")
DAY = 86_400.0
A, B, C, D = ("sha256:" + ch * 64 for ch in "abcd")
OLD = "lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210"
NEW = "lmcache-v0.5.7.dev12-g3d3aa833-rocm-torch210"
MID = "lmcache-v0.5.7.dev3-g9e1f0c2b-rocm-torch210"


def test_pinned_words_find_tags_and_digests_however_the_file_spells_them() -> None:
    words = pinned_words(
        [
            f"ARG LMCACHE_IMAGE=docker.io/rocm/atom-dev:{OLD}@{A}\n",
            f"# was {MID}\nARG LMCACHE_TAG={NEW}\nARG LMCACHE_DIGEST={B.split(':')[1]}\n",
        ]
    )
    assert {OLD, MID, NEW, A, B} <= words
    assert "lmcache-v0.5.7" not in words and "g3d3aa833" not in words  # whole words only


def test_only_our_unpinned_tags_past_their_grace_go() -> None:
    tags = {OLD: A, MID: B, NEW: C, "latest": D, "lmcache-nightly": D}
    pinned = pinned_words([f"FROM rocm/atom-dev:{NEW}@{C}"])
    first = decide(tags, ours=OURS, pinned=pinned, keep=(), since={}, now=10 * DAY, grace_seconds=7 * DAY)
    assert first.by_digest == {} and first.unpinned == {OLD: 10 * DAY, MID: 10 * DAY} and first.waiting == 2
    later = decide(tags, ours=OURS, pinned=pinned, keep=(), since=first.unpinned, now=17 * DAY, grace_seconds=7 * DAY)
    assert later.by_digest == {A: (OLD,), B: (MID,)} and later.waiting == 0


def test_a_tag_pinned_again_starts_its_grace_afresh() -> None:
    tags = {OLD: A}
    pinned = pinned_words([f"image {A}"])  # pinned by digest alone, on some branch
    assert (
        decide(tags, ours=OURS, pinned=pinned, keep=(), since={OLD: 0.0}, now=30 * DAY, grace_seconds=DAY).unpinned
        == {}
    )
    again = decide(tags, ours=OURS, pinned=frozenset(), keep=(), since={}, now=31 * DAY, grace_seconds=DAY)
    assert again.unpinned == {OLD: 31 * DAY} and again.by_digest == {}


def test_the_heads_image_is_kept_and_a_shared_image_is_kept_with_a_word() -> None:
    tags = {OLD: A, MID: B, NEW: C, "keep-this-one": A}
    decision = decide(
        tags, ours=OURS, pinned=frozenset(), keep={NEW, C}, since={OLD: 0.0, MID: 0.0}, now=DAY * 30, grace_seconds=DAY
    )
    assert decision.by_digest == {B: (MID,)}
    assert decision.shared == (OLD,)  # deleting A would take `keep-this-one` with it


def test_two_of_our_tags_on_one_image_go_together_or_not_at_all() -> None:
    other = "lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch211"
    tags = {OLD: A, other: A}
    both = decide(
        tags, ours=OURS, pinned=frozenset(), keep=(), since={OLD: 0.0, other: 0.0}, now=DAY * 9, grace_seconds=DAY
    )
    assert both.by_digest == {A: (OLD, other)}
    one = decide(
        tags, ours=OURS, pinned=frozenset(), keep=(), since={OLD: 0.0, other: DAY * 8.5}, now=DAY * 9, grace_seconds=DAY
    )
    assert one.by_digest == {} and one.shared == ()  # both go when the later one's grace ends

"""Tag patterns and version order (bot/core/versioning/tags.py): PEP 440 where every version
parses, numeric components otherwise, as Renovate's loose versioning orders them
(https://docs.renovatebot.com/modules/versioning/loose/)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config.model import Upstream
from bot.core.versioning.tags import TagPattern, is_older, loose_key, newest


@pytest.mark.parametrize(
    ("pattern", "tag", "version"),
    [
        ("v{version}-rocm", "v0.5.10-rocm", "0.5.10"),
        ("v{version}-rocm", "v0.5.10-cuda", None),
        ("v{version}", "v1.2.3rc1", "1.2.3rc1"),
        ("release-{version}", "release-2026.01", "2026.01"),
        ("v*", "v0.5.3-rocm", "0.5.3-rocm"),
        ("*-rocm", "nightly-rocm", "nightly-rocm"),
        ("v{version}-rocm", "vx-rocm", None),  # a version starts with a digit
    ],
)
def test_the_version_a_tag_carries(pattern: str, tag: str, version: str | None) -> None:
    assert TagPattern.parse(pattern).version_of(tag) == version


def test_bad_patterns_are_refused_in_the_config() -> None:
    for bad in ("v{version}-{version}", "v{major}"):
        with pytest.raises(ValueError, match="placeholder|more than once"):
            Upstream(repo="x", tags=bad)
    assert Upstream(repo="x", tags="v{version}-rocm").tags == "v{version}-rocm"


def test_pep440_where_all_parse_loose_otherwise() -> None:
    assert is_older("1.0rc1", "1.0") and is_older("1.0", "1.0.post1")  # PEP 440
    assert is_older("0.5.9-rocm", "0.5.10-rocm")  # loose: numbers compare as numbers
    assert is_older("1.2.0-rc1", "1.2.0") and not is_older("1.2.0", "1.2.0-rc1")
    pattern = TagPattern.parse("v*")
    assert newest({"v0.5.9-rocm": "a", "v0.5.10-rocm": "b", "v0.5.3-rocm": "c"}, pattern) == "v0.5.10-rocm"
    assert newest({"nightly": "x"}, TagPattern.parse("v*")) is None


versions = st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(versions, versions, st.sampled_from(["", "-rocm", "-rc1", "+local"]))
def test_loose_order_is_numeric_order(a: list[int], b: list[int], suffix: str) -> None:
    left, right = ".".join(map(str, a)) + suffix, ".".join(map(str, b)) + suffix
    if a != b:
        assert (loose_key(left) < loose_key(right)) == (a < b)
    assert TagPattern.parse("v{version}" + suffix).version_of("v" + left) in (left.removesuffix(suffix), None)

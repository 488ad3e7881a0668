"""The contract every versioning of bot/core/versioning/api.py keeps (as Renovate holds
each module of lib/modules/versioning/api.ts to one interface): it is registered under its
name and `upstream.versioning` takes that name; it parses what its examples say it parses
and refuses what they say it refuses (a tag carrying a refused version is never followed);
it orders its examples as listed, a pre-release before its release, and any shuffled list
the same way each time."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config.model import Upstream, json_schema
from bot.core.versioning import VERSIONINGS, Versioning, versioning_of
from bot.core.versioning.tags import TagPattern, newest

ENTRIES = pytest.mark.parametrize("versioning", VERSIONINGS.values(), ids=list(VERSIONINGS))


@ENTRIES
def test_registered_under_its_name_which_the_config_takes(versioning: Versioning) -> None:
    assert VERSIONINGS[versioning.name] is versioning
    assert Upstream(repo="x", tags="v*", versioning=versioning.name).versioning == versioning.name
    offered = json_schema()["$defs"]["Upstream"]["properties"]["versioning"]["anyOf"][0]["enum"]
    assert versioning.name in offered and len(offered) == len(VERSIONINGS)


def test_the_config_refuses_an_unknown_versioning_and_one_without_tags() -> None:
    with pytest.raises(ValueError, match="'semver' is not a versioning: give one of pep440, loose"):
        Upstream(repo="x", tags="v*", versioning="semver")
    with pytest.raises(ValueError, match="upstream.versioning orders release tags"):
        Upstream(repo="x", branch="main", versioning="pep440")


@ENTRIES
def test_parses_what_it_should_and_refuses_what_it_should(versioning: Versioning) -> None:
    examples = versioning.examples
    assert examples.ascending and examples.invalid and examples.prereleases
    parsed = [*examples.ascending, *(version for pair in examples.prereleases for version in pair)]
    assert [v for v in parsed if not versioning.is_valid(v)] == []
    assert [v for v in examples.invalid if versioning.is_valid(v)] == []


@ENTRIES
def test_a_tag_carrying_a_refused_version_is_never_followed(versioning: Versioning) -> None:
    tags = {f"v{version}": version for version in (*versioning.examples.invalid, *versioning.examples.ascending)}
    assert newest(tags, TagPattern.parse("v*"), versioning.name) == f"v{versioning.examples.ascending[-1]}"
    only_refused = {f"v{version}": version for version in versioning.examples.invalid}
    assert newest(only_refused, TagPattern.parse("v*"), versioning.name) is None


@ENTRIES
def test_orders_its_examples_as_listed(versioning: Versioning) -> None:
    ascending = versioning.examples.ascending
    for older, newer in pairwise(ascending):
        assert versioning.is_older(older, newer), (older, newer)
        assert not versioning.is_older(newer, older), (older, newer)
    assert not any(versioning.is_older(version, version) for version in ascending)


@ENTRIES
def test_a_prerelease_comes_before_its_release(versioning: Versioning) -> None:
    for prerelease, release in versioning.examples.prereleases:
        assert versioning.is_older(prerelease, release) and not versioning.is_older(release, prerelease)


_RELEASES = st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=4).map(
    lambda numbers: ".".join(map(str, numbers))
)
_SUFFIXES = st.sampled_from(
    ["", "rc1", "-rc2", "-rc10", ".post1", "a1", "b10", ".dev0", "-rocm", "+local", "-beta.2", "-RC1", "_1"]
)
_EXAMPLES = sorted(
    {v for versioning in VERSIONINGS.values() for v in (*versioning.examples.ascending, *versioning.examples.invalid)}
)
VERSIONS = st.lists(st.builds(str.__add__, _RELEASES, _SUFFIXES) | st.sampled_from(_EXAMPLES), max_size=12)


@ENTRIES
@settings(max_examples=150, deadline=None)
@given(versions=VERSIONS, data=st.data())
def test_orders_a_shuffled_list_the_same_each_time(
    versioning: Versioning, versions: list[str], data: st.DataObject
) -> None:
    valid = [version for version in versions if versioning.is_valid(version)]
    shuffled = data.draw(st.permutations(valid))

    def ordered(listed: list[str]) -> list[str]:  # equal versions (1.0, 1.0.0) by their text, as newest() does
        return sorted(listed, key=lambda version: (versioning.key(version), version))

    assert ordered(shuffled) == ordered(valid)
    in_order = ordered(valid)
    assert not any(versioning.is_older(newer, older) for older, newer in pairwise(in_order))


def test_with_none_named_pep440_where_every_version_is_one_else_loose() -> None:
    assert versioning_of(None, ["1.0", "1.0rc1", "1.0.post1"]).name == "pep440"
    assert versioning_of(None, ["1.0", "0.5.10-rocm"]).name == "loose"
    assert versioning_of("loose", ["1.0"]).name == "loose"

"""Which commit a pinned image was built from, for images wheelpin did not publish: the
hints, most trusted first (core/decide/revision.py)."""

from __future__ import annotations

from bot.core.config.templates import commit_in_tag
from bot.core.decide.revision import commit_hints, is_full_commit, names_commit
from bot.core.image.oci import REVISION

ATOM = "lmcache-v{version_base}-g{sha8}-rocm-torch210"
SHA = "05fc77a0" + "c" * 32


def test_the_tag_template_gives_the_commit_it_put_there() -> None:
    assert commit_in_tag(ATOM, "lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210", component="lmcache") == "05fc77a0"
    assert commit_in_tag("{component}-{sha}", f"lmcache-{SHA}", component="lmcache") == SHA
    assert commit_in_tag("{component}-{sha}", f"mooncake-{SHA}", component="lmcache") is None  # another's
    assert commit_in_tag(ATOM, "lmcache-v0.5.6-g05fc77a0-rocm-torch211", component="lmcache") is None
    assert commit_in_tag("{component}-v{version}", "lmcache-v0.5.6", component="lmcache") is None  # names none


def test_an_image_atom_pushed_names_its_commit_by_tag_and_version() -> None:
    """ATOM's workflow pushes with docker: no annotation, the commit in the tag and in the
    wheel's setuptools-scm version (`+g05fc77a0`)."""
    hints = commit_hints(
        annotations={},
        labels={},
        tag="lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210",
        template=ATOM,
        component="lmcache",
        versions=["0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"],
    )
    assert hints == ["05fc77a0"]


def test_the_revision_comes_first_then_the_label_then_the_tag_then_the_version() -> None:
    hints = commit_hints(
        annotations={REVISION: "a" * 40},
        labels={REVISION: "b" * 40},
        tag="lmcache-v0.5.6-g" + "c" * 8 + "-rocm-torch210",
        template=ATOM,
        component="lmcache",
        versions=["0.5.6+g" + "d" * 8],
    )
    assert hints == ["a" * 40, "b" * 40, "c" * 8, "d" * 8]


def test_a_tag_of_another_shape_still_gives_its_g_segment() -> None:
    hints = commit_hints(
        annotations={},
        labels={REVISION: "not a commit"},
        tag="nightly-g1234abcd",
        template=ATOM,
        component="lmcache",
        versions=["0.5.6"],
    )
    assert hints == ["1234abcd"]
    assert (
        commit_hints(
            annotations={}, labels={}, tag=None, template=ATOM, component="lmcache", versions=["0.5.6", "1.0+torch2.10"]
        )
        == []
    )


def test_a_revision_names_a_commit_whole_or_by_its_first_seven_or_more_hex() -> None:
    commit = "6e30b3198a7c2d4e5f60718293a4b5c6d7e8f901"
    assert names_commit(commit, commit) and names_commit(commit[:9], commit) and names_commit(commit[:7], commit)
    assert names_commit(f" {commit[:9].upper()}\n", commit)  # as a label may carry it
    assert not names_commit(commit[:6], commit)  # shorter than git ever abbreviates
    assert not names_commit("6e30b3199", commit) and not names_commit(None, commit)
    assert not names_commit("v0.1.0", commit) and not names_commit(commit + "0", commit)
    assert is_full_commit(commit) and not is_full_commit(commit[:39]) and not is_full_commit(commit.upper())

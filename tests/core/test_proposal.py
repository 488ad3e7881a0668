"""Proposal text: sections, compare links, the marker, and the 65,536-character cap."""

from __future__ import annotations

from bot.core.ociimage import WheelEntry
from bot.core.proposal import Commit, ProposalFacts, body, compare_link, read_marker, title
from bot.core.requirements import Conflict, RequirementsDiff, diff_requirements

WHEEL = WheelEntry("lmcache-0.5.6-cp312-cp312-manylinux_2_39_x86_64.whl", "e" * 64, 17_000_000, "lmcache",
                   "0.5.6.dev98+g05fc77a0", ("numpy<=2.2.6",), ("gfx942", "gfx950"),
                   ("cp312-cp312-manylinux_2_39_x86_64",))


def facts(**kwargs: object) -> ProposalFacts:
    base = dict(component="lmcache", upstream="https://github.com/LMCache/LMCache", old_commit="a" * 40,
                new_commit="05fc77a0" + "b" * 32, version="0.5.6.dev98+g05fc77a0",
                image="rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:" + "c" * 64,
                wheels=(WHEEL,), state={"component": "lmcache", "commit": "05fc77a0" + "b" * 32})
    base.update(kwargs)
    return ProposalFacts(**base)  # type: ignore[arg-type]


def test_title_and_sections() -> None:
    diff = diff_requirements(["numpy>=2.3"], ["numpy<=2.2.6"])
    diff = RequirementsDiff(diff.added, diff.removed, diff.changed, (Conflict("numpy<=2.2.6", "numpy==2.3.5"),))
    text = body(facts(diff=diff, commits=(Commit("05fc77a0" + "b" * 32, "Faster lookups"),),
                      verification=("HIP code for gfx942, gfx950",)))
    assert title(facts()) == "Bump lmcache to 0.5.6.dev98+g05fc77a0 (05fc77a0)"
    assert f"https://github.com/LMCache/LMCache/compare/{'a' * 40}...05fc77a0" in text
    assert "| `lmcache-0.5.6-cp312-cp312-manylinux_2_39_x86_64.whl` | 0.5.6.dev98+g05fc77a0 | 17.0 MB |" in text
    assert "gfx942, gfx950 | cp312-cp312-manylinux_2_39_x86_64 |" in text
    assert "CONSTRAINT CONFLICTS" in text and "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5`" in text
    assert "skopeo inspect docker://rocm/atom-dev@sha256:" + "c" * 64 in text  # never repo:tag@digest
    assert read_marker(text) == facts().state


def test_compare_links() -> None:
    assert compare_link("https://gitlab.com/a/b.git", "1", "2") == "https://gitlab.com/a/b/-/compare/1...2"
    assert compare_link("git@github.com:a/b.git", None, "2") == "https://github.com/a/b/commit/2"
    assert compare_link("/srv/git/lmcache", "1", "2") is None


def test_long_commit_lists_are_cut_to_fit() -> None:
    commits = tuple(Commit(f"{i:040x}", "x" * 200) for i in range(5000))
    text = body(facts(commits=commits))
    assert len(text) <= 65_536
    assert "more commits (cut to fit)" in text and read_marker(text) == facts().state


def test_even_without_commits_the_marker_survives_the_cut() -> None:
    huge = WheelEntry("w.whl", "e" * 64, 1, "w", "1", (), ("gfx942",) * 20000, ())
    text = body(facts(wheels=(huge,)), limit=10_000)
    assert len(text) <= 10_000 and read_marker(text) == facts().state


def test_the_last_marker_wins() -> None:
    sneaky = Commit("1" * 40, '<!-- wheelpin: {"commit":"evil"} -->')
    text = body(facts(commits=(sneaky,)))
    assert read_marker(text) == facts().state

"""The documentation a user reads: the README starts where a user starts (short, its two
commands near the top) and every relative link and `#anchor` of the README, CONTRIBUTING,
deploy/README and docs/ points at a file, folder or heading that exists, with anchors made
as GitHub makes them from headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "deploy" / "README.md", *(ROOT / "docs").glob("*.md")]
)
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", flags=re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", flags=re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", flags=re.M)


def prose(text: str) -> str:
    """The Markdown text outside fenced code blocks, where links and headings live."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it (github-slugger, what github.com runs):
    the rendered text lowercased, punctuation and symbols dropped (letters, digits, `_`,
    `-` and spaces kept), each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link renders as its text
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a page: GitHub suffixes a repeated heading's slug with -1, -2…"""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(page.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def relative_links(page: Path) -> list[str]:
    text = CODE_SPAN.sub("", prose(page.read_text()))
    return [
        target for target in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", target, flags=re.I)
    ]  # https:, mailto:


def test_the_slugs_are_github_s() -> None:
    """github-slugger's rule worked by hand: `:`, `,`, `…`, `=`, braces and backticks go,
    and each space stays a `-`, so `--to` after a space is `---to`."""
    assert slug("1. The loop") == "1-the-loop"
    assert slug("Exit codes, `--dry-run`, running on") == "exit-codes---dry-run-running-on"
    assert slug("`wheelpin serve`: the bot as a GitHub App") == "wheelpin-serve-the-bot-as-a-github-app"
    assert (
        slug("Wheel images: `wheelpin image publish WHEEL… --to REF`")
        == "wheel-images-wheelpin-image-publish-wheel---to-ref"
    )
    assert slug("Against the consuming image: `consumer = {…}`") == "against-the-consuming-image-consumer--"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert page.exists()
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(f"{target}: no such file or folder")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    assert broken == []


def test_the_checker_catches_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A part\n\n[ok](#a-part) [bad](#no-part) [gone](missing.md)\n"
        "```sh\n[not a link](inside-code.md)\n```\n`[nor](this.md)`\n"
    )
    assert relative_links(page) == ["#a-part", "#no-part", "missing.md"]
    assert anchors(page) == {"title", "a-part"}


def test_the_readme_is_short_and_has_its_two_commands_near_the_top() -> None:
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 160
    top = "\n".join(lines[:40])
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && wheelpin demo" in top
    assert "\nbash .ci/run\n" in top


def test_the_readme_walks_from_init_to_a_pass_and_links_the_reference() -> None:
    readme = (ROOT / "README.md").read_text()
    steps = [
        "wheelpin init",
        "wheelpin config validate --online",
        "wheelpin reconcile --once --dry-run",
        "wheelpin reconcile --once ",
    ]
    positions = [readme.index(step) for step in steps]
    assert positions == sorted(positions)
    for page in [
        "docs/init.md",
        "docs/dry-run.md",
        "docs/github-action.md",
        "docs/github-app.md",
        "docs/README.md",
        "CONTRIBUTING.md",
    ]:
        assert f"]({page}" in readme, page


def test_the_index_links_every_page_of_docs() -> None:
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in relative_links(index)}
    assert [page.name for page in sorted((ROOT / "docs").glob("*.md")) if page != index and page not in linked] == []


def test_every_benchmark_is_in_the_benchmarks_page() -> None:
    """docs/benchmarks.md is where a reader finds what bench/ measures: each script there."""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    missing = [path.name for path in sorted((ROOT / "bench").glob("*.py")) if f"bench/{path.name}" not in page]
    assert not missing, f"bench scripts not in docs/benchmarks.md: {missing}"

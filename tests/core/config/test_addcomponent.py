"""A component's tables added to a config's text, or put in place of its own, every other
byte kept; a layout that hides where a component ends is refused, never guessed at."""

from __future__ import annotations

import tomllib

import pytest

from bot.core.config.addcomponent import NotAddable, components_of, with_component

MINE = """\
#:schema https://example.org/schema.json
# our wheels

[[component]]
name = "lmcache"  # ATOM's
upstream = { repo = "https://github.com/LMCache/LMCache", branch = "dev" }
wheel = { distribution = "lmcache" }

[[component.pins]]
file = "docker/Dockerfile"
image_arg = "LMCACHE_WHEEL_IMAGE"
# sha256_arg = "LMCACHE_WHEEL_SHA256"  (not yet)

# Mooncake, added by hand
[[component]]
name = "mooncake"
wheel = { distribution = "mooncake" }

[defaults]
schedule = "6h"  # ours
"""


def table(name: str, distribution: str) -> str:
    return f'[[component]]\nname = "{name}"\n\n[component.wheel]\ndistribution = "{distribution}"\n'


def test_a_new_component_is_added_after_every_byte_of_the_file() -> None:
    added = with_component(MINE, table("vllm", "vllm"), "vllm")
    assert added == MINE + "\n" + table("vllm", "vllm")
    assert components_of(added) == ["lmcache", "mooncake", "vllm"]
    assert tomllib.loads(added)["defaults"] == {"schedule": "6h"}  # still the top-level table it was


def test_a_component_is_replaced_where_it_is_and_nothing_else_moves() -> None:
    replaced = with_component(MINE, table("lmcache", "lmcache-rocm"), "lmcache")
    before, after = MINE.split('[[component]]\nname = "lmcache"')[0], MINE.split("(not yet)\n")[1]
    assert replaced == before + table("lmcache", "lmcache-rocm") + after
    assert "# Mooncake, added by hand\n[[component]]" in replaced  # the next table keeps its comment
    last = with_component(MINE, table("mooncake", "mooncake-rocm"), "mooncake")
    assert last.endswith(table("mooncake", "mooncake-rocm") + '\n[defaults]\nschedule = "6h"  # ours\n')
    assert components_of(last) == ["lmcache", "mooncake"]


def test_line_endings_and_a_missing_last_newline_are_kept() -> None:
    crlf = MINE.replace("\n", "\r\n")
    added = with_component(crlf, table("vllm", "vllm"), "vllm")
    assert added == crlf + "\r\n" + table("vllm", "vllm").replace("\n", "\r\n")
    bare = 'version = 1\n[[component]]\nname = "a"'
    assert with_component(bare, table("b", "b"), "b") == bare + "\n\n" + table("b", "b")
    assert with_component("", table("b", "b"), "b") == table("b", "b")


FOOTER = "# end of components; keep mooncake last\n# (ask #ml-infra)\n"


def test_a_comment_block_after_a_blank_line_at_the_end_stays_the_files_footer() -> None:
    """A comment block closing the file after a blank line is the file's, not the last
    table's: the new component goes above it, with a blank line each side, and it still
    ends the file."""
    text = MINE + "\n" + FOOTER
    added = with_component(text, table("vllm", "vllm"), "vllm")
    assert added == MINE + "\n" + table("vllm", "vllm") + "\n" + FOOTER
    assert components_of(added) == ["lmcache", "mooncake", "vllm"]
    two_blanks = MINE + "\n\n" + FOOTER + "\n"  # its blank lines kept as written
    assert with_component(two_blanks, table("vllm", "vllm"), "vllm") == (
        MINE + "\n\n" + table("vllm", "vllm") + "\n" + FOOTER + "\n"
    )
    crlf = text.replace("\n", "\r\n")
    assert with_component(crlf, table("vllm", "vllm"), "vllm") == added.replace("\n", "\r\n")


def test_a_comment_right_after_the_last_key_stays_with_its_table() -> None:
    """A comment with no blank line above it is its table's last word: the new component
    goes after it, as after any byte of that table."""
    text = MINE + "# mooncake's defaults, above\n"
    added = with_component(text, table("vllm", "vllm"), "vllm")
    assert added == text + "\n" + table("vllm", "vllm")
    both = text + "\n" + FOOTER  # its own comment, then a footer
    assert with_component(both, table("vllm", "vllm"), "vllm") == text + "\n" + table("vllm", "vllm") + "\n" + FOOTER


def test_a_file_of_comments_alone_keeps_them_above_the_new_component() -> None:
    header = "#:schema https://example.org/schema.json\n\n# our wheels\n"
    assert with_component(header, table("b", "b"), "b") == header + "\n" + table("b", "b")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            'component = [{ name = "a" }]\n',
            "its components are not written as [[component]] tables that one can follow: edit it by hand",
        ),
        ("[[component]\nname = 1\n", "it is not TOML (Expected ']]' at the end of an array declaration"),
        ('component = "a"\n', "its `component` is no array of tables"),
    ],
)
def test_a_layout_that_cannot_take_a_table_is_refused(text: str, said: str) -> None:
    with pytest.raises(NotAddable) as refused:
        with_component(text, table("b", "b"), "b")
    assert str(refused.value).startswith(said)  # tomllib's own words follow, with where


def test_tables_of_a_component_written_after_another_table_are_not_guessed_at() -> None:
    """TOML lets `[component.wheel]` come after `[defaults]`, still the last component's:
    replacing from its header to the next table would leave that table behind."""
    text = '[[component]]\nname = "a"\n[defaults]\nschedule = "6h"\n[component.wheel]\ndistribution = "a"\n'
    with pytest.raises(NotAddable) as refused:
        with_component(text, table("a", "a2"), "a")
    assert (
        str(refused.value) == "where the tables of its component a end cannot be told from its layout: edit it by hand"
    )
    inline = 'component = [{ name = "a" }]\n'
    with pytest.raises(NotAddable):
        with_component(inline, table("a", "a2"), "a")

"""`wheelpin init` in a repository whose config exists: one component's tables added at the
end of its text (above a footer: the comment block closing the file after a blank line),
or put where that component's own are (with `--force`), every other byte
of the file left as its maintainer wrote it (comments, order, spacing, line endings). The
result is read back as TOML and must hold what the file held with only that component
added or replaced; a file whose layout hides where a component ends (its components in
an inline array, a `[component.wheel]` after another table) is refused in one sentence
rather than guessed at. Pure: the command reads the file, validates the result and writes it.
"""

from __future__ import annotations

import tomllib
from typing import Any

from .tomlpos import table_headers


class NotAddable(ValueError):
    """Why the component cannot be put in the text as asked (a clause: the command names the file)."""


def components_of(text: str) -> list[str]:
    """The component names of a config's text; NotAddable when it is not TOML."""
    return [str(table.get("name")) for table in _components(_toml(text))]


def with_component(text: str, table: str, name: str) -> str:
    """`text` with `table` (the TOML of one `[[component]]` and its subtables, named `name`)
    put in place of the component of that name, else added at the end, above the file's
    footer if it has one (`_footer`)."""
    old = _toml(text)
    tables = _components(old)
    new_table = _components(_toml(table))[0]
    newline = "\r\n" if "\r\n" in text else "\n"
    table = table.replace("\n", newline)
    index = next((i for i, each in enumerate(tables) if each.get("name") == name), None)
    if index is None:
        lines = text.splitlines(keepends=True)
        footer = _footer(lines)
        if footer < len(lines):  # above the file's closing comments, which stay its last lines
            ending = "" if table.endswith(newline) else newline
            result = "".join(lines[:footer]) + table + ending + newline + "".join(lines[footer:])
        else:
            body = text if not text or text.endswith(("\n", "\r")) else text + newline
            blank = bool(body.strip()) and not body.endswith(newline * 2)  # one blank line before it
            result = body + (newline if blank else "") + table
        expected = {**old, "component": [*tables, new_table]}
        refused = "its components are not written as [[component]] tables that one can follow"
    else:
        lines = text.splitlines(keepends=True)
        start, end = _span(text, index)
        replacement = table if table.endswith(newline) or end == len(lines) else table + newline
        result = "".join(lines[:start]) + replacement + "".join(lines[end:])
        expected = {**old, "component": [*tables[:index], new_table, *tables[index + 1 :]]}
        refused = f"where the tables of its component {name} end cannot be told from its layout"
    try:
        written = tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        written = None
    if written != expected:
        raise NotAddable(f"{refused}: edit it by hand")
    return result


def _footer(lines: list[str]) -> int:
    """Where the file's footer starts (a line index), len(lines) where it has none: the
    comment block that closes the file after a blank line, below its last key. Comment
    lines right after that key (no blank line between) are its table's, and stay above
    what is added; a file of comments alone has no table to tell a footer from."""
    last = len(lines)  # just after the last line that is neither blank nor a comment
    while last > 0 and (not lines[last - 1].strip() or lines[last - 1].lstrip().startswith("#")):
        last -= 1
    if last == 0:
        return len(lines)
    start = last
    while start < len(lines) and lines[start].strip():  # the last table's own comments
        start += 1
    while start < len(lines) and not lines[start].strip():  # the blank lines above the footer
        start += 1
    return start


def _span(text: str, index: int) -> tuple[int, int]:
    """The lines (0-based, end excluded) of the `index`th component's tables: from its
    `[[component]]` header to the last line before the next table that is not its own,
    leaving to that table the comments right above it and the blank lines between."""
    headers = table_headers(text)
    lines = text.splitlines()
    start = next((line for line, path in headers if path == ("component", index)), None)
    if start is None:
        raise NotAddable("its components are not written as [[component]] tables that one can follow: edit it by hand")
    end = next(
        (line - 1 for line, path in headers if line > start and path[:2] != ("component", index)),
        len(lines),
    )
    while end > start and lines[end - 1].lstrip().startswith("#"):
        end -= 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start - 1, end


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise NotAddable(f"it is not TOML ({exc})") from None


def _components(document: dict[str, Any]) -> list[dict[str, Any]]:
    tables = document.get("component", [])
    if not isinstance(tables, list) or not all(isinstance(table, dict) for table in tables):
        raise NotAddable("its `component` is no array of tables")
    return tables

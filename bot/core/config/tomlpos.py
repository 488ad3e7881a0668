"""Where a key path of a TOML file is written, so config errors can name the line.

`tomllib` keeps no positions; this reads the text once more, line by line, and notes
the line of every table header, key, inline-table key and element of an array of
inline tables, keyed by the same paths pydantic reports (`component`, 0, `image`, `tag`);
and the table headers in order, where `wheelpin init` finds a component's tables to
replace (core/config/addcomponent.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Path = tuple[str | int, ...]
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")
_INLINE_KEY = re.compile(r"[{,]\s*([A-Za-z0-9_-]+)\s*=")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'")


def _keys(dotted: str) -> list[str]:
    return [part.strip().strip("\"'") for part in re.split(r"\.(?=(?:[^\"']|\"[^\"]*\"|'[^']*')*$)", dotted)]


def key_lines(text: str) -> dict[Path, int]:
    return _read(text)[0]


def table_headers(text: str) -> list[tuple[int, Path]]:
    """Each table header of `text` in order: its line and the path of the table it opens
    (`[[component.pins]]` under the second component opens `component`, 1, `pins`, 0)."""
    return _read(text)[1]


def _read(text: str) -> tuple[dict[Path, int], list[tuple[int, Path]]]:
    positions: dict[Path, int] = {}
    headers: list[tuple[int, Path]] = []
    arrays: dict[Path, int] = {}
    table: Path = ()
    open_array: Path | None = None
    open_inline: Path | None = None  # a TOML 1.1 inline table spanning lines
    depth = element = braces = 0

    def resolve(keys: Sequence[str]) -> Path:
        path: Path = ()
        for key in keys:
            path += (key,)
            if path in arrays:
                path += (arrays[path] - 1,)
        return path

    for number, line in enumerate(text.splitlines(), start=1):
        bare = _STRING.sub('""', line).split("#", 1)[0]
        if open_inline is not None:
            for inline in re.finditer(r"(?:^|[{,])\s*([A-Za-z0-9_-]+)\s*=", bare):
                positions.setdefault(open_inline + (inline.group(1),), number)
            braces += bare.count("{") - bare.count("}")
            if braces <= 0:
                open_inline = None
            continue
        if open_array is not None:
            element, depth = _scan_array(bare, open_array, number, positions, element, depth)
            if depth <= 0:
                open_array = None
            continue
        header = _HEADER.match(line)
        if header:
            keys = _keys(header.group(2))
            if header.group(1) == "[[":
                parent = resolve(keys[:-1]) + (keys[-1],)
                arrays[parent] = arrays.get(parent, 0) + 1
                table = parent + (arrays[parent] - 1,)
                positions.setdefault(parent, number)
            else:
                table = resolve(keys)
            positions[table] = number
            headers.append((number, table))
            continue
        key = _KEY.match(line)
        if not key:
            continue
        path = table + tuple(_keys(key.group(1)))
        positions[path] = number
        value = bare[bare.index("=") + 1 :].strip()
        if value.startswith("{"):
            for inline in _INLINE_KEY.finditer(value):
                positions.setdefault(path + (inline.group(1),), number)
            braces = value.count("{") - value.count("}")
            if braces > 0:
                open_inline = path
        elif value.startswith("["):
            element, depth = _scan_array(value, path, number, positions, 0, 0)
            if depth > 0:
                open_array = path
    return positions, headers


def _scan_array(
    text: str, path: Path, number: int, positions: dict[Path, int], element: int, depth: int
) -> tuple[int, int]:
    """Follow `[ a, {…}, … ]` across lines; note each element and an inline table's keys.

    `text` has its strings blanked, so brackets and commas are the array's own."""
    braces = 0
    for index, char in enumerate(text):
        if braces:
            braces += {"{": 1, "}": -1}.get(char, 0)
            continue
        if char == "]" and depth == 1:
            return element, 0
        if char in "[]":
            depth += 1 if char == "[" else -1
        if depth != 1 or char in " \t[":
            continue
        if char == ",":
            element += 1
            continue
        positions.setdefault(path + (element,), number)
        if char == "{":
            braces = 1
            close = _matching_brace(text, index)
            for inline in _INLINE_KEY.finditer(text[index:close]):
                positions.setdefault(path + (element, inline.group(1)), number)
    return element, depth


def _matching_brace(text: str, start: int) -> int:
    level = 0
    for index in range(start, len(text)):
        level += {"{": 1, "}": -1}.get(text[index], 0)
        if level == 0:
            return index + 1
    return len(text)


def line_of(positions: dict[Path, int], loc: Sequence[str | int]) -> int | None:
    """The line of the longest prefix of `loc` written in the file."""
    path = tuple(loc)
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return None

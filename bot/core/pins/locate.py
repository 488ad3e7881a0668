"""Locating the exact characters of a pin's value in a Dockerfile, and nothing else.

The official BuildKit parser (PyPI `dockerfile`) says which instructions there are and
which lines each spans: heredocs, comments, `# escape=` and continuation lines are its
business. Within an `ARG` or `FROM` instruction's lines this module then finds the value
of one name (`NAME=value`, `NAME="value"`, `ARG A=1 B=2`) or the image of a stage, as a
character span, so a rewrite touches only those characters: quotes, line endings, a
BOM, comments and everything else stay as they were. A text holding a NUL character is
refused: the parser stops there and would hide every instruction after it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import dockerfile

_DIRECTIVE = re.compile(r"^#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DockerfileError(ValueError):
    """The Dockerfile cannot be read, or its instruction is not in a shape we edit."""


@dataclass(frozen=True)
class ValueSite:
    """Where one value is written: characters `[start, end)` of the file's text."""

    line: int  # 1-based line the value starts on
    start: int
    end: int
    value: str
    quote: str  # '"', "'" or '' (unquoted)
    stage: int | None  # stage index (0 = first FROM); None before the first FROM


@dataclass(frozen=True)
class ArgDeclaration:
    name: str
    line: int
    stage: int | None
    default: ValueSite | None  # None for `ARG NAME` with no default


@dataclass(frozen=True)
class Stage:
    index: int
    name: str | None
    line: int
    image: ValueSite


@dataclass(frozen=True)
class ParsedDockerfile:
    text: str
    args: tuple[ArgDeclaration, ...]
    stages: tuple[Stage, ...]

    def declarations(self, name: str) -> list[ArgDeclaration]:
        return [arg for arg in self.args if arg.name == name]

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name and s.name.lower() == name.lower()), None)


def escape_character(text: str) -> str:
    """The `# escape=` parser directive at the top of the file, or a backslash."""
    for line in text.lstrip("\ufeff").splitlines():
        match = _DIRECTIVE.match(line.strip())
        if not match:
            break
        if match.group(1).lower() == "escape":
            return match.group(2)
    return "\\"


@functools.lru_cache(maxsize=64)
def parse(text: str, *, where: str) -> ParsedDockerfile:
    """Parse once per text: many components often pin in one Dockerfile."""
    _refuse_nul(text, where)
    try:
        commands = dockerfile.parse_string(text)
    except dockerfile.GoParseError as exc:
        raise DockerfileError(f"{where}: not a Dockerfile the BuildKit parser reads ({exc})") from None
    starts = [0] + [match.end() for match in re.finditer(r"\n", text)]
    escape = escape_character(text)
    args: list[ArgDeclaration] = []
    stages: list[Stage] = []
    for command in commands:
        begin = starts[command.start_line - 1]
        finish = starts[command.end_line] if command.end_line < len(starts) else len(text)
        scanner = _Scanner(text, begin, finish, escape, starts)
        stage = len(stages) - 1 if stages else None
        instruction = command.cmd.upper()
        if instruction == "ARG":
            found = scanner.arg_tokens()
            expected = [value.split("=", 1)[0] for value in command.value]
            if [name for name, _site, _line in found] != expected:
                raise DockerfileError(
                    f"{where}:{command.start_line}: cannot locate the values of this ARG "
                    "instruction exactly; wheelpin leaves it alone"
                )
            for name, site, line in found:
                args.append(ArgDeclaration(name, line, stage, _at_stage(site, stage)))
        elif instruction == "FROM":
            image, stage_name = scanner.from_tokens()
            if image is None or image.value != command.value[0]:
                raise DockerfileError(f"{where}:{command.start_line}: cannot locate the image of this FROM exactly")
            stages.append(
                Stage(
                    len(stages),
                    stage_name,
                    command.start_line,
                    ValueSite(image.line, image.start, image.end, image.value, image.quote, len(stages)),
                )
            )
    return ParsedDockerfile(text, tuple(args), tuple(stages))


def _refuse_nul(text: str, where: str) -> None:
    """The BuildKit parser binding reads the text as a C string: it ends at the first NUL,
    so every instruction after one would be silently missing (an ARG not found, or, worse,
    a second declaration not moved). Refused, naming the line."""
    index = text.find("\0")
    if index >= 0:
        line = text.count("\n", 0, index) + 1
        raise DockerfileError(
            f"{where}:{line}: holds a NUL character, where the BuildKit parser stops reading; "
            "wheelpin refuses a Dockerfile it cannot read to its end"
        )


def _at_stage(site: ValueSite | None, stage: int | None) -> ValueSite | None:
    if site is None:
        return None
    return ValueSite(site.line, site.start, site.end, site.value, site.quote, stage)


class _Scanner:
    """Walks the characters of one instruction: words, quotes, continuations, comments."""

    def __init__(self, text: str, begin: int, end: int, escape: str, starts: list[int]) -> None:
        self.text, self.pos, self.end, self.escape, self.starts = text, begin, end, escape, starts
        if text.startswith("\ufeff", begin):
            self.pos += 1
        self._skip_blank()
        self._word()  # the instruction keyword

    def line_of(self, offset: int) -> int:
        low, high = 0, len(self.starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low + 1

    def _skip_blank(self) -> None:
        """Spaces, continuations, and comment or empty lines inside a continuation."""
        text = self.text
        while self.pos < self.end:
            char = text[self.pos]
            if char in " \t":
                self.pos += 1
            elif char == self.escape and self._continuation_at(self.pos):
                self.pos = self._after_newline(self.pos)
                while self.pos < self.end:  # comment and empty lines inside the instruction
                    line_end = self._after_newline(self.pos)
                    stripped = text[self.pos : line_end].strip()
                    if stripped.startswith("#") or not stripped:
                        if line_end >= self.end:
                            break
                        self.pos = line_end
                    else:
                        break
            elif char in "\r\n":
                self.pos = self.end
            else:
                return

    def _continuation_at(self, offset: int) -> bool:
        rest = self.text[offset + 1 : self.end]
        stripped = rest.lstrip(" \t")
        return stripped.startswith("\n") or stripped.startswith("\r\n") or not stripped

    def _after_newline(self, offset: int) -> int:
        newline = self.text.find("\n", offset, self.end)
        return self.end if newline < 0 else newline + 1

    def _word(self) -> tuple[int, int]:
        start = self.pos
        while self.pos < self.end and self.text[self.pos] not in " \t\r\n":
            if self.text[self.pos] == self.escape and self._continuation_at(self.pos):
                break
            self.pos += 1
        return start, self.pos

    def _value(self) -> ValueSite:
        text = self.text
        quote = text[self.pos] if self.pos < self.end and text[self.pos] in "\"'" else ""
        if quote:
            start = self.pos + 1
            index = start
            while index < self.end and text[index] != quote:
                index += 2 if quote == '"' and text[index] == self.escape else 1
            if index >= self.end:
                raise DockerfileError("unterminated quote")
            self.pos = index + 1
            return ValueSite(self.line_of(start), start, index, text[start:index], quote, None)
        start, stop = self._word()
        return ValueSite(self.line_of(start), start, stop, text[start:stop], "", None)

    def arg_tokens(self) -> list[tuple[str, ValueSite | None, int]]:
        found: list[tuple[str, ValueSite | None, int]] = []
        self._skip_blank()
        while self.pos < self.end:
            match = _NAME.match(self.text, self.pos, self.end)
            if not match:
                return found + [("", None, 0)]  # a shape we do not edit
            name, line = match.group(0), self.line_of(self.pos)
            self.pos = match.end()
            site = None
            if self.pos < self.end and self.text[self.pos] == "=":
                self.pos += 1
                try:
                    site = self._value()
                except DockerfileError:
                    return found + [("", None, 0)]
            found.append((name, site, line))
            self._skip_blank()
        return found

    def from_tokens(self) -> tuple[ValueSite | None, str | None]:
        self._skip_blank()
        while self.text.startswith("--", self.pos):
            self._word()
            self._skip_blank()
        if self.pos >= self.end:
            return None, None
        image = self._value()
        self._skip_blank()
        start, stop = self._word()
        stage_name = None
        if self.text[start:stop].lower() == "as":
            self._skip_blank()
            name_start, name_stop = self._word()
            stage_name = self.text[name_start:name_stop] or None
        return image, stage_name

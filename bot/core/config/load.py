"""Loading a repository's config from its text, with every error located in the file
(reading it from disk is `adapters/configdisk.py`, from GitHub `adapters/github/forge.py`).

TOML 1.1 (tomli), so inline tables may span lines (the examples are TOML 1.0). Each
problem reads `FILE:LINE: key.path: message`, the path starting at the component's name
(`lmcache.wheel.archs`) when it has one of its own; all of them are reported at once,
and the checks that need the repository (pin files exist) run here too. A TOML syntax
error reads `FILE:LINE:COL: message`, then the line and a caret under the column.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli
from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .hostreach import host_problems
from .model import BUILD_KINDS, COMPONENT_NAME, PIN_KINDS, Config
from .tomlpos import key_lines, line_of


class ConfigInvalid(ConfigError):
    """A config with one or more problems; `problems` lists each, located."""

    validate_finds = True

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{self.problems[0]}{more}")
        self.path = path


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    path: Path
    root: Path  # the repository the pins' paths start from
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)  # key path → line

    def located(self, loc: Sequence[str | int], message: str) -> str:
        """A problem found after loading (`config validate` reading the pins), in the
        same `FILE:LINE: key.path: message` form as the loader's own."""
        names = dict(enumerate(component.name for component in self.config.components))  # loaded: unique
        line = line_of(self.lines, loc)
        return f"{self.path}:{line if line else 1}: {_where(loc, names)}: {message}"


def _component_names(raw: dict[str, Any]) -> dict[int, str]:
    """index → name of the components whose name is a valid one used once: a problem
    under them is named by it (`lmcache.wheel`); an absent, invalid or repeated name
    says nothing certain, so those keep `component[N]`."""
    named = [(index, component.get("name")) for index, component in _components(raw)]
    valid = [(index, name) for index, name in named if isinstance(name, str) and re.fullmatch(COMPONENT_NAME, name)]
    counts: dict[str, int] = {}
    for _index, name in valid:
        counts[name] = counts.get(name, 0) + 1
    return {index: name for index, name in valid if counts[name] == 1}


def _where(loc: Sequence[str | int], names: dict[int, str] | None = None) -> str:
    text = ""
    parts = list(loc)
    if len(parts) >= 2 and parts[0] == "component" and isinstance(parts[1], int) and names and parts[1] in names:
        text, parts = names[parts[1]], parts[2:]
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _syntax_problem(path: Path, text: str, exc: tomli.TOMLDecodeError) -> str:
    """`FILE:LINE:COL: message`, the line, and a caret under the column (tabs kept, so
    the caret lines up however the terminal shows them)."""
    source = text.splitlines()[exc.lineno - 1] if 0 < exc.lineno <= len(text.splitlines()) else ""
    pad = "".join(char if char == "\t" else " " for char in source[: exc.colno - 1])
    return f"{path}:{exc.lineno}:{exc.colno}: not valid TOML: {exc.msg}\n    {source}\n    {pad}^"


MAX_CONFIG = 1 << 20  # bytes: hundreds of components fit; a larger file is not a config
MAX_DEPTH = 32  # tables and arrays within each other: the contract needs five


def _depth(value: Any) -> int:
    """How deep tables and arrays nest in `value` (iteratively: any depth costs no stack)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def load_config_text(
    text: str,
    *,
    path: Path,
    root: Path,
    exists: Callable[[str], bool] | None,
    directory: Callable[[str], bool] | None = None,
    escapes: Callable[[str], str | None] | None = None,
    from_github: bool = False,
    host_paths: bool = False,
) -> LoadedConfig:
    """Parse and validate config text read from anywhere (a file, a repository on GitHub);
    `exists` says whether the repository holds a file (None: do not check), `directory`
    whether a path that is no file is a directory (so the problem says so), `escapes` why a
    pin file leads out of a checkout through a symlink (None: it does not, or no checkout).
    `from_github`: the text is a tenant's, so no key may reach the bot's host (hostreach.py),
    but absolute host paths when the operator allows them (`host_paths`)."""
    if len(text) > MAX_CONFIG:
        raise ConfigInvalid(path, [f"{path}: the config is over {MAX_CONFIG} bytes"])
    try:
        raw: dict[str, Any] = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise ConfigInvalid(path, [_syntax_problem(path, text, exc)]) from None
    except RecursionError:  # tomli's own guard (400 levels) or the interpreter's
        raise ConfigInvalid(path, [f"{path}: tables or arrays nest more than {MAX_DEPTH} levels deep"]) from None
    if _depth(raw) > MAX_DEPTH:
        raise ConfigInvalid(path, [f"{path}: tables or arrays nest more than {MAX_DEPTH} levels deep"])
    positions = key_lines(text)
    names = _component_names(raw)

    def located(loc: Sequence[str | int], message: str) -> str:
        line = line_of(positions, loc)
        return f"{path}:{line if line else 1}: {_where(loc, names)}: {message}"

    problems = _repository_problems(raw, root, located, exists, directory, escapes) if exists else []
    problems += _duplicate_names(raw, located)
    if from_github:
        problems += host_problems(raw, located, host_paths=host_paths)
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        for error in errors:
            if _misspelt(error, errors):
                continue  # said once, as the unknown key that misspells it
            tagged = [part for part in error["loc"] if isinstance(part, int) or not _is_internal(part)]
            loc = _untagged(tagged)
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "unknown key" + _did_you_mean(tagged)
            problems.append(located(*_refine(loc, message)))
        raise ConfigInvalid(path, sorted(problems, key=_line_number)) from None
    problems += shared_pins(config, located)
    if problems:
        raise ConfigInvalid(path, sorted(problems, key=_line_number))
    return LoadedConfig(config, path, root, positions)


Locate = Callable[[Sequence[str | int], str], str]


def _line_number(problem: str) -> int:
    parts = problem.split(":")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _components(raw: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    listed = raw.get("component")
    if not isinstance(listed, list):
        return []
    return [(index, item) for index, item in enumerate(listed) if isinstance(item, dict)]


def _duplicate_names(raw: dict[str, Any], located: Locate) -> list[str]:
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, component in _components(raw):
        name = component.get("name")
        if not isinstance(name, str):
            continue
        if name in seen:
            problems.append(
                located(
                    ("component", index, "name"),
                    f"component name {name!r} is used twice (first as component[{seen[name]}])",
                )
            )
        seen.setdefault(name, index)
    return problems


def shared_pins(config: Config, located: Locate) -> list[str]:
    """A pin site (a file's ARG, or its stage's FROM) that two components both pin: each
    pass would move it to its own image, in two proposals that undo each other. One
    sentence per later pin, at its key, naming the site and both components; the loader
    says it, so `config validate` and every pass refuse the config alike."""
    first: dict[tuple[str, str], int] = {}  # (file, site) → the component that pins it first
    problems: list[str] = []
    for number, component in enumerate(config.components):
        for index, pin in enumerate(component.pins):
            shared: dict[int, list[tuple[str, str]]] = {}  # another component → the sites it pins too
            for key, site, said in pin.sites():
                owner = first.setdefault((pin.file, site), number)
                if owner != number:
                    shared.setdefault(owner, []).append((key, said))
            for owner, sites in shared.items():
                names = " and ".join(said for _, said in sites)
                problems.append(
                    located(
                        ("component", number, "pins", index, sites[0][0]),
                        f"{pin.file}: {names} {'is' if len(sites) == 1 else 'are'} pinned by both "
                        f"{config.components[owner].name} and {component.name}: each would move "
                        f"{'it' if len(sites) == 1 else 'them'} to its own image, in two proposals "
                        "that undo each other; keep the pin in one component",
                    )
                )
    return problems


def _repository_problems(
    raw: dict[str, Any],
    root: Path,
    located: Locate,
    exists: Callable[[str], bool],
    directory: Callable[[str], bool] | None,
    escapes: Callable[[str], str | None] | None = None,
) -> list[str]:
    """Files the config names that the repository does not hold (or holds as a directory:
    reading one later would fail far from the config line that named it)."""

    def missing(what: str, file: object) -> str | None:
        if not isinstance(file, str) or not _inside(file) or exists(file):
            return None
        if directory is not None and directory(file):
            return f"{what} {file} is a directory in {root}, not a file"
        return f"{what} {file} does not exist in {root}"

    problems: list[str] = []
    for index, component in _components(raw):
        pins = component.get("pins")
        for number, pin in enumerate(pins if isinstance(pins, list) else []):
            file = pin.get("file") if isinstance(pin, dict) else None
            problem = missing("pin file", file)
            if problem is None and escapes is not None and isinstance(file, str) and _inside(file):
                problem = escapes(file)
            if problem:
                problems.append(located(("component", index, "pins", number, "file"), problem))
        problem = missing("constraints file", component.get("constraints_file"))
        if problem:
            problems.append(located(("component", index, "constraints_file"), problem))
    return problems


def _inside(file: str) -> bool:
    return bool(file) and not file.startswith("/") and ".." not in Path(file).parts


_KEY_PATH = re.compile(r"^([a-z_]+(?:\.[a-z_0-9]+|\[[0-9]+\])*): (.*)$", re.S)


def _refine(loc: list[str | int], message: str) -> tuple[list[str | int], str]:
    """`image.tag: …` raised by a model validator names a deeper key: follow it."""
    match = _KEY_PATH.match(message)
    if not match:
        return loc, message
    deeper: list[str | int] = []
    for name, index in re.findall(r"([a-z_0-9]+)|\[([0-9]+)\]", match.group(1)):
        deeper.append(int(index) if index else name)
    if loc and deeper and deeper[0] == loc[-1]:
        deeper = deeper[1:]
    return loc + deeper, match.group(2)


def _is_internal(part: str) -> bool:
    """pydantic's names for union branches and validators, which are not config keys."""
    return "[" in part or part in {"str", "list[str]", "int", "bool"} or part.startswith("function-")


def _misspelt(error: Any, errors: Sequence[Any]) -> bool:
    """A pin's key found missing where the same pin holds an unknown key closest to it
    (`imag_arg` for `image_arg`, which chose the format): the unknown key's sentence names it."""
    table, key = tuple(error["loc"][:-1]), error["loc"][-1]
    if error["type"] != "missing" or not table or _kinds_at(table, len(table) - 1) is not _TAGGED["pins"]:
        return False
    return any(
        other["type"] == "extra_forbidden"
        and tuple(other["loc"][:-1]) == table
        and difflib.get_close_matches(str(other["loc"][-1]), [str(key)], n=1)
        for other in errors
    )


def _kinds_at(loc: Sequence[str | int], index: int) -> dict[str, type[BaseModel]] | None:
    """The kinds of the tagged union whose tag `loc[index]` is: it follows the union's key,
    or the key and an index when the key holds a list of such tables (`pins.0.dockerfile-arg`)."""
    before = index - 2 if index >= 2 and isinstance(loc[index - 1], int) else index - 1
    kinds = _TAGGED.get(str(loc[before])) if before >= 0 else None
    return kinds if kinds is not None and isinstance(loc[index], str) else None


def _untagged(loc: list[str | int]) -> list[str | int]:
    """The key path without the kind pydantic names after a tagged union's key
    (`pins.0.dockerfile-arg.image_arg` is the `dockerfile-arg` pin's `pins[0].image_arg`)."""
    return [part for index, part in enumerate(loc) if _kinds_at(loc, index) is None]


# keys whose tables are one of several kinds, by name
_TAGGED: dict[str, dict[str, type[BaseModel]]] = {"build": dict(BUILD_KINDS), "pins": dict(PIN_KINDS)}


def _did_you_mean(loc: Sequence[str | int]) -> str:
    """`, did you mean `labels`?` for an unknown key close to one its table allows."""
    if not loc or not isinstance(loc[-1], str):
        return ""
    model = _model_at(loc[:-1])
    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1) if model else []
    return f", did you mean `{close[0]}`?" if close else ""


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model of the table at `loc` (list indexes pass through), from the fields'
    annotations: the keys it allows are the ones a typo is compared with."""
    model: type[BaseModel] | None = Config
    for index, part in enumerate(loc):
        if isinstance(part, int):
            continue
        kinds = _kinds_at(loc, index)
        if kinds is not None:  # the kind a tagged union chose: its model
            model = kinds.get(str(part))
            continue
        found = model.model_fields.get(part) if model else None
        model = _model_in(found.annotation) if found else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model inside `Annotated[list[Pin] | None, …]` and the like."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        if argument is types.NoneType:
            continue
        found = _model_in(argument)
        if found:
            return found
    return None

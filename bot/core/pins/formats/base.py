"""The interface every pin format keeps, and the sentences all of them say the same way.

A format is pure text: given a pin of the config and the text of its file, it says every
place the pinned image reference is written and every place the wheel's sha256 is, each
as a character span (`ValueSite`). A bump then replaces exactly those characters
(`rewrite`), so every other byte of the file stays as it was. A pin the file cannot hold
as configured is a `PinError` naming the file, and, when the pin names something the file
lacks, the names the file has and the closest one. Before any config, a format also finds
the pins a file already holds (`find`, what `wheelpin init` proposes from), each said as
the config's key for this format would name it, with the references it skipped and why.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ...errors import UsageError
from ...image.reference import ImageRef
from ..locate import ValueSite

# The config model of a format's pins (config.DockerfileArgPin…): each format reads its own.
PinTable = TypeVar("PinTable", contravariant=True)


@dataclass(frozen=True)
class PinProblem:
    """One reason a pin cannot be read, and the key of the pin's config it comes from
    (`sha256_arg`, `file`; None: the format's own key, `image_arg` or `from_stage`), where
    `config validate` says it."""

    sentence: str
    key: str | None = None


class PinError(UsageError):
    """A pin cannot be read or moved; the message names the file. `problems` holds every
    reason found in one reading of the pin (an image ARG and a sha256 ARG both misspelt),
    each at its key; the message says them all."""

    validate_finds = True

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.problems: tuple[PinProblem, ...] = (PinProblem(message, key),)

    @classmethod
    def every(cls, problems: Iterable[PinProblem]) -> PinError:
        said = tuple(problems)
        error = cls("; ".join(problem.sentence for problem in said))
        error.problems = said
        return error


@dataclass(frozen=True)
class PinSites:
    """Where one pin is written in its file: the image reference (one or more places that
    must move together) and the wheel's sha256 (none when the pin carries no sha256)."""

    image: tuple[ValueSite, ...]
    sha256: tuple[ValueSite, ...] = ()


@dataclass(frozen=True)
class Sha256Arg:
    """An ARG whose default is a wheel's sha256, beside an image pin (the config's `sha256_arg`)."""

    name: str
    line: int
    value: str
    python_tag: str | None  # from its name's suffix (`…_SHA256_CP310`), when it has one


@dataclass(frozen=True)
class ConsumerSite:
    """Where the image the wheel is installed into is named: one of the three ways
    `component.consumer` takes it (core/config/model.py Consumer)."""

    file: str
    line: int
    from_arg: str | None = None
    from_stage: str | None = None
    image: str | None = None
    value: str = ""  # the reference as written (with an ARG's default put in)


@dataclass(frozen=True)
class FoundPin:
    """One wheel-image reference pinned by digest that a format found before any config, and
    what sits beside it; `{key: named}` is the pin's place as the config says it."""

    file: str
    line: int
    reference: str
    kind: str  # the format's name (api.FORMATS)
    key: str  # the format's config key (`image_arg`)
    named: str  # its value (`LMCACHE_WHEEL_IMAGE`)
    what: str  # as a sentence says it (`ARG LMCACHE_WHEEL_IMAGE`)
    used_line: int  # where the file uses the image (the stage's FROM): pins are said in that order
    sha256_args: tuple[Sha256Arg, ...]
    consumer: ConsumerSite | None

    @property
    def ref(self) -> ImageRef:
        return ImageRef.parse(self.reference)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Skipped:
    """A reference that is no wheel pin, and why."""

    file: str
    line: int
    what: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}: {self.why}"


@dataclass(frozen=True)
class Reference:
    """A literal value a file names where an image reference can stand, pinned or not: its
    place, the instruction as a sentence says it (`COPY --from`), the value, and the site a
    pin of the config moves it by (config.model `arg_site`, `stage_site`), None when no pin
    format can (an image named in `COPY --from=`), and whether a stage is built on it (runs
    in it: a base image, which no wheel image is, even in a repository that holds both).
    What a component's pins leave behind is found from these (core/pins/behind.py)."""

    file: str
    line: int
    what: str
    value: str
    site: str | None
    base: bool = False


class PinFormat(Protocol[PinTable]):
    """One way a file pins a wheel image; `api.FORMATS` holds one of each by `name`."""

    @property
    def name(self) -> str:
        """The format's name in the registry, as a pin's `kind` says it (`dockerfile-arg`)."""
        ...

    @property
    def key(self) -> str:
        """The config key that says where a pin of this format is (`image_arg`), and that
        selects the format when a pin leaves `kind` out."""
        ...

    def named(self, pin: PinTable) -> str:
        """What the pin names in its file, as `pins list` says it (`LMCACHE_WHEEL_IMAGE`)."""
        ...

    def read(self, pin: PinTable, text: str) -> PinSites:
        """Every site of `pin` in `text` (the text of `pin.file`); PinError naming the file
        when the text is unreadable, lacks what the pin names (with the closest name it
        has), holds no literal reference there, or holds values that disagree."""
        ...

    def looks_in(self, file: str) -> bool:
        """Whether a file of this path (relative to the repository) may hold pins of this
        format: `wheelpin init` reads every file some format looks in."""
        ...

    def find(self, text: str, file: str) -> tuple[list[FoundPin], list[Skipped]]:
        """The wheel pins of this format that `text` (the text of `file`) holds, before any
        config, and the references of this format's shape it skipped, with why; PinError
        naming the file when the text cannot be read."""
        ...

    def references(self, text: str, file: str) -> list[Reference]:
        """Every literal value of this format's shape in `text` that may be an image
        reference, pinned or not, in line order (a later check keeps those of a component's
        repository that no pin moves); PinError naming the file when the text cannot be read."""
        ...


def closest(what: str, name: str, present: Iterable[str]) -> str:
    """` (ARGs here: A, B; did you mean A?)`: a misspelt name is found at once."""
    names = sorted(set(present))
    if not names:
        return f" (it declares no {what})"
    close = difflib.get_close_matches(name, names, n=1)
    return f" ({what} here: {', '.join(names)}" + (f"; did you mean {close[0]}?)" if close else ")")


def literal(file: str, sites: tuple[ValueSite, ...]) -> tuple[ValueSite, ...]:
    """`sites`, when the value they hold is written out: a bump cannot move a variable."""
    if "$" in sites[0].value:
        raise PinError(
            f"{file}:{sites[0].line}: the pinned value {sites[0].value!r} uses a variable; wheelpin pins literal values"
        )
    return sites


def rewrite(text: str, values: Mapping[int, tuple[ValueSite, str]]) -> tuple[str, list[tuple[ValueSite, str]]]:
    """`text` with each site (keyed by its start) holding its new value, and the sites
    whose value changed, last first; every character outside the sites stays as it was."""
    changed: list[tuple[ValueSite, str]] = []
    for start in sorted(values, reverse=True):
        site, value = values[start]
        if site.value == value:
            continue
        text = text[: site.start] + value + text[site.end :]
        changed.append((site, value))
    return text, changed

"""The interface every pin format keeps, and the sentences all of them say the same way.

A format is pure text: given a pin of the config and the text of its file, it says every
place the pinned image reference is written and every place the wheel's sha256 is, each
as a character span (`ValueSite`). A bump then replaces exactly those characters
(`rewrite`), so every other byte of the file stays as it was. A pin the file cannot hold
as configured is a `PinError` naming the file, and, when the pin names something the file
lacks, the names the file has and the closest one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..locate import ValueSite
from ...errors import UsageError

# The config model of a format's pins (config.DockerfileArgPin…): each format reads its own.
PinTable = TypeVar("PinTable", contravariant=True)


class PinError(UsageError):
    """A pin cannot be read or moved; the message names the file."""

    validate_finds = True


@dataclass(frozen=True)
class PinSites:
    """Where one pin is written in its file: the image reference (one or more places that
    must move together) and the wheel's sha256 (none when the pin carries no sha256)."""

    image: tuple[ValueSite, ...]
    sha256: tuple[ValueSite, ...] = ()


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
        raise PinError(f"{file}:{sites[0].line}: the pinned value "
                       f"{sites[0].value!r} uses a variable; wheelpin pins literal values")
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

"""Finding the wheel-image pins a downstream repository's files already hold, before it has
a config (`wheelpin init`). Pure: the caller reads the files.

Every pin format of the registry (core/pins/formats/api.py) says which files it looks in
and finds its own pins there, each as its config key would name it, with the references of
its shape that are no wheel pin (a base image, a reference pinned by tag only, one built
from several variables) and why: a format added to the registry is found by init too.
"""

from __future__ import annotations

from .formats.api import FORMATS
from .formats.base import FoundPin, Skipped


def looked_in(file: str) -> bool:
    """Whether some pin format looks in a file of this path (relative to the repository)."""
    return any(fmt.looks_in(file) for fmt in FORMATS.values())


def scan(text: str, file: str) -> tuple[list[FoundPin], list[Skipped]]:
    """The wheel pins of one file in the order it uses them, and the references skipped in
    line order; PinError naming the file when a format cannot read it."""
    found: list[FoundPin] = []
    skipped: list[Skipped] = []
    for fmt in FORMATS.values():
        if fmt.looks_in(file):
            pins, passed = fmt.find(text, file)
            found += pins
            skipped += passed
    return sorted(found, key=lambda pin: pin.used_line), sorted(skipped, key=lambda skip: skip.line)

"""What a component's pins leave behind: an image reference of the component's repository,
written in one of its pin files, at a site no pin of the config moves (an image named in
`COPY --from=`, a stage or an ARG no component pins), that no stage is built on (a base
image in the same repository, as `rocm/atom-dev` holds both, is none of its wheels). A
bump moves only what pins name, so such a line keeps naming the old image beside the new
pins; it is said wherever the pins are (`pins list`, `config validate`, the dry run, `pins
bump` and the proposal), never moved silently and never left silently. Pure: the caller
reads the files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..config.model import Component, Pin
from ..image.reference import ImageRef, ImageRefError
from .formats.api import FORMATS
from .formats.base import PinError, Reference


def left_behind(component: Component, texts: Mapping[str, str], components: Sequence[Component]) -> list[Reference]:
    """The references of `component`'s image repository in its pin files (`texts` maps each
    to its text) that no pin of `components` (the config's, this one among them) moves, in
    file and line order. Its repository is `image.repository`, and the one its pins hold
    today (the only one known when it publishes to an OCI layout folder). A file a format
    cannot read is the pins' problem, said where they are read: here it holds nothing."""
    ours = [] if component.image.is_layout else [ImageRef.parse(component.image.repository)]
    ours += [ref for ref in map(_pinned, component.pins, [texts.get(pin.file) for pin in component.pins]) if ref]
    claimed = {(pin.file, site) for one in (component, *components) for pin in one.pins for _, site, _ in pin.sites()}
    found: dict[tuple[str, int, str], Reference] = {}
    for file in sorted({pin.file for pin in component.pins} & texts.keys()):
        for fmt in FORMATS.values():
            if not fmt.looks_in(file):
                continue
            try:
                references = fmt.references(texts[file], file)
            except PinError:
                continue
            for reference in references:
                if reference.base or (reference.site is not None and (file, reference.site) in claimed):
                    continue  # a base image (a repository may hold both), or a pin's
                ref = _parsed(reference.value)
                if ref is not None and any(ref.same_repository(repository) for repository in ours):
                    found.setdefault((file, reference.line, reference.value), reference)
    return sorted(found.values(), key=lambda r: (r.file, r.line))


def _pinned(pin: Pin, text: str | None) -> ImageRef | None:
    """The reference `pin` holds in `text`; None when it cannot be read (said elsewhere)."""
    if text is None:
        return None
    try:
        return _parsed(FORMATS[pin.kind].read(pin, text).image[0].value)
    except PinError:
        return None


def _parsed(value: str) -> ImageRef | None:
    try:
        return ImageRef.parse(value)
    except ImageRefError:
        return None


def said(reference: Reference, component: str) -> str:
    """One sentence: where, what it names, and that a bump leaves it as it is."""
    return (
        f"{reference.file}:{reference.line}: {reference.what} names {reference.value}, of {component}'s image "
        "repository, but no pin moves it: a bump leaves it as it is"
    )

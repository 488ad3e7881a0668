"""`wheelpin pins list` and `wheelpin pins bump`: read and move a repository's pins.

Pin files are named by the real file they reach inside the checkout (a symlink out is
refused); a bump writes every file or none, and none if one changed since it was read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ..adapters import logs
from ..adapters.checkoutfiles import canonical_component, read_texts, write_texts_atomically
from ..adapters.imageread import read_image
from ..app.settings import Settings
from ..app.wiring import Registries, target_of
from ..core.errors import UsageError, WheelpinError, doing
from ..core.pins.behind import left_behind, said
from ..core.pins.bump import PinState, Sha256s, Sha256Unknown, parse_sha256_options, plan_bump, read_pins
from ..core.pins.formats.api import FORMATS
from ..core.pins.formats.base import Reference
from ..core.pins.sha256 import held_sha256s, wheel_sha256s
from .output import emit_json, emit_text
from .repo import load

log = logs.get_logger("wheelpin.pins")


def sha256_from_image(image: str, settings: Settings) -> Sha256s:
    """The sha256 of each wheel in the image, as a pass's proposal takes them (wheel_sha256s)."""
    target = target_of(image)
    if target.digest is None:
        raise UsageError(f"{image} is not pinned by digest: give REF@sha256:<64 hex> (a tag can move)")
    with doing(f"reading {image} (for its wheels' sha256)"):
        info = read_image(Registries(settings).store(target), target.digest)
    return wheel_sha256s(info.wheels)


def pinned_sha256s(states: list[PinState], settings: Settings) -> Sha256s:
    """The sha256 of each wheel of the image the pins hold today (the first pin's), to say
    which wheel a sha256 ARG held before the bump (sha256.tag_moved); nothing where it
    cannot be read (a digest deleted, a registry down): the bump does not need it."""
    ref = states[0].ref if states else None
    if ref is None or ref.digest is None:
        return {}
    try:
        target = target_of(str(ref))
        with doing(f"reading {ref} (the pinned image, for its wheels' sha256)"):
            info = read_image(Registries(settings).store(target), ref.digest)
    except WheelpinError as exc:
        log.info("pins.pinned_unread", image=str(ref), problem=exc.message)
        return {}
    return held_sha256s(info.wheels)


def list_command(*, config: Path | None, repo: Path | None, as_json: bool) -> int:
    loaded = load(config=config, repo=repo)
    states: list[PinState] = []
    behind: list[tuple[str, Reference]] = []  # the components' images named where no pin moves them
    components = [canonical_component(component, loaded.root) for component in loaded.config.components]
    for component in components:
        texts = read_texts(loaded.root, sorted({pin.file for pin in component.pins}))
        states += read_pins(component, texts)
        behind += [(component.name, reference) for reference in left_behind(component, texts, components)]
    if as_json:
        emit_json(
            {
                "root": str(loaded.root),
                "pins": [state.to_json() for state in states],
                "left_behind": [
                    {"component": name, "file": r.file, "line": r.line, "what": r.what, "image": r.value}
                    for name, r in behind
                ],
            }
        )
        return 0
    for state in states:
        ref = state.ref
        where = FORMATS[state.pin.kind].named(state.pin)
        emit_text(f"{state.component}  {state.file}:{state.line}  {where}")
        emit_text(f"    image   {state.image}")
        emit_text(f"    digest  {ref.digest if ref and ref.digest else '(none: pinned by tag only)'}")
        if state.pin.sha256_arg:
            tag = f" [{state.pin.python_tag}]" if state.pin.python_tag else ""
            emit_text(f"    sha256  {state.sha256}{tag}  ({state.pin.sha256_arg})")
    for name, reference in behind:
        sys.stderr.write(f"warning: {said(reference, name)}\n")
    return 0


def bump_command(
    *,
    component_name: str,
    image: str,
    sha256: list[str],
    config: Path | None,
    repo: Path | None,
    as_json: bool,
    settings: Settings,
) -> int:
    loaded = load(config=config, repo=repo)
    component = loaded.config.get(component_name)
    if component is None:
        raise UsageError(f"{loaded.path}: {loaded.config.unknown_components([component_name])}")
    component = canonical_component(component, loaded.root)  # one name per real file
    wheel_sha256: Sha256s | Callable[[], Sha256s]
    if sha256:
        wheel_sha256 = parse_sha256_options(sha256)
    else:
        wheel_sha256 = lambda: sha256_from_image(image, settings)  # noqa: E731
    texts = read_texts(loaded.root, sorted({pin.file for pin in component.pins}))
    pinned = None if sha256 else lambda: pinned_sha256s(read_pins(component, texts), settings)  # noqa: E731
    try:
        plan = plan_bump(component, texts, image, wheel_sha256, loaded.config.components, pinned)
    except Sha256Unknown as exc:
        raise UsageError(f"{exc.message}: pass --sha256 {exc.python_tag + '=' if exc.python_tag else ''}HEX") from None
    if not plan.changes_nothing:
        write_texts_atomically(loaded.root, plan.new_texts, expected=texts)  # refused if edited meanwhile
    log.info("pins.bumped", component=component.name, files=len(plan.new_texts), edits=len(plan.edits))
    if as_json:
        emit_json(
            {
                "component": component.name,
                "image": image,
                "changed": not plan.changes_nothing,
                "files": sorted(plan.new_texts),
                "edits": [
                    {"file": e.file, "line": e.line, "what": e.what, "old": e.old, "new": e.new} for e in plan.edits
                ],
                "left_behind": list(plan.left_behind_said),
                "tags_moved": list(plan.tags_moved),
            }
        )
    elif plan.changes_nothing:
        emit_text(f"{component.name}: every pin already holds {image}; nothing changed")
    else:
        for edit in plan.edits:
            emit_text(f"{edit.file}:{edit.line}: {edit.what} {edit.old} → {edit.new}")
        emit_text(f"{component.name}: {len(plan.edits)} value(s) moved in {len(plan.new_texts)} file(s)")
    if not as_json:
        for sentence in (*plan.tags_moved, *plan.left_behind_said):
            sys.stderr.write(f"warning: {sentence}\n")
    return 0

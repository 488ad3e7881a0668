"""Reading a component's pins and planning their bump (docs/design.md §1.6), all pure.

A pin is written in a file in one of the formats of `core/pins/formats/` (an ARG holding
`ref@sha256:digest` with an optional ARG holding the wheel's sha256, or a `FROM … AS stage`
line); its format finds every place it is written. This module does what is the same for
every format: the reference must be one, in the component's repository, with a tag its
template gives; a bump is planned for every file before anything is written, and the
caller writes all new texts or none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..config.model import Component, DockerfileArgPin, DockerfileFromPin, Pin
from ..config.templates import tag_pattern
from ..errors import UsageError
from ..image.reference import ImageRef, ImageRefError, parse_pinned
from .behind import left_behind, said
from .formats.api import FORMATS
from .formats.base import PinError as PinError  # raised here too, and caught by its callers
from .formats.base import Reference, rewrite
from .locate import ValueSite
from .sha256 import Several, ambiguous, tag_moved, tags_holding

# The wheels' sha256s a bump writes, by the python tag a pin names (None: the only wheel):
# given by hand (`--sha256`), or read from the image (sha256.wheel_sha256s).
Sha256s = Mapping[str | None, str | Several]

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class PinState:
    """What one configured pin holds today, and every site it is written at."""

    component: str
    file: str
    pin: Pin
    image_sites: tuple[ValueSite, ...]
    sha256_sites: tuple[ValueSite, ...]

    @property
    def line(self) -> int:
        return self.image_sites[0].line

    @property
    def image(self) -> str:
        return self.image_sites[0].value

    @property
    def ref(self) -> ImageRef | None:
        try:
            return ImageRef.parse(self.image)
        except ImageRefError:
            return None

    @property
    def sha256(self) -> str | None:
        return self.sha256_sites[0].value if self.sha256_sites else None

    @property
    def sha256_line(self) -> int:
        """Where the pin's wheel sha256 is written: its sha256 ARG's line, else the pin's."""
        return self.sha256_sites[0].line if self.sha256_sites else self.line

    def to_json(self) -> dict[str, object]:
        ref = self.ref
        return {
            "component": self.component,
            "file": self.file,
            "line": self.line,
            "arg": self.pin.image_arg if isinstance(self.pin, DockerfileArgPin) else None,
            "from_stage": self.pin.from_stage if isinstance(self.pin, DockerfileFromPin) else None,
            "image": self.image,
            "repository": ref.repository if ref else None,
            "tag": ref.tag if ref else None,
            "digest": ref.digest if ref else None,
            "sha256_arg": self.pin.sha256_arg,
            "sha256": self.sha256,
            "sha256_line": self.sha256_sites[0].line if self.sha256_sites else None,
            "python_tag": self.pin.python_tag,
        }


def read_pin(component: Component, pin: Pin, text: str) -> PinState:
    """What `pin` holds in `text` (its file's), read by the pin's format."""
    sites = FORMATS[pin.kind].read(pin, text)
    return PinState(component.name, pin.file, pin, sites.image, sites.sha256)


def read_pins(component: Component, texts: Mapping[str, str]) -> list[PinState]:
    """Every pin of `component`; `texts` maps each pin file to its text."""
    return [read_pin(component, pin, texts[pin.file]) for pin in component.pins]


@dataclass(frozen=True)
class Edit:
    file: str
    line: int
    old: str
    new: str
    what: str  # "image" | "sha256"
    # a sha256 edit's: the python tag its pin names, so the old value is that wheel's too;
    # None where the pin takes the image's only wheel, whatever its tag (and for an image)
    python_tag: str | None = None


@dataclass(frozen=True)
class BumpPlan:
    component: str
    new_texts: dict[str, str]  # only files that change
    edits: tuple[Edit, ...]
    left_behind: tuple[Reference, ...] = ()  # the component's image named where no pin moves it
    # a sha256 ARG taking the image's only wheel moved to one of another python tag (sha256.tag_moved)
    tags_moved: tuple[str, ...] = ()

    @property
    def left_behind_said(self) -> tuple[str, ...]:
        return tuple(said(reference, self.component) for reference in self.left_behind)

    @property
    def changes_nothing(self) -> bool:
        return not self.edits


def parse_sha256_options(values: list[str]) -> dict[str | None, str]:
    """`--sha256 HEX` (pins with no python_tag) and `--sha256 cp312=HEX`."""
    found: dict[str | None, str] = {}
    for value in values:
        tag, _, digest = value.rpartition("=")
        digest = digest.lower()
        if not SHA256_HEX.match(digest):
            raise UsageError(f"--sha256 {value!r}: a wheel sha256 is 64 hex digits")
        found[tag or None] = digest
    return found


def pinned_ref(state: PinState) -> ImageRef:
    """The reference a pin holds; PinError when it holds no image reference."""
    current = state.ref
    if current is None:
        raise PinError(f"{state.file}:{state.line}: {state.image!r} is not an image reference")
    return current


def repository_misfit(component: Component, ref: ImageRef) -> str | None:
    """Why `ref` cannot be the component's image: it is not in `image.repository` (the
    one comparison the bump and `config validate` make); None when it is, or when the
    component publishes to an OCI layout folder, which a pin cannot name."""
    if component.image.is_layout:
        return None
    if ImageRef.parse(component.image.repository).same_repository(ref):
        return None
    return f"is not in the component's repository {component.image.repository}"


def tag_misfit(component: Component, ref: ImageRef) -> str | None:
    """Why `ref`'s tag is not one the component's `image.tag` gives; None when it is (or
    the reference has no tag)."""
    if ref.tag is None or tag_pattern(component.image.tag, component=component.name).match(ref.tag):
        return None
    return f"tag {ref.tag!r} does not fit the tag template {component.image.tag!r} of component {component.name}"


@dataclass(frozen=True)
class PinFinding:
    """One thing `config validate` says of a pin: the pin's index, the key of its config
    table the sentence is about (`image_arg`, `sha256_arg`, `file`…), and whether the pass
    stops there."""

    index: int
    key: str
    sentence: str
    refused: bool


def pin_findings(
    component: Component, texts: Mapping[str, str], components: Sequence[Component] = ()
) -> list[PinFinding]:
    """What the pass would find in each pin of `component` before any build, for `config
    validate`, every problem of a pin at its own key. Refused: the pass stops there (a name
    the file does not declare, a value that is no reference, a reference in another
    repository than `image.repository`: refused only at the proposal, after building and
    publishing). Not refused: a tag the template does not give, which the first bump
    replaces (a bootstrap pin such as `:latest@sha256:…` is fine), so it is only said, once
    for the pins of one line (Mooncake's pin per python tag shares one image ARG); and a
    reference of the component's repository that no pin of `components` (the config's) moves
    (behind.py), said at the `file` of the first pin in its file: a bump leaves it as it is,
    which may be meant (an old wheel kept on purpose), and the build still works, so it is
    only said."""
    found: list[PinFinding] = []
    misfits_said: set[tuple[str, int]] = set()
    for index, pin in enumerate(component.pins):
        at = FORMATS[pin.kind].key  # the reference's own key
        try:
            state = read_pin(component, pin, texts[pin.file])
            current = pinned_ref(state)
        except PinError as exc:
            found += (PinFinding(index, problem.key or at, problem.sentence, True) for problem in exc.problems)
            continue
        elsewhere = repository_misfit(component, current)
        if elsewhere:
            found.append(PinFinding(index, at, f"{state.file}:{state.line}: {state.image} {elsewhere}", True))
        misfit = tag_misfit(component, current)
        if misfit and (state.file, state.line) not in misfits_said:
            misfits_said.add((state.file, state.line))
            found.append(
                PinFinding(index, at, f"{state.file}:{state.line}: {misfit}: the first bump replaces it", False)
            )
    first = {pin.file: index for index, pin in reversed(list(enumerate(component.pins)))}
    for reference in left_behind(component, texts, components):
        found.append(PinFinding(first[reference.file], "file", said(reference, component.name), False))
    return found


class Sha256Unknown(UsageError):
    """A pin's sha256 ARG names a wheel the image does not hold (`pins bump` says how to give it)."""

    def __init__(self, message: str, *, python_tag: str | None) -> None:
        super().__init__(message)
        self.python_tag = python_tag


def plan_bump(
    component: Component,
    texts: Mapping[str, str],
    image: str,
    sha256: Sha256s | Callable[[], Sha256s],
    components: Sequence[Component] = (),
    pinned: Sha256s | Callable[[], Sha256s] | None = None,
) -> BumpPlan:
    """Plan moving every pin of `component` to `image` (+ wheel sha256s); PinError if any
    pin cannot move, before anything is written. `sha256` may be a function (reading the
    image), called only once every reference has been checked and only if a pin needs it;
    a pin whose key it holds several wheels for is refused (VerificationError): its sha256
    would be a guess. The plan holds what the bump leaves behind too: the component's image
    named in its files where no pin of `components` (the config's) moves it (behind.py),
    and where a sha256 ARG taking the image's only wheel moves to a wheel of other python
    tags than the one it held, the sentence saying so (sha256.tag_moved): `pinned` holds
    the sha256s of the pinned image's wheels (a function reading them, called only then;
    None, not known: nothing is said)."""
    try:
        new_ref = parse_pinned(image)
    except ImageRefError as exc:
        raise UsageError(str(exc)) from None
    misfit = tag_misfit(component, new_ref)
    if misfit:
        raise UsageError(misfit)
    states = read_pins(component, texts)
    for state in states:
        current = pinned_ref(state)
        if not current.same_repository(new_ref):
            raise UsageError(
                f"{image} is in {new_ref.normalized_repository}, but {state.file}:{state.line} "
                f"pins {current.normalized_repository}"
            )
    elsewhere = repository_misfit(component, new_ref)
    if elsewhere:
        raise UsageError(f"{image} {elsewhere}")
    if callable(sha256) and any(state.pin.sha256_arg for state in states):
        sha256 = sha256()
    edits_by_file: dict[str, dict[int, tuple[ValueSite, str, str, str | None]]] = {}
    for state in states:
        written_from = pinned_ref(state)  # checked above: a reference
        written = str(written_from.with_(tag=new_ref.tag, digest=new_ref.digest))
        sites = edits_by_file.setdefault(state.file, {})
        for site in state.image_sites:
            sites[site.start] = (site, written, "image", None)
        if state.pin.sha256_arg:
            wanted = None if callable(sha256) else sha256.get(state.pin.python_tag)
            if isinstance(wanted, Several):
                raise ambiguous(f"{state.file}:{state.sha256_line}", state.pin.sha256_arg, state.pin.python_tag, wanted)
            if wanted is None:
                raise Sha256Unknown(
                    f"{state.file}: {state.pin.sha256_arg} needs the sha256 of the "
                    f"{state.pin.python_tag or 'one'} wheel, which the image does not say",
                    python_tag=state.pin.python_tag,
                )
            for site in state.sha256_sites:
                sites[site.start] = (site, wanted, "sha256", state.pin.python_tag)
    moved: list[str] = []
    for state in states:
        if state.pin.sha256_arg and state.pin.python_tag is None and not callable(sha256) and pinned is not None:
            new = sha256.get(None)
            if isinstance(new, str) and state.sha256 and new != state.sha256:
                pinned = pinned() if callable(pinned) else pinned
                said = tag_moved(
                    f"{state.file}:{state.sha256_line}",
                    state.pin.sha256_arg,
                    tags_holding(pinned, state.sha256),
                    tags_holding(sha256, new),
                )
                if said is not None and said not in moved:
                    moved.append(said)
    new_texts: dict[str, str] = {}
    edits: list[Edit] = []
    for file, sites in edits_by_file.items():
        text, changed = rewrite(texts[file], {start: (site, value) for start, (site, value, *_) in sites.items()})
        edits += [Edit(file, site.line, site.value, value, *sites[site.start][2:]) for site, value in changed]
        if changed:
            new_texts[file] = text
    edits.sort(key=lambda edit: (edit.file, edit.line))
    return BumpPlan(
        component.name, new_texts, tuple(edits), tuple(left_behind(component, texts, components)), tuple(moved)
    )

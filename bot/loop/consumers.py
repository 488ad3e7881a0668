"""The consuming image in the loop (docs/design.md §1, step 5; `component.consumer`): named
by the config or the downstream Dockerfile at the base (observe finds which, and the
observation carries it), read from its layers once a pass (layers cached on disk by
digest), and put to the wheels twice: a library the image lacks refuses the wheel before it
is published; its installed versions become constraints, and the packages the wheel would
leave inconsistent are said, in the proposal.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from ..adapters.consumerread import (
    ConsumerImage,
    ConsumerPlatforms,
    LayerCache,
    ResolvedConsumer,
    read_consumer,
    resolve_consumer,
)
from ..adapters.imagestore import reference_of
from ..core.checks.component import Problem
from ..core.errors import ConfigError, doing
from ..core.image.consumer import ConsumerReport, check, wheel_rocm
from ..core.image.oci import WheelEntry, architecture_of, named_architecture
from ..core.image.reference import ImageRef, ImageRefError
from ..core.sizes import size_text
from .context import Stores
from .observation import Observation

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    from ..core.wheel.report import WheelReport


class Consumers:
    def __init__(self, registries: Stores, cache: Path) -> None:
        self.registries = registries
        self.layers = LayerCache(cache / "layers")
        self._seen: dict[tuple[str, str], ConsumerImage] = {}  # (reference, architecture), this pass

    def new_pass(self) -> None:
        self._seen = {}  # a tag may have moved

    def image(self, observation: Observation, files: Sequence[str]) -> ConsumerImage | None:
        """The consuming image observe found named, read for the wheels' architecture."""
        named = _named(observation)
        if named is None:
            return None
        reference, target = named
        architecture = _architecture(reference, files, built=True)
        key = (reference, architecture)
        if key not in self._seen:
            with doing(_reading(reference)):
                self._seen[key] = read_consumer(
                    self.registries.store(target), _tag_or_digest(target), cache=self.layers, architecture=architecture
                )
        return self._seen[key]

    def problems(self, observation: Observation, reports: Sequence[WheelReport]) -> list[Problem]:
        """The libraries the wheels need that the consuming image does not have."""
        image = self.image(observation, [r.filename for r in reports])
        if image is None:
            return []
        found = check(image.name, image.files, reports, reports)
        by_path = {elf.path: r.filename for r in reports for elf in r.elf}
        return [
            Problem("libraries", f"{text} ({image.name})", file=by_path.get(text.split(" needs ", 1)[0]))
            for text in found.unresolved
        ]

    def seen(self, observation: Observation, wheels: Sequence[WheelEntry]) -> tuple[ConsumerReport, str] | None:
        """What the proposal says of the image: its report (its `absent`: the wheels'
        requirements the image has no distribution for), and its header line."""
        image = self.image(observation, [w.file for w in wheels])
        if image is None:
            return None
        found = check(image.name, image.files, wheels)
        return found, against_header(image, found, wheels)


def against_header(image: ConsumerImage, found: ConsumerReport, wheels: Sequence[WheelEntry]) -> str:
    """The first line of the proposal's "Against the consuming image": which image, its
    Python and ROCm beside the wheel's, what was read of it and what the wheels add."""
    built = wheel_rocm([w.version for w in wheels], [n for w in wheels for n in w.needed or ()])
    installed = [w.installed for w in wheels]
    adds = (
        f", to which the wheels add {size_text(sum(n for n in installed if n is not None))} installed"
        if installed and None not in installed
        else ""
    )
    count = len(found.installed)
    return (
        f"Against `{image.name}` (Python {found.python or 'unknown'}, ROCm {found.rocm or 'unknown'}"
        + (f"; the wheel is built for ROCm {built}" if built else "")
        + "): "
        f"{count} installed package{'' if count == 1 else 's'} read from its layers; "
        f"{size_text(image.size)} as pulled{adds}"
    )


def new_to_image(absent: Sequence[str]) -> tuple[str, ...]:
    """The wheels' requirements the consuming image has no distribution for, in one line (or
    none): what pip brings in with the wheel. Whether the image's Dockerfile installs it
    with `--no-deps` is not known here, so the line says both."""
    if not absent:
        return ()
    it = "it" if len(absent) == 1 else "them"
    return (
        "new to the consuming image: "
        + ", ".join(f"`{requirement}`" for requirement in absent)
        + f" (nothing installed there provides {it}; pip brings {it} in with the wheel, `--no-deps` leaves {it} out)",
    )


def libraries_found(wheels: Sequence[WheelEntry]) -> str:
    """The verification line of the libraries check, which refused every wheel needing a
    library the consuming image lacks before it was published or adopted. Wheels whose
    images record no DT_NEEDED at all hold no ELF file that needs a library: said so, not
    as a check of libraries there were none of."""
    if wheels and all(wheel.needed == () for wheel in wheels):
        return "no ELF file in the wheels needs a shared library"
    return "every library the wheels' ELF files need is in the consuming image"


def resolve(
    registries: Stores, observation: Observation, files: Sequence[str], *, built: bool
) -> ResolvedConsumer | ConsumerPlatforms | None:
    """The consuming image's manifest and config, asked as a pass's read of it starts: the
    same reference, through the same store, and a failure said in the same sentence; no
    layer is read (adapters/consumerread.py, as `config validate --online` asks it). The
    dry run's forecast that the pass can read it.

    `built`: `files` are the wheels the pass checks (an image found), read for their
    architecture as the pass reads it. Else they are an earlier build's (the pinned
    image's), whose architecture, when one names it, is taken for the build's; when none
    does (none read, or pure Python), the build decides: an index of one linux image is
    resolved to it, an index of several is left as ConsumerPlatforms (`platform_said`)."""
    named = _named(observation)
    if named is None:
        return None
    reference, target = named
    architecture = _architecture(reference, files, built=built)
    with doing(_reading(reference)):
        return resolve_consumer(registries.store(target), _tag_or_digest(target), architecture=architecture)


def platform_said(resolved: ResolvedConsumer | ConsumerPlatforms) -> str | None:
    """What a forecast made before the build says of the platform the pass reads the
    consuming image for, resolved with no architecture; None for one image (not an index),
    which the pass reads whatever the wheels' architecture. The pass reads it for the built
    wheels' architecture, and for amd64 when they name none (pure Python: `_architecture`)."""
    if isinstance(resolved, ConsumerPlatforms):
        listed = ", ".join(f"linux/{architecture}" for architecture in resolved.platforms)
        return (
            "decided after the build: the built wheels' architecture, amd64 for pure-Python wheels "
            f"(its index lists {listed})"
        )
    if not resolved.platforms:
        return None
    (only,) = resolved.platforms
    other = "wheels of another architecture" + (
        "" if only == "amd64" else ", pure-Python ones included (read as amd64),"
    )
    return f"linux/{only}, its index's only linux platform (the build's wheels decide: {other} fail where it is read)"


def _named(observation: Observation) -> tuple[str, ImageRef] | None:
    """The consuming image observe found named: its reference as written, and parsed; None
    when the component names none."""
    reference = observation.consumer_reference()
    if reference is None:
        return None
    try:
        return reference, ImageRef.parse(reference)
    except ImageRefError as exc:
        raise ConfigError(f"consumer {reference}: {exc}") from None


@overload
def _architecture(reference: str, files: Sequence[str], *, built: Literal[True]) -> str: ...


@overload
def _architecture(reference: str, files: Sequence[str], *, built: bool) -> str | None: ...


def _architecture(reference: str, files: Sequence[str], *, built: bool) -> str | None:
    """The architecture of the wheels `files`: `built`, as the pass reads the consuming
    image for them (core/image/oci.architecture_of); else the one they name, or None."""
    try:
        return architecture_of(list(files)) if built else named_architecture(list(files))
    except ValueError as exc:  # wheels of several architectures
        raise ConfigError(f"consumer {reference}: {exc}") from None


def _tag_or_digest(target: ImageRef) -> str:
    named = reference_of(target)
    assert named is not None  # ImageRef.parse gives a tag or a digest
    return named


def _reading(reference: str) -> str:
    return f"reading the consuming image {reference} (to check the wheels against it)"

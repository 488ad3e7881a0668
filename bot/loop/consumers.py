"""The consuming image in the loop (docs/design.md §1, step 5; `component.consumer`): named
by the config or the downstream Dockerfile at the base (observe finds which, and the
observation carries it), read from its layers once a pass (layers cached on disk by
digest), and put to the wheels twice: a library the image lacks refuses the wheel before it
is published; its installed versions become constraints, and the packages the wheel would
leave inconsistent are said, in the proposal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..adapters.consumerread import (
    ConsumerImage,
    ConsumerPlatforms,
    LayerCache,
    ResolvedConsumer,
    platforms_read,
    read_consumer,
    resolve_consumer,
)
from ..adapters.imagedocs import config_platform
from ..adapters.imagestore import reference_of
from ..core.checks.component import Problem
from ..core.errors import ConfigError, doing
from ..core.image.consumer import ConsumerReport, check, wheel_rocm, wrong_platform
from ..core.image.oci import WheelEntry, wheel_architecture
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
        # (reference, architecture: None for pure-Python wheels) → the images read, this pass
        self._seen: dict[tuple[str, str | None], list[ConsumerImage]] = {}

    def new_pass(self) -> None:
        self._seen = {}  # a tag may have moved

    def images(self, observation: Observation, files: Sequence[str]) -> list[tuple[ConsumerImage, list[str]]]:
        """The consuming image observe found named, read for the wheels `files` (each
        image with the wheels checked against it, `by_architecture`): for each architecture
        they name, its image; when they name none (pure Python), the image's one linux image,
        or each of its index's (at most consumerread.MAX_PLATFORMS): a pure wheel installs on
        every platform the image is built for, so the checks must hold on each."""
        named = _named(observation)
        if named is None:
            return []
        return self.images_of(*named, files)

    def images_of(
        self, reference: str, target: ImageRef, files: Sequence[str]
    ) -> list[tuple[ConsumerImage, list[str]]]:
        """`images` of the consuming image `reference` (`target` parsed), however it was
        named: by observe for a pass, by hand for `image check`."""
        return [
            (image, wheels)
            for architecture, wheels in by_architecture(files).items()
            for image in self._read(reference, target, architecture)
        ]

    def _read(self, reference: str, target: ImageRef, architecture: str | None) -> list[ConsumerImage]:
        key = (reference, architecture)
        if key not in self._seen:
            store = self.registries.store(target)
            with doing(_reading(reference)):
                found = read_consumer(store, _tag_or_digest(target), cache=self.layers, architecture=architecture)
                self._seen[key] = (
                    [
                        read_consumer(store, image, cache=self.layers, architecture=platform)
                        for platform, image in platforms_read(found).items()
                    ]
                    if isinstance(found, ConsumerPlatforms)
                    else [found]
                )
        return self._seen[key]

    def problems(self, observation: Observation, reports: Sequence[WheelReport]) -> list[Problem]:
        """What refuses the wheels in the consuming image: a platform it is not (pip there
        would not install them), else the libraries they need that it does not have."""
        found: list[Problem] = []
        for image, files in self.images(observation, [r.filename for r in reports]):
            wrong = wrong_platform(image.name, image.platform, files)
            if wrong is not None:  # its libraries are another platform's: not looked for
                found.append(Problem("platform", wrong))
                continue
            checked = [r for r in reports if r.filename in files]
            by_path = {elf.path: r.filename for r in checked for elf in r.elf}
            found += [
                Problem("libraries", f"{text} ({image.name})", file=by_path.get(text.split(" needs ", 1)[0]))
                for text in check(image.name, image.files, checked, checked).unresolved
            ]
        return list(dict.fromkeys(found))

    def seen(self, observation: Observation, wheels: Sequence[WheelEntry]) -> list[tuple[ConsumerReport, str]]:
        """What the proposal says of each image read (one, or one per platform for pure
        wheels): its report (its `absent`: the wheels' requirements the image has no
        distribution for), and its header line."""
        said = []
        for image, files in self.images(observation, [w.file for w in wheels]):
            checked = [w for w in wheels if w.file in files]
            found = check(image.name, image.files, checked)
            said.append((found, against_header(image, found, checked)))
        return said


def by_architecture(files: Sequence[str]) -> dict[str | None, list[str]]:
    """The wheels `files` by the architecture the consuming image is read for: each one
    their platform tags name, with the pure-Python wheels of the set (they install
    anywhere); all of them under None when none names one (pure Python, or no wheel)."""
    named = {architecture: None for architecture in map(wheel_architecture, files) if architecture is not None}
    if not named:
        return {None: list(files)}
    return {
        architecture: [file for file in files if wheel_architecture(file) in (architecture, None)]
        for architecture in named
    }


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


@dataclass(frozen=True)
class Resolved:
    """The consuming image's documents for some of the wheels, as the dry run asks them."""

    found: ResolvedConsumer | ConsumerPlatforms
    wheels: tuple[str, ...]  # the wheels (file names) read against it
    architecture: str | None  # resolved for; None: the wheels name none (pure Python, or none read)
    each: tuple[str, ...] = ()  # pure-Python wheels read against each linux image of an index: its platforms

    def refusal(self) -> str | None:
        """The platform check of the pass (`Consumers.problems`) on these documents."""
        if isinstance(self.found, ConsumerPlatforms):
            return None
        return wrong_platform(self.found.name, config_platform(self.found.config), self.wheels)


def resolve(registries: Stores, observation: Observation, files: Sequence[str], *, built: bool) -> list[Resolved]:
    """The consuming image's manifest and config, asked as a pass's read of it starts: the
    same reference, through the same store, and a failure said in the same sentence; no
    layer is read (adapters/consumerread.py, as `config validate --online` asks it). The
    dry run's forecast that the pass can read it; none when the component names none.

    `built`: `files` are the wheels the pass checks (an image found), read for their
    architectures as the pass reads them (`by_architecture`; for pure-Python ones, each
    linux platform of an index). Else they are an earlier build's (the pinned image's),
    whose architectures, when they name some, are taken for the build's; when none does
    (none read, or pure Python), the build decides: an index of one linux image is
    resolved to it, an index of several is left as ConsumerPlatforms (`platform_said`)."""
    named = _named(observation)
    if named is None:
        return []
    reference, target = named
    store = registries.store(target)
    found: list[Resolved] = []
    with doing(_reading(reference)):
        for architecture, wheels in by_architecture(files).items():
            resolved = resolve_consumer(store, _tag_or_digest(target), architecture=architecture)
            if built and isinstance(resolved, ConsumerPlatforms):  # as the pass reads it: each platform
                each = platforms_read(resolved)
                found += [
                    Resolved(
                        resolve_consumer(store, image, architecture=platform), tuple(wheels), platform, tuple(each)
                    )
                    for platform, image in each.items()
                ]
            else:
                found.append(Resolved(resolved, tuple(wheels), architecture))
    return found


def platform_said(resolved: Sequence[Resolved], *, built: bool) -> str | None:
    """What the plan (and `config validate --online`) says of the platform the pass reads
    the consuming image for, when the wheels decide it: None for one image (not an index)
    the wheels fit. The pass reads an index for each architecture the built wheels name,
    and for pure-Python wheels, for each of its linux platforms (`Consumers.images`).
    `built`: the wheels are those the pass checks; else an earlier build's, a forecast."""
    said = [line for one in resolved if (line := _said(one, built=built)) is not None]
    return "; ".join(dict.fromkeys(said)) or None


def _said(one: Resolved, *, built: bool) -> str | None:
    found = one.found
    if isinstance(found, ConsumerPlatforms):
        listed = ", ".join(f"linux/{architecture}" for architecture in found.platforms)
        return (
            "decided after the build: the linux image of each architecture the built wheels name, "
            f"each of them for pure-Python wheels (its index lists {listed})"
        )
    if one.each:
        listed = ", ".join(f"linux/{architecture}" for architecture in one.each)
        return f"each linux platform of its index, the wheels being pure Python: {listed}"
    wrong = one.refusal()
    if wrong is not None and not built:  # built, it is a refusal (loop/preview.py)
        return f"not the platform of the wheels pinned today: built so again, {wrong}"
    if one.architecture is None and found.platforms:
        (only,) = found.platforms
        if built:  # the image found's wheels are pure Python
            return f"linux/{only}, its index's only linux platform, the wheels being pure Python"
        return (
            f"linux/{only}, its index's only linux platform (the build's wheels decide: wheels built for "
            "another architecture fail where it is read; pure-Python ones are checked against it)"
        )
    return None


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


def _tag_or_digest(target: ImageRef) -> str:
    named = reference_of(target)
    assert named is not None  # ImageRef.parse gives a tag or a digest
    return named


def _reading(reference: str) -> str:
    return f"reading the consuming image {reference} (to check the wheels against it)"

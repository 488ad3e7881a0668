"""The one channel from observe to what follows it: `Observation`, everything observe read
of one component at one moment. The planner decides from its `facts`; execute and the dry
run's plan (loop/preview.py) work from the rest (the pin files, their pins, the pinned
image, the consuming image's reference), so nothing observe read is read again or handed
over another way."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..adapters.imageread import ImageInfo
from ..core.config.model import Component
from ..core.decide.plan import Facts
from ..core.errors import WheelpinError
from ..core.pins.bump import PinState

CommitSought = Literal["no", "yes", "unfetched"]

PINNED_NOT_FOUND = "the pinned digest is not in the registry (404)"


@dataclass(frozen=True)
class Observation:
    facts: Facts
    texts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # the pin files at the base
    pins: tuple[PinState, ...] = ()
    pinned: ImageInfo | None = None  # the image the base pins, when it could be read
    pinned_missing: bool = False  # its digest is not in the registry (a 404): the proposal says so
    pinned_unread: str | None = None  # why it was not read, when a pin names a digest (a dry run says it)
    consumer: str | None = None  # the consuming image's reference, from the config or the Dockerfile at the base
    consumer_unread: WheelpinError | None = None  # why the reference could not be found, raised where it is needed
    # how the pinned image's upstream commit was looked for: not (the pass stopped before),
    # looked for (found or not: facts.pinned_commit), or not found because the upstream could
    # not be fetched (the pass stops there)
    commit_sought: CommitSought = "no"
    # the upstream commit the pin's tag names when its image could not be read (found in the
    # upstream): where the commit list starts, never what the planner takes the base to pin
    tag_commit: str | None = None

    @property
    def since(self) -> tuple[str | None, bool]:
        """The commit a commit list starts after: the one the base pins, else the one its
        pin's tag names (True) when its image could not be read; None when neither is known."""
        if self.facts.pinned_commit is not None:
            return self.facts.pinned_commit, False
        return self.tag_commit, self.tag_commit is not None

    @property
    def pin_problem(self) -> str | None:
        """Why the pinned image could not be read, as the proposal says it (without the
        reference): not in the registry, or the sentence its reading failed with."""
        if self.pinned is not None:
            return None
        return PINNED_NOT_FOUND if self.pinned_missing else self.pinned_unread

    def consumer_reference(self) -> str | None:
        """The consuming image's reference; the error that kept observe from finding it, raised."""
        if self.consumer_unread is not None:
            raise self.consumer_unread
        return self.consumer


def pinned_problem(pins: tuple[PinState, ...], unread: str | None) -> str | None:
    """Why the pinned image could not be read (`unread`: not in the registry, or the
    sentence its reading failed with), with its reference, in one sentence; None when it
    was read or nothing names it."""
    if unread is None:
        return None
    ref = pins[0].ref if pins else None
    if unread == PINNED_NOT_FOUND:
        return f"{PINNED_NOT_FOUND}: {ref}" if ref is not None else PINNED_NOT_FOUND
    return f"the pinned image {ref} could not be read: {unread}" if ref is not None else unread


def pin_repository(component: Component, pins: tuple[PinState, ...]) -> str:
    """The repository an image is pinned by: an OCI layout's pins keep their own name."""
    if component.image.is_layout and pins and pins[0].ref:
        return pins[0].ref.repository
    return component.image.repository

"""What the parts of the loop are wired with: the parts of one component (`Context`), the
pass's reader of what never changes under its name (`Reads`), and what the loop remembers
across passes of one process (`Memory`). Only caches of what was read or written, never a
channel between two steps: losing them costs a request, never a wrong result. What one
step tells the next travels in the observation (loop/observation.py) and in the actions'
outcomes (loop/results.py `Outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..adapters.imageread import ImageInfo, read_image
from ..adapters.imagestore import ImageStore
from ..adapters.platform import Platform
from ..adapters.upstream import UpstreamRepo
from ..core.config.model import Component
from ..core.errors import WheelpinError
from ..core.image.reference import ImageRef
from .builders.base import Builder

if TYPE_CHECKING:  # a pass's registry traffic is counted only where a store made a client
    from ..adapters.registrywire import Traffic


class Stores(Protocol):
    """Opens the image store of a registry repository (`app.wiring.Registries`)."""

    def store(self, target: ImageRef) -> ImageStore: ...

    def traffics(self) -> list[Traffic]:
        """The request counters of every client opened so far (this thread's), each once."""
        ...


@dataclass(frozen=True)
class Context:
    """The parts one component's pass works with; what it read is in its observation."""

    component: Component
    upstream: UpstreamRepo  # one per upstream a pass follows, shared by the components that follow it
    store: ImageStore
    builder: Builder
    branch: str
    components: tuple[Component, ...] = ()  # the config's: a site another one pins is not left behind

    @property
    def name(self) -> str:
        return self.component.name


class Reads:
    """A file of a downstream commit and an image by digest never change: each is read once
    a pass, whoever asks (observe, execute, prune, the dry run's plan); whether a registry
    still holds an image is asked once a pass too."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self._files: dict[tuple[str, str], str | None] = {}
        self._images: dict[str, ImageInfo] = {}
        self._held: dict[str, bool] = {}

    def new_pass(self) -> None:
        """Forgotten at each pass: a long-running service reads what later passes ask anew."""
        self._files, self._images, self._held = {}, {}, {}

    def file_or_none(self, commit: str, path: str) -> str | None:
        if (commit, path) not in self._files:
            self._files[(commit, path)] = self.platform.read_file(commit, path)
        return self._files[(commit, path)]

    def file(self, base: str, path: str) -> str:
        """A file of the base branch's commit `base`, which the config says is there."""
        text = self.file_or_none(base, path)
        if text is None:
            raise WheelpinError(f"{path} does not exist on the base branch")
        return text

    def image(self, store: ImageStore, digest: str) -> ImageInfo:
        """What the image `digest` names holds (its reading's errors are not kept: asked
        again, it is read again)."""
        key = f"{store.name}@{digest}"
        if key not in self._images:
            self._images[key] = read_image(store, digest)
        return self._images[key]

    def still_held(self, store: ImageStore, digest: str) -> bool:
        """Whether the store still holds the image `digest` names (`ImageStore.still_holds`):
        what it holds never changes, whether it is still there can, so it is asked once a
        pass, not at each of its steps (a failure to ask is not kept)."""
        key = f"{store.name}@{digest}"
        if key not in self._held:
            self._held[key] = store.still_holds(digest)
        return self._held[key]


@dataclass
class Memory:
    verified: set[tuple[str, str]] = field(default_factory=set)  # (component, digest) checked in this process
    adopted: set[tuple[str, str]] = field(default_factory=set)  # (component, digest) someone else pushed
    # (component, commit) → tag, digest this process pushed: a registry's tag list may lag a
    # push, so observe looks the tag up by name (and trusts it only if it still names the digest)
    published: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    # per pass: one ls-remote per upstream (the runner keeps one `UpstreamRepo` each), one resolve per base
    heads: dict[int, str] = field(default_factory=dict)
    bases: dict[str, str | None] = field(default_factory=dict)

    def new_pass(self) -> None:
        self.heads, self.bases = {}, {}

    def forget_verified(self, names: set[str]) -> None:
        self.verified = {(name, digest) for name, digest in self.verified if name not in names}
        self.adopted = {(name, digest) for name, digest in self.adopted if name not in names}

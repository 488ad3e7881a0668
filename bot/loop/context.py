"""What observe and execute share: the parts of one component (`Context`) and what the
loop remembers across passes of one process (`Memory`). Only caches of what was read,
never state: losing them costs a request, never a wrong result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..adapters.imageread import ImageInfo
from ..adapters.imagestore import ImageStore
from ..adapters.registrywire import Traffic
from ..adapters.smoke import SmokeResult
from ..adapters.upstream import UpstreamRepo
from ..core.config.model import Component
from ..core.image.reference import ImageRef
from ..core.pins.bump import PinState
from ..core.trust.decide import Provenance
from .builders.base import Builder


class Stores(Protocol):
    """Opens the image store of a registry repository (`app.wiring.Registries`)."""

    def store(self, target: ImageRef) -> ImageStore: ...

    def traffics(self) -> list[Traffic]:
        """The request counters of every client opened so far (this thread's), each once."""
        ...


@dataclass
class Context:
    component: Component
    upstream: UpstreamRepo
    store: ImageStore
    builder: Builder
    branch: str
    pins: list[PinState] = field(default_factory=list)
    pinned_info: ImageInfo | None = None  # the image the base pins, when it can be read
    pinned_unread: str | None = None  # why it could not be, when a pin names a digest
    texts: dict[str, str] = field(default_factory=dict)  # the pin files at the base
    judged_under: str = ""  # what its wheels are judged under this pass (observe._judged_under)
    pinned_problem: str | None = None  # why the pinned image could not be read (a 404), when known
    # how the pinned image's provenance was verified, once looked at: its wheels' attestations
    # (loop/trustcheck.py), or wheelpin's own signed statement (Source.SIGNED_STATEMENT)
    pinned_provenance: Provenance | None = None

    @property
    def name(self) -> str:
        return self.component.name


@dataclass
class Memory:
    verified: set[tuple[str, str]] = field(default_factory=set)  # (component, digest) checked in this process
    adopted: set[tuple[str, str]] = field(default_factory=set)  # (component, digest) someone else pushed
    made_by: dict[tuple[str, str], str | None] = field(default_factory=dict)  # (component, commit) → its build, said
    smoke: dict[tuple[str, str], SmokeResult] = field(default_factory=dict)  # (component, commit) → its smoke test
    published: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (component, commit) → tag, digest: tag lists may lag a push
    # per pass: one ls-remote per upstream, one resolve per base, each file of a commit read once
    heads: dict[tuple[str, str | None, str | None], tuple[str, dict[str, str]]] = field(default_factory=dict)
    bases: dict[str, str | None] = field(default_factory=dict)
    files: dict[tuple[str, str], str] = field(default_factory=dict)
    ls_remotes: int = 0

    def note_build(self, component: str, commit: str, *, made_by: str | None = None,
                   smoke: SmokeResult | None = None) -> None:
        """What the proposal of `commit` will say of its build, kept for the component's
        latest commit only (a long-running service publishes without end)."""
        for kept in (self.made_by, self.smoke):
            for key in [key for key in kept if key[0] == component and key[1] != commit]:
                del kept[key]
        if made_by is not None:
            self.made_by[(component, commit)] = made_by
        if smoke is not None:
            self.smoke[(component, commit)] = smoke

    def new_pass(self) -> None:
        self.heads, self.bases, self.files, self.ls_remotes = {}, {}, {}, 0

    def forget_verified(self, names: set[str]) -> None:
        self.verified = {(name, digest) for name, digest in self.verified if name not in names}
        self.adopted = {(name, digest) for name, digest in self.adopted if name not in names}

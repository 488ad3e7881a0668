"""The `trust` check in the loop (docs/design.md §1.3): after the wheels passed their checks
and before anything is published or proposed, each wheel's GitHub attestations are read
(adapters/github/attestations.py) and verified offline (adapters/sigstoreverify.py), and
core/trust/decide.py judges them against the pinned image's provenance. A component whose
`trust.attestations` is "off" (the default) costs nothing here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.image.reference import short_digest
from ..core.trust.decide import Found, Judgement, Provenance, judge, needs_pinned, provenance_of
from ..core.trust.policy import Trust

if TYPE_CHECKING:  # GitHub's client and sigstore load only for a component whose `trust` asks
    from ..adapters.github.attestations import AttestationsReader
    from ..adapters.imageread import ImageInfo
    from ..adapters.sigstoreverify import TrustedRoots


@dataclass(frozen=True)
class Wheel:
    file: str
    sha256: str


@dataclass
class TrustCheck:
    reader: Callable[[], AttestationsReader]  # made at the first look: GitHub's client loads only then
    cache: Path  # the trusted roots are kept there
    _reader: AttestationsReader | None = None
    _roots: TrustedRoots | None = None
    # verified ones only: a wheel without an attestation may get one, a verified one stays so
    _verified: dict[tuple[Trust, str], Found] = field(default_factory=dict)

    def judge(
        self,
        trust: Trust,
        pinned: ImageInfo | None | Callable[[], ImageInfo | None],
        wheels: Sequence[Wheel],
        *,
        image: str | None = None,
    ) -> Judgement:
        """The decision for `wheels` (the new image's, whose digest `image` is looked up too
        once it is published), the `pinned` image's provenance looked at only when it decides
        (`pinned` may be a reader of it, called only then: `image publish` reads it from the
        registry, a pass has it already)."""
        if not trust.checked:
            return Judgement()
        new = self.provenance(trust, wheels)
        image_found = None
        if image is not None and new.verified:
            image_found = self._found(trust, Wheel(short_digest(image) + "…", image.removeprefix("sha256:")))
        before = None
        if needs_pinned(trust, new):
            info = pinned() if callable(pinned) else pinned
            if info is not None:
                before = self.provenance(trust, [Wheel(entry.file, entry.sha256) for entry in info.wheels])
        return judge(trust, new, before, image_found)

    def provenance(self, trust: Trust, wheels: Sequence[Wheel]) -> Provenance:
        return provenance_of([self._found(trust, wheel) for wheel in wheels])

    def _found(self, trust: Trust, wheel: Wheel) -> Found:
        from ..adapters.sigstoreverify import NotAttested, TrustedRoots, verify

        key = (trust, wheel.sha256)
        if key in self._verified:
            return self._verified[key]
        if self._reader is None:
            self._reader = self.reader()
        if self._roots is None:
            self._roots = TrustedRoots.load(self.cache)
        problems: list[str] = []
        for number, listed in enumerate(self._reader.listed(trust.repository, wheel.sha256), 1):
            if listed.bundle is None:
                problems.append(
                    f"attestation {number} has its bundle only in storage ({listed.bundle_url}), which is not read"
                )
                continue
            try:
                signer = verify(listed.bundle, wheel.sha256, trust, self._roots)
            except NotAttested as exc:
                problems.append(f"attestation {number}: {exc.why}")
                continue
            found = self._verified[key] = Found(wheel.file, wheel.sha256, signer)
            return found
        problem = (
            (problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
            if problems
            else f"GitHub lists no attestation of sha256:{wheel.sha256[:12]}… in {trust.repository}"
        )
        return Found(wheel.file, wheel.sha256, None, problem, listed=len(problems))

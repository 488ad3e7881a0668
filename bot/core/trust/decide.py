"""The trust decision of a bump (docs/design.md §1.3): the provenance found for the new
wheels and for the pinned ones → accept (the proposal's ✅ line), refuse (one sentence), or
accept a downgrade said loudly. Pure: the attestations are read and verified by
loop/trustcheck.py through adapters/github/attestations.py and adapters/sigstoreverify.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from .policy import Attestations, Trust

GITHUB = "https://github.com/"


class Source(StrEnum):
    """How an image's wheels' provenance was verified (wheelpin's own signed statement is
    judged apart, image by image: statement_downgrade)."""

    ATTESTATION = "attestation"  # every wheel: a GitHub attestation by the signer workflow, verified
    NONE = "none"


@dataclass(frozen=True)
class Signer:
    """Who signed a verified attestation: the certificate's identity and the run it names."""

    identity: str  # https://github.com/OWNER/REPO/.github/workflows/F.yaml@refs/heads/main
    run: str  # the run invocation URI: https://github.com/OWNER/REPO/actions/runs/ID/attempts/N

    @property
    def workflow(self) -> str:
        """OWNER/REPO/.github/workflows/F.yaml@REF, as a reader knows it."""
        return self.identity.removeprefix(GITHUB)


@dataclass(frozen=True)
class Found:
    """One wheel's attestations, looked up by its sha256 and verified."""

    file: str
    sha256: str
    signer: Signer | None  # None: no valid one
    problem: str = ""  # why none is valid: "GitHub lists none", or the first one's fault
    listed: int = 0  # how many GitHub listed

    @property
    def said(self) -> str:
        return f"{self.file}: {self.problem}"


@dataclass(frozen=True)
class Provenance:
    """What an image's wheels have: verified provenance (and how), or none."""

    source: Source
    found: tuple[Found, ...] = ()

    @property
    def verified(self) -> bool:
        return self.source != Source.NONE

    @property
    def missing(self) -> tuple[Found, ...]:
        return tuple(found for found in self.found if found.signer is None)

    @property
    def signers(self) -> tuple[Signer, ...]:
        """Each distinct signer, in the wheels' order."""
        return tuple(dict.fromkeys(found.signer for found in self.found if found.signer is not None))

    @property
    def said(self) -> str:
        if self.source == Source.ATTESTATION:
            return "attested (" + "; ".join(_built_by(signer) for signer in self.signers) + ")"
        return "not attested"


def provenance_of(found: Sequence[Found]) -> Provenance:
    """Attested when every wheel has a valid attestation; none otherwise."""
    attested = bool(found) and all(each.signer is not None for each in found)
    return Provenance(Source.ATTESTATION if attested else Source.NONE, tuple(found))


@dataclass(frozen=True)
class Judgement:
    refused: str | None = None  # one sentence: nothing is published or proposed
    verification: tuple[str, ...] = ()  # the proposal's ✅ lines
    notes: tuple[str, ...] = ()  # what the proposal says loudly


def needs_pinned(trust: Trust, new: Provenance) -> bool:
    """Whether the pinned image's provenance decides: only when the new one has none and
    losing it is not already refused (required)."""
    return trust.attestations == Attestations.OPTIONAL and not new.verified


def judge(trust: Trust, new: Provenance, pinned: Provenance | None, image: Found | None = None) -> Judgement:
    """The decision for the new wheels' provenance, given the pinned image's (None: none
    pinned, or not read); `image`, the image digest's own attestations where looked up,
    is said (a workflow that pushed the image may attest it too), never required."""
    if not trust.checked:
        return Judgement()
    verification, notes = _image_said(image)
    if new.verified:
        return Judgement(verification=tuple(_built_by(signer) for signer in new.signers) + verification, notes=notes)
    missing = "; ".join(found.said for found in new.missing)
    if trust.attestations == Attestations.REQUIRED:
        return Judgement(refused=f"no valid attestation by {trust.identity}: {missing}")
    if pinned is not None and pinned.verified:
        if not trust.allow_downgrade:
            return Judgement(
                refused=f"trust downgrade: the pinned image's wheels were {pinned.said}, the new "
                f"ones have no valid attestation by {trust.identity} ({missing}); "
                "trust.allow_downgrade = true accepts that"
            )
        return Judgement(
            notes=(
                f"TRUST DOWNGRADE, allowed by trust.allow_downgrade: the pinned image's wheels "
                f"were {pinned.said}; the new ones have no valid attestation by "
                f"{trust.identity} ({missing})",
            )
        )
    return Judgement(
        notes=(
            f"not attested: no valid attestation by {trust.identity} ({missing}); "
            'trust.attestations = "optional" lets it through',
        )
    )


def _image_said(image: Found | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The image digest's attestation: a ✅ line when one verifies, a note when GitHub lists
    some and none verifies, nothing when it lists none (wheelpin's own images have none)."""
    if image is None or (image.signer is None and not image.listed):
        return (), ()
    if image.signer is not None:
        return (f"the image {image.file} is attested too: {_built_by(image.signer)}",), ()
    return (), (f"the image {image.file} has an attestation that does not verify: {image.problem}",)


def checked_after_build(trust: Trust) -> str | None:
    """What a dry run names among the checks made once the wheels are there."""
    if not trust.checked:
        return None
    return f"each wheel's GitHub attestation (signed by {trust.identity}, {trust.attestations.value})"


def _built_by(signer: Signer) -> str:
    return f"built by {signer.workflow}, run {signer.run}"


def statement_downgrade(trust: Trust, *, pinned_signed: bool, new_signed: bool, new: str) -> Judgement:
    """The downgrade of wheelpin's own signed provenance statement: the pinned image carries
    one the operator's key verifies and the `new` image (adopted from someone else's push, or
    published without the key) carries none. Refused unless `trust.allow_downgrade`, and said
    loudly then; nothing to say when the pinned image had none or the new one has one too."""
    if not pinned_signed or new_signed:
        return Judgement()
    lost = (
        f"the pinned image carries wheelpin's provenance statement signed by the operator's key, {new} "
        "carries none (pushed by someone else, or published without the key)"
    )
    if not trust.allow_downgrade:
        return Judgement(refused=f"trust downgrade: {lost}; trust.allow_downgrade = true accepts that")
    return Judgement(notes=(f"TRUST DOWNGRADE, allowed by trust.allow_downgrade: {lost}",))

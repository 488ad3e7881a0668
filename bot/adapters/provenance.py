"""The provenance step after the publish step (docs/provenance.md): an image wheelpin
published gets its SLSA provenance statement (signed, in a Sigstore bundle, when the
operator gave a key) and its CycloneDX SBOM attached (adapters/referrers.py); `image
show` lists what is attached, `image verify` checks a signed statement against a key.

What is attached already is looked up first: the same document (same bytes: they are
reproducible) is never pushed twice, and a document of a kind the image already carries
(the statement, the SBOM, a bundle signed by the same key) is left as it is, so
publishing the same image again, from another build of the same commit, adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.checks.api import KINDS
from ..core.errors import InputError, VerificationError
from ..core.image.oci import MANIFEST_TYPE
from ..core.image.reach import Reach
from ..core.image.reference import short_digest
from ..core.provenance import dsse
from ..core.provenance.bundle import BUNDLE_TYPE, bundle_bytes, envelope_of
from ..core.provenance.sbom import SBOM_TYPE, sbom_bytes
from ..core.provenance.statement import PAYLOAD_TYPE, SLSA_PROVENANCE, BuildFacts, checked_statement, statement_bytes
from . import logs
from .imagestore import ImageStore
from .publisher import PublishResult
from .referrers import Artifact, Referrer, Subject, attach_all, list_referrers, read_document

log = logs.get_logger("wheelpin.provenance")

# Manifest annotations of the artifacts: cosign's specs/BUNDLE_SPEC.md names the first two;
# the in-toto one is the key BuildKit's attestation storage (docs.docker.com, "Image
# attestation storage") names an in-toto statement's predicate with; the key's hint is
# wheelpin's, so a bundle signed by another key is told apart without reading it.
BUNDLE_CONTENT = "dev.sigstore.bundle.content"
BUNDLE_PREDICATE = "dev.sigstore.bundle.predicateType"
INTOTO_PREDICATE = "in-toto.io/predicate-type"
KEY_HINT = "io.wheelpin.key"
MAX_DOCUMENT = 4 << 20  # bytes of one attached document wheelpin reads back


@dataclass(frozen=True)
class Attached:
    kind: str  # "provenance" | "sbom" | "other"
    artifact_type: str
    digest: str
    signed: bool
    status: str  # "attached" (pushed now) | "present" (there before) | "listed" (read by image show)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "artifact_type": self.artifact_type,
            "digest": self.digest,
            "signed": self.signed,
            "status": self.status,
        }

    def text(self) -> str:
        signed = "signed (DSSE in a Sigstore bundle)" if self.signed else "unsigned"
        return f"{self.kind} {self.digest} {self.artifact_type}, {signed}"


def facts_of(
    result: PublishResult,
    *,
    source: str | None,
    revision: str | None,
    component: str | None,
    rules: str | None,
    build: str | None,
    smoke: Sequence[str],
) -> BuildFacts:
    """What the statement says of an image the publish step just pushed or found: its
    wheels passed every kind of check (the publisher is never reached otherwise)."""
    return BuildFacts(
        repository=result.store,
        digest=result.digest,
        tag=result.tag,
        wheels=result.wheels,
        source=source,
        revision=revision,
        component=component,
        rules=rules,
        build=build,
        verification=verification_of(smoke),
    )


def verification_of(smoke: Sequence[str]) -> dict[str, Any]:
    """The statement's verification results of wheels that passed: each kind of check, and
    what the smoke test said when one ran."""
    verification: dict[str, Any] = {"result": "passed", "checks": list(KINDS)}
    if smoke:
        verification["smoke"] = list(smoke)
    return verification


def described(referrer: Referrer, status: str = "listed") -> Attached:
    kind = {BUNDLE_TYPE: "provenance", PAYLOAD_TYPE: "provenance", SBOM_TYPE: "sbom"}.get(
        referrer.artifact_type, "other"
    )
    return Attached(kind, referrer.artifact_type, referrer.digest, referrer.artifact_type == BUNDLE_TYPE, status)


def carries_provenance(attached: Sequence[Attached]) -> bool:
    return any(item.kind == "provenance" for item in attached)


def proposal_link(store: str, ref: str, attached: list[Attached], *, reach: Reach = Reach()) -> str:
    """What a proposal's Provenance line adds: where the statement and the SBOM are, and
    the command that checks a signed one (with the flags its registry needs)."""
    ours = [item for item in attached if item.kind in ("provenance", "sbom")]
    if not ours:
        return ""
    said = [
        f"{'signed ' if item.signed else ''}{'SLSA provenance' if item.kind == 'provenance' else 'SBOM'} "
        f"`{store}@{item.digest}`"
        for item in ours
    ]
    check = (
        f" (check it: `wheelpin image verify{reach.wheelpin_flags} {ref} --key YOUR-KEY.pub`)"
        if any(item.signed for item in ours)
        else ""
    )
    return "; attached: " + ", ".join(said) + check


def attached_to(store: ImageStore, digest: str) -> list[Attached]:
    """What `image show` lists: every artifact attached to the image, wheelpin's or not."""
    return [described(referrer) for referrer in list_referrers(store, digest)]


Document = tuple[str, bytes, dict[str, str], str]


def documents(facts: BuildFacts, key: dsse.SigningKey | None) -> list[Document]:
    """(artifactType, bytes, annotations, file title) of each document an image gets."""
    statement = statement_bytes(facts)
    hexdigest = facts.digest.removeprefix("sha256:")
    provenance: Document
    if key is None:
        provenance = (PAYLOAD_TYPE, statement, {INTOTO_PREDICATE: SLSA_PROVENANCE}, f"sha256-{hexdigest}.intoto.json")
    else:
        envelope = dsse.sign(PAYLOAD_TYPE, statement, key)
        provenance = (
            BUNDLE_TYPE,
            bundle_bytes(envelope),
            {BUNDLE_CONTENT: "dsse-envelope", BUNDLE_PREDICATE: SLSA_PROVENANCE, KEY_HINT: envelope.keyid},
            f"sha256-{hexdigest}.sigstore.json",
        )
    sbom: Document = (
        SBOM_TYPE,
        sbom_bytes(facts.repository, facts.digest, facts.wheels),
        {},
        f"sha256-{hexdigest}.cdx.json",
    )
    return [provenance, sbom]


def attach_provenance(
    store: ImageStore, facts: BuildFacts, key: dsse.SigningKey | None, *, manifest_size: int | None = None
) -> tuple[list[Attached], int]:
    """Attach the image's statement and SBOM unless it carries them already; (what it carries
    of them, bytes uploaded). `manifest_size`: the image manifest's, when its publisher knows
    it (else it is read)."""
    size = manifest_size if manifest_size is not None else len(store.get_manifest(facts.digest))
    subject = Subject(facts.digest, size, MANIFEST_TYPE)
    existing = list_referrers(store, facts.digest)
    done: list[Attached] = []
    new: list[Artifact] = []
    for artifact_type, document, notes, title in documents(facts, key):
        same = [
            item
            for item in existing
            if item.artifact_type == artifact_type
            and all(item.annotations.get(name) == value for name, value in notes.items())
        ]
        if same:
            done.append(described(same[0], "present"))
            continue
        new.append(Artifact(artifact_type, document, notes, title))
    pushed, uploaded = attach_all(store, subject, new, existing)
    done += [described(referrer, "attached") for referrer in pushed]
    log.info(
        "provenance.attached",
        store=store.name,
        digest=facts.digest,
        bytes_uploaded=uploaded,
        attached=[item.digest for item in done if item.status == "attached"],
    )
    return done, uploaded


def verify_attached(store: ImageStore, digest: str, key: dsse.PublicKey) -> dict[str, Any]:
    """The statement of a Sigstore bundle attached to the image `digest` whose DSSE signature
    `key` made, whose payload is an in-toto statement with a SLSA provenance predicate and
    whose subject is this image; VerificationError, one sentence, when there is none."""
    bundles = [item for item in list_referrers(store, digest) if item.artifact_type == BUNDLE_TYPE]
    if not bundles:
        raise VerificationError(
            f"{store.name}@{digest} carries no signed provenance (no Sigstore bundle is attached to it)"
        )
    failed: list[str] = []
    for referrer in bundles:
        try:
            envelope = envelope_of(read_document(store, referrer, MAX_DOCUMENT))
            payload_type, payload = dsse.verify(envelope, key)
            if payload_type != PAYLOAD_TYPE:
                raise ValueError(f"its payload type is {payload_type!r}, not {PAYLOAD_TYPE}")
            return checked_statement(payload, digest)
        except (ValueError, InputError) as exc:
            failed.append(f"{short_digest(referrer.digest)}: {exc}")
    raise VerificationError(
        f"{store.name}@{digest}: no attached provenance passes: {'; '.join(failed)}", problems=tuple(failed)
    )


def signed_by(store: ImageStore, digest: str, key: dsse.PublicKey) -> bool:
    """Whether the image `digest` carries a provenance statement `key` signed (a statement
    that fails to verify counts as none)."""
    try:
        verify_attached(store, digest, key)
    except VerificationError:
        return False
    return True


def statement_summary(statement: dict[str, Any]) -> dict[str, Any]:
    """What `image verify` says of a statement that passed."""
    definition = statement.get("predicate", {}).get("buildDefinition", {})
    return {
        "predicate_type": statement.get("predicateType"),
        "external_parameters": definition.get("externalParameters", {}),
        "build": definition.get("internalParameters", {}).get("build"),
        "invocation": statement.get("predicate", {}).get("runDetails", {}).get("metadata", {}).get("invocationId"),
    }

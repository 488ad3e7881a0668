"""Documents attached to an image (its provenance, its SBOM) as OCI 1.1 artifacts that name
the image as their `subject`, and the list of what is attached to one.

Shapes followed (OCI image-spec v1.1.0 manifest.md, "Guidelines for artifact usage"; OCI
distribution-spec v1.1.0 spec.md, "Listing Referrers" and "Referrers Tag Schema"; cosign's
specs/BUNDLE_SPEC.md, which attaches Sigstore bundles this same way):
- an artifact is an image manifest with an `artifactType`, the empty config
  (`application/vnd.oci.empty.v1+json`, the two bytes `{}`), one layer holding the
  document, and a `subject` descriptor naming the image; it is pushed by its digest,
  with no tag;
- a registry with the referrers API answers the push with an `OCI-Subject` header and
  lists the artifacts at `GET /v2/<name>/referrers/<digest>`; one without it (Debian's
  docker-registry, distribution 2.8, answers that GET 404) is given the fallback: an
  image index under the tag `sha256-<hex of the subject digest>`, listing each
  artifact's descriptor with its artifactType and annotations, which the client updates.
- an OCI image-layout folder has no API at all: it gets the same fallback tag in its
  index.json (so `wheelpin demo`'s folder shows the same documents).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..core.errors import InputError
from ..core.image.oci import INDEX_TYPE, MANIFEST_TYPE, canonical_json
from .imagestore import ImageStore

EMPTY_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY = b"{}"
EMPTY_DIGEST = "sha256:" + hashlib.sha256(EMPTY).hexdigest()
TITLE = "org.opencontainers.image.title"
MAX_LISTED = 256  # artifacts one subject's list may hold before wheelpin stops reading it


@dataclass(frozen=True)
class Referrer:
    """One artifact attached to an image, as the referrers list describes it."""

    digest: str
    artifact_type: str
    size: int
    annotations: dict[str, str] = field(default_factory=dict)

    def descriptor(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "mediaType": MANIFEST_TYPE,
            "digest": self.digest,
            "size": self.size,
            "artifactType": self.artifact_type,
        }
        if self.annotations:
            entry["annotations"] = dict(self.annotations)
        return entry


@dataclass(frozen=True)
class Subject:
    digest: str
    size: int
    media_type: str = MANIFEST_TYPE


def fallback_tag(digest: str) -> str:
    """distribution-spec's referrers tag: the digest with its `:` made `-`."""
    return digest.replace(":", "-")


# A tag naming no image of its own but documents attached to one: the referrers tag above,
# and cosign's older attachment tags, `sha256-<subject hex>.sig`, `.att` and `.sbom`
# (cosign's doc/cosign_attach_sbom.md: "Attachment images are tagged as:
# [AttachmentTagPrefix]sha256-[TargetImageDigest].[AttachmentName]").
_ATTACHMENT_TAG = re.compile(r"sha256-[0-9a-f]{64}(\.(sig|att|sbom))?")


def is_attachment_tag(tag: str) -> bool:
    """Whether `tag` holds documents attached to an image rather than an image."""
    return _ATTACHMENT_TAG.fullmatch(tag) is not None


def artifact_manifest(
    subject: Subject, artifact_type: str, document: bytes, *, title: str, annotations: dict[str, str]
) -> bytes:
    layer = {
        "mediaType": artifact_type,
        "digest": "sha256:" + hashlib.sha256(document).hexdigest(),
        "size": len(document),
        "annotations": {TITLE: title},
    }
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "artifactType": artifact_type,
        "config": {"mediaType": EMPTY_TYPE, "digest": EMPTY_DIGEST, "size": len(EMPTY)},
        "layers": [layer],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": subject.size},
    }
    if annotations:
        manifest["annotations"] = dict(annotations)
    return canonical_json(manifest)


def list_referrers(store: ImageStore, digest: str) -> list[Referrer]:
    """What is attached to the image `digest` names: by the referrers API where the registry
    has it, else (and in a layout folder) from the fallback tag; none when neither has any."""
    listed = store.referrers_index(digest)
    if listed is not None:
        return _listed(listed, f"{store.name}: the referrers of {digest}")
    return _fallback_index(store, digest)[1]


def _fallback_index(store: ImageStore, digest: str) -> tuple[str | None, list[Referrer]]:
    """(the fallback tag's digest, the artifacts its index lists); (None, []) when untagged."""
    tagged = store.tag_digest(fallback_tag(digest))
    if tagged is None:
        return None, []
    return tagged, _listed(store.get_manifest(tagged), f"{store.name}:{fallback_tag(digest)}")


def _listed(body: bytes, what: str) -> list[Referrer]:
    try:
        index = json.loads(body)
    except ValueError:
        raise InputError(f"{what} is not JSON") from None
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list):
        raise InputError(f"{what} is not an image index")
    if len(manifests) > MAX_LISTED:
        raise InputError(f"{what} lists {len(manifests)} artifacts, more than the {MAX_LISTED} wheelpin reads")
    found = []
    for entry in manifests:
        if not isinstance(entry, dict) or not isinstance(entry.get("digest"), str):
            raise InputError(f"{what} holds an entry without a digest")
        annotations = entry.get("annotations") if isinstance(entry.get("annotations"), dict) else {}
        size = entry.get("size")
        found.append(
            Referrer(
                entry["digest"],
                str(entry.get("artifactType") or ""),
                size if isinstance(size, int) else 0,
                {str(k): str(v) for k, v in (annotations or {}).items()},
            )
        )
    return found


@dataclass(frozen=True)
class Artifact:
    """A document to attach: its artifact type, bytes, manifest annotations and file title."""

    artifact_type: str
    document: bytes
    annotations: dict[str, str]
    title: str


def attach(
    store: ImageStore,
    subject: Subject,
    artifact_type: str,
    document: bytes,
    *,
    title: str,
    annotations: dict[str, str],
    existing: list[Referrer],
) -> tuple[Referrer, int]:
    """Push `document` as an artifact whose subject is `subject`, and list it in the fallback
    tag unless the registry said it indexed it itself; (its descriptor, bytes uploaded).
    `existing` is what list_referrers found: an artifact already listed is not pushed again."""
    (referrer,), uploaded = attach_all(
        store, subject, [Artifact(artifact_type, document, annotations, title)], existing
    )
    return referrer, uploaded


def attach_all(
    store: ImageStore, subject: Subject, artifacts: Sequence[Artifact], existing: list[Referrer]
) -> tuple[list[Referrer], int]:
    """Push each of `artifacts` whose subject is `subject` (none `existing` lists again), then
    list those the registry did not index itself in the fallback tag, in one read-modify-write
    of its index; (their descriptors, bytes uploaded)."""
    referrers: list[Referrer] = []
    unindexed: list[Referrer] = []
    uploaded = 0
    for artifact in artifacts:
        manifest = artifact_manifest(
            subject, artifact.artifact_type, artifact.document, title=artifact.title, annotations=artifact.annotations
        )
        referrer = Referrer(
            "sha256:" + hashlib.sha256(manifest).hexdigest(),
            artifact.artifact_type,
            len(manifest),
            artifact.annotations,
        )
        referrers.append(referrer)
        if any(item.digest == referrer.digest for item in existing):
            continue
        for blob in (EMPTY, artifact.document):
            digest = "sha256:" + hashlib.sha256(blob).hexdigest()
            if not store.has_blob(digest):
                uploaded += store.put_blob(digest, len(blob), partial(list, [blob]))
        if not store.put_artifact(manifest, MANIFEST_TYPE, subject.digest):
            unindexed.append(referrer)
        uploaded += len(manifest)
    if unindexed:
        uploaded += _add_to_fallback(store, subject.digest, unindexed)
    return referrers, uploaded


def _add_to_fallback(store: ImageStore, subject: str, referrers: Sequence[Referrer]) -> int:
    """Add `referrers` to the subject's fallback index (read, add, write: the spec's client
    update; a layout folder's is a compare-and-set under its lock)."""
    was, listed = _fallback_index(store, subject)
    known = {item.digest for item in listed}
    added = [item for item in referrers if item.digest not in known]
    if not added:
        return 0
    index = canonical_json(
        {"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [item.descriptor() for item in [*listed, *added]]}
    )
    store.move_tag(fallback_tag(subject), index, INDEX_TYPE, was=was)
    return len(index)


def detach_all(store: ImageStore, digest: str) -> int:
    """Delete what is attached to the image `digest` names, once the image itself is deleted:
    each artifact (its subject is gone) and the fallback tag's index; how many were deleted.
    A store that cannot delete that way keeps them (its own garbage collection is left)."""
    listed = list_referrers(store, digest)
    tagged = store.tag_digest(fallback_tag(digest))
    deleted = sum(1 for referrer in listed if store.delete(referrer.digest))
    if tagged is not None and (store.delete(fallback_tag(digest)) or store.delete(tagged)):
        deleted += 1
    return deleted


def read_document(store: ImageStore, referrer: Referrer, limit: int) -> bytes:
    """The one layer of an attached artifact, read whole (at most `limit` bytes)."""
    what = f"{store.name}@{referrer.digest}"
    try:
        manifest = json.loads(store.get_manifest(referrer.digest))
        layer = manifest["layers"][0]
        digest, size = str(layer["digest"]), int(layer["size"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise InputError(f"{what}: the attached artifact's manifest has no layer") from None
    if size > limit:
        raise InputError(f"{what}: the attached document is {size} bytes, more than the {limit} wheelpin reads")
    data = bytearray()
    for chunk in store.get_blob(digest):
        data += chunk
        if len(data) > size:
            raise InputError(f"{what}: the attached document is larger than its manifest says")
    if len(data) != size or "sha256:" + hashlib.sha256(data).hexdigest() != digest:
        raise InputError(f"{what}: the attached document does not match its digest")
    return bytes(data)

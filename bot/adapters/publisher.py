"""The publish step (docs/design.md §1.4): verified wheels → a wheel image under a guarded tag.

The tag guard: a tag that does not exist (404) may be written; a tag that holds our
digest is success with nothing to do; a tag that holds another digest is refused; any
other answer is an error, never "free". The Distribution API has no conditional PUT, so
wheelpin must be the only writer of its tags: the tag is read again right before the
manifest is written, and read back after, with the manifest fetched by digest and
checked to hold exactly the wheels published.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import InputError, RefusedError, TransientError, VerificationError
from ..core.image.oci import (
    MANIFEST_TYPE,
    WheelEntry,
    architecture_of,
    build_image,
    layer_chunks,
    layer_digest,
    wheels_from_annotations,
)
from . import logs
from .imagestore import ImageStore, tag_taken

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    from ..core.wheel.report import WheelReport

log = logs.get_logger("wheelpin.publish")

# After the manifest PUT, wait this long before reading the tag back: two publishers that
# both passed the guard (the API has no conditional PUT) have then both written, so the
# loser sees the winner's digest instead of its own. 1.5 s covers a loopback or LAN
# registry's PUT latency many times over while adding little to a publish; tests pass 0.
SETTLE_SECONDS = 1.5


@dataclass(frozen=True)
class PublishResult:
    store: str
    tag: str
    digest: str
    status: str  # "published" | "unchanged"
    wheels: tuple[WheelEntry, ...]
    bytes_uploaded: int
    size: int = 0  # its config's and layer's bytes, as imagedocs.pulled_size reads them back
    manifest_size: int = 0  # its manifest's bytes (what a referrer's subject descriptor says)

    @property
    def ref(self) -> str:
        return f"{self.store}:{self.tag}@{self.digest}"

    def to_json(self) -> dict[str, object]:
        return {
            "ref": self.ref,
            "digest": self.digest,
            "status": self.status,
            "wheels": [{"file": w.file, "sha256": w.sha256} for w in self.wheels],
            "bytes_uploaded": self.bytes_uploaded,
        }


def _check_wheels(wheels: Sequence[Path], reports: Sequence[WheelReport]) -> str:
    """The image architecture; InputError (one sentence) for wheels one image cannot hold."""
    names = [w.name for w in wheels]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{', '.join(twice)}: two wheels with one file name cannot share an image")
    if sorted(names) != sorted(r.filename for r in reports):
        raise InputError("the wheels given are not the wheels inspected")
    try:
        return architecture_of(names)
    except ValueError as exc:
        raise InputError(f"{', '.join(sorted(names))}: {exc}; publish one image per architecture") from None


def _guard(store: ImageStore, tag: str, ours: str) -> bool:
    """True when the tag already holds our image; RefusedError when it holds another."""
    existing = store.tag_digest(tag)
    if existing is None:
        return False
    if existing == ours:
        return True
    raise tag_taken(store.name, tag, existing, ours)


def publish(
    store: ImageStore,
    tag: str,
    wheels: Sequence[Path],
    reports: Sequence[WheelReport],
    *,
    source: str | None = None,
    revision: str | None = None,
    component: str | None = None,
    rules: str | None = None,
    reader: ImageStore | None = None,
    mount_from: str | None = None,
    settle: float = SETTLE_SECONDS,
) -> PublishResult:
    """Push (or find already there) the image of `wheels`; `reports` are their inspections.
    `mount_from` names another repository of the same registry that may hold the layer
    (a cross-repository mount then costs no upload)."""
    architecture = _check_wheels(wheels, reports)
    entries = tuple(sorted((WheelEntry.of_report(r) for r in reports), key=lambda e: e.file))
    verified = {e.file: (e.sha256, e.size) for e in entries}
    digest, size = layer_digest(wheels, verified)
    image = build_image(
        entries,
        layer_digest=digest,
        layer_size=size,
        architecture=architecture,
        source=source,
        revision=revision,
        component=component,
        rules=rules,
    )
    pulled = size + len(image.config)
    if _guard(store, tag, image.manifest_digest):
        log.info("image.unchanged", store=store.name, tag=tag, digest=image.manifest_digest)
        return PublishResult(
            store.name, tag, image.manifest_digest, "unchanged", entries, 0, pulled, len(image.manifest)
        )
    uploaded = 0
    if not store.has_blob(digest):
        uploaded += store.put_blob(digest, size, lambda: layer_chunks(wheels, verified), mount_from=mount_from)
    if not store.has_blob(image.config_digest):
        uploaded += store.put_blob(image.config_digest, len(image.config), lambda: [image.config])
    if _guard(store, tag, image.manifest_digest):  # another writer finished first, with our bytes
        return PublishResult(
            store.name, tag, image.manifest_digest, "unchanged", entries, uploaded, pulled, len(image.manifest)
        )
    written = store.put_manifest(tag, image.manifest, MANIFEST_TYPE)
    uploaded += len(image.manifest)
    if written != image.manifest_digest:
        raise VerificationError(f"{store.name}:{tag}: the registry stored {written}, not {image.manifest_digest}")
    verify_published(reader or store, tag, image.manifest_digest, entries, digest, settle=settle)
    log.info("image.published", store=store.name, tag=tag, digest=image.manifest_digest, bytes_uploaded=uploaded)
    return PublishResult(
        store.name, tag, image.manifest_digest, "published", entries, uploaded, pulled, len(image.manifest)
    )


def verify_published(
    store: ImageStore,
    tag: str,
    digest: str,
    entries: Sequence[WheelEntry],
    layer: str,
    *,
    settle: float = SETTLE_SECONDS,
) -> None:
    """After `settle` seconds, read the tag and the manifest back: the tag names our digest
    (else another writer won the race), the manifest holds our layer, and its annotations
    name exactly our wheels with their sha256."""
    time.sleep(settle)
    now = store.tag_digest(tag)
    for wait in (0.2, 0.5, 1.0, 2.0):  # a replica or a cache may not have seen the write yet
        if now is not None:
            break
        time.sleep(wait)
        now = store.tag_digest(tag)
    if now is None:
        raise TransientError(f"{store.name}:{tag} cannot be read back after the push; the next pass checks again")
    if now != digest:
        raise RefusedError(
            f"another writer won {store.name}:{tag}: it names {now}, not {digest} "
            "that wheelpin wrote; nothing published"
        )
    manifest = json.loads(store.get_manifest(digest))
    layers = [item.get("digest") for item in manifest.get("layers", [])]
    listed = wheels_from_annotations(manifest.get("annotations", {})) or []
    if layers != [layer] or sorted(listed, key=lambda e: e.file) != list(entries):
        raise VerificationError(f"{store.name}@{digest}: what was read back is not what was published")
    if not store.has_blob(layer):
        raise VerificationError(f"{store.name}@{digest}: the layer {layer} is missing after the push")

"""The consuming image, read from its layers through the registry client, with no container
runtime (docs/design.md §1, step 5): its manifest (an index resolved to the wheel's
platform), its config (`Env`, `diff_ids`) and each layer, summarised by
`adapters/layerstream.py` and cached by the layer's digest: layers never change, so a new
base image costs only its new layers (a summary cached by a wheelpin that summarised
layers otherwise, `imagefs.FORMAT`, is read again; one checked against another size or
`diff_id` than the manifest and config now claim is read again, and so refused as a first
read would be). `core/image/files.merge` makes one view of them.

Bounded whatever the registry sends: the manifest and config by
`adapters/imagedocs.py` (size, shape), each layer by `adapters/layerstream.py`, the image
in all here (`MAX_LAYERS`, `MAX_IMAGE_MEMBERS`, `MAX_IMAGE_KEPT`), and the whole read by one
deadline (`adapters/readdeadline.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from ..core.errors import InputError
from ..core.image.files import ImageFiles, LayerSummary, env_of, merge
from ..core.image.reference import SHA256_DIGEST, short_digest
from . import cachebound, imagedocs
from .imagestore import ImageStore
from .layerstream import MAX_KEPT_BYTES, LayerError, read_layer
from .readdeadline import image_deadline

MAX_LAYERS = 256  # overlay filesystems stack at most 128; twice that is no real image
# what the summaries of one image keep in all (`LayerSummary.weight`): each layer's is bounded
# by layerstream.MAX_KEPT, this bounds the merged view (some 100 MB of Python objects at most)
MAX_IMAGE_KEPT = 400_000
MAX_IMAGE_KEPT_BYTES = 48 << 20
# a cached summary's file: its JSON is at most some times MAX_KEPT_BYTES (escapes, keys); a
# larger one is not read, and the layer is read again
_MAX_CACHED = 4 * MAX_KEPT_BYTES + (8 << 20)
# entries of all the layers of one image: Python's tarfile reads some 50,000 headers a second,
# and no image a hostile registry serves may take wheelpin minutes (a layer has MAX_MEMBERS)
MAX_IMAGE_MEMBERS = 2_000_000
# the linux images of one index read for pure-Python wheels, which install on each: a
# multi-platform release lists two to four (amd64, arm64, ppc64le, s390x); python's official
# images list eight, seven architectures once arm's variants count once
MAX_PLATFORMS = 8


@dataclass(frozen=True)
class ConsumerImage:
    name: str  # repository:tag@digest as read
    digest: str  # the platform's manifest
    files: ImageFiles
    layers_read: int  # streamed this time
    layers_cached: int  # taken from the cache
    size: int = 0  # config and layers as the manifest declares them (imagedocs.pulled_size)
    platform: tuple[str, str] | None = None  # its config's os and architecture (imagedocs.config_platform)


class LayerCache:
    """Layer summaries on disk, one JSON file per layer digest (`None`: no cache). An entry
    holds the size and diff_id it was read and checked against: a manifest or config that
    claims another of the same digest is not given the summary, the layer is read again
    (and its claim refused as a cold read refuses it)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.bounded = cachebound.bounded(folder) if folder is not None else None  # its size bound

    def _path(self, digest: str) -> Path | None:
        if self.folder is None or not SHA256_DIGEST.match(digest):
            return None
        return self.folder / digest.split(":", 1)[1]

    def get(self, digest: str, *, size: int, diff_id: str) -> LayerSummary | None:
        path = self._path(digest)
        try:
            if path is None or not path.is_file() or path.stat().st_size > _MAX_CACHED:
                return None
            entry = json.loads(path.read_bytes())
            if entry.get("size") != size or entry.get("diff_id") != diff_id:
                return None  # checked against other claims than these
            summary = LayerSummary.from_json(entry)
            if self.bounded is not None:  # read whole: used just now, and held no further
                self.bounded.touch(path)
            return summary
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None  # a damaged entry, or one of another format, is read again

    def put(self, digest: str, summary: LayerSummary, *, size: int, diff_id: str) -> None:
        path = self._path(digest)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=".layer.")
        with os.fdopen(handle, "w") as stream:
            json.dump({**summary.to_json(), "size": size, "diff_id": diff_id}, stream)
        os.replace(name, path)
        if self.bounded is not None:
            self.bounded.touch(path)


@overload
def read_consumer(
    store: ImageStore, reference: str, *, cache: LayerCache, architecture: str = "amd64"
) -> ConsumerImage: ...


@overload
def read_consumer(
    store: ImageStore, reference: str, *, cache: LayerCache, architecture: str | None
) -> ConsumerImage | ConsumerPlatforms: ...


def read_consumer(
    store: ImageStore, reference: str, *, cache: LayerCache, architecture: str | None = "amd64"
) -> ConsumerImage | ConsumerPlatforms:
    """The image `reference` (a digest, or a tag read once to its digest) names in `store`,
    read within one deadline (`adapters/readdeadline.py`); an index is resolved to
    `architecture`, or with None (pure-Python wheels) as `resolve_consumer` resolves it:
    an index of several linux images is left as ConsumerPlatforms, each of which the
    caller reads by the index's digest (`platforms_read`)."""
    with image_deadline(f"{store.name}@{reference}"):
        return _read(store, reference, cache, architecture)


@dataclass(frozen=True)
class ResolvedConsumer:
    """The consuming image's documents, before any layer is read: what `config validate
    --online` asks of it (that it resolves), and where a read of its layers starts."""

    name: str  # store@digest of the platform's manifest
    digest: str
    layers: list[imagedocs.Descriptor]
    config: dict[str, Any]
    diff_ids: list[str]
    size: int  # config and layers as the manifest declares them (imagedocs.pulled_size)
    # resolved for no architecture: the linux architectures of its index (its one), () for one image
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsumerPlatforms:
    """A consuming image that is an index of several linux images, asked for before the
    wheels' architecture is known: which one a pass reads is the built wheels'."""

    name: str  # store@digest of the index
    platforms: tuple[str, ...]  # its linux architectures, in its order
    # the digest of each one's image, as the index lists it: read by it, not by a tag that may move
    images: tuple[str, ...] = ()


def platforms_read(index: ConsumerPlatforms) -> dict[str, str]:
    """The platforms of the index that pure-Python wheels are checked against, each to the
    digest of its image: every linux one, since such a wheel installs on each; InputError
    past MAX_PLATFORMS, in one sentence."""
    if len(index.platforms) > MAX_PLATFORMS:
        raise InputError(
            f"{index.name}: the image index has {len(index.platforms)} linux platforms, more than the "
            f"{MAX_PLATFORMS} wheelpin checks pure-Python wheels against"
        )
    return dict(zip(index.platforms, index.images, strict=True))


@overload
def resolve_consumer(store: ImageStore, reference: str, *, architecture: str) -> ResolvedConsumer: ...


@overload
def resolve_consumer(
    store: ImageStore, reference: str, *, architecture: str | None
) -> ResolvedConsumer | ConsumerPlatforms: ...


def resolve_consumer(
    store: ImageStore, reference: str, *, architecture: str | None
) -> ResolvedConsumer | ConsumerPlatforms:
    """The manifest `reference` names (an index resolved to `architecture`) and its config,
    checked for shape and bounds, within one deadline; no layer is read. With `architecture`
    None (the wheels are not built yet), an index of one linux image resolves to it, the
    only one a pass can read; an index of several is left as ConsumerPlatforms; one of none
    is an InputError, whatever the wheels."""
    with image_deadline(f"{store.name}@{reference}"):
        return _resolve(store, reference, architecture)


@overload
def _resolve(store: ImageStore, reference: str, architecture: str) -> ResolvedConsumer: ...


@overload
def _resolve(store: ImageStore, reference: str, architecture: str | None) -> ResolvedConsumer | ConsumerPlatforms: ...


def _resolve(store: ImageStore, reference: str, architecture: str | None) -> ResolvedConsumer | ConsumerPlatforms:
    raw = store.get_manifest(reference)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    manifest = imagedocs.document(raw, f"{store.name}@{digest}")
    platforms: tuple[str, ...] = ()
    if imagedocs.is_index(manifest):
        what = f"{store.name}@{digest}"
        if architecture is None:
            platforms = tuple(imagedocs.linux_architectures(manifest, what))
            if not platforms:
                raise InputError(f"{what}: the image index has no linux image")
            if len(platforms) > 1:
                images = tuple(imagedocs.platform_digest(manifest, platform, what) for platform in platforms)
                return ConsumerPlatforms(what, platforms, images)
            architecture = platforms[0]
        digest = imagedocs.platform_digest(manifest, architecture, what)
        manifest = imagedocs.document(store.get_manifest(digest), f"{store.name}@{digest}")
    name = f"{store.name}@{digest}"
    layers = manifest.get("layers")
    if isinstance(layers, list) and len(layers) > MAX_LAYERS:  # said before each is looked at
        raise InputError(f"{name} has {len(layers)} layers, more than the {MAX_LAYERS} wheelpin reads")
    descriptors = imagedocs.layers(manifest, name)
    config_descriptor = imagedocs.config_descriptor(manifest, name)
    if config_descriptor is None:
        raise InputError(f"{name}: its config is missing")
    config = imagedocs.read_config(store, config_descriptor, name)
    diff_ids = imagedocs.diff_ids(config, name)
    if len(diff_ids) != len(descriptors):
        raise InputError(f"{name}: its config lists {len(diff_ids)} layers, its manifest {len(descriptors)}")
    return ResolvedConsumer(
        name, digest, descriptors, config, diff_ids, imagedocs.pulled_size(manifest, name), platforms
    )


def _read(
    store: ImageStore, reference: str, cache: LayerCache, architecture: str | None
) -> ConsumerImage | ConsumerPlatforms:
    resolved = _resolve(store, reference, architecture)
    if isinstance(resolved, ConsumerPlatforms):
        return resolved
    name, digest, descriptors, config, diff_ids = (
        resolved.name,
        resolved.digest,
        resolved.layers,
        resolved.config,
        resolved.diff_ids,
    )
    summaries: list[LayerSummary] = []
    read = kept = kept_bytes = members = 0
    for index, (layer, diff_id) in enumerate(zip(descriptors, diff_ids, strict=True), start=1):
        summary = cache.get(layer.digest, size=layer.size, diff_id=diff_id)
        if summary is None:
            what = f"layer {index} of {store.name}@{short_digest(digest)}"
            summary = read_layer(
                store.get_blob(layer.digest),
                size=layer.size,
                diff_id=diff_id,
                what=what,
                members=MAX_IMAGE_MEMBERS - members,
            )
            cache.put(layer.digest, summary, size=layer.size, diff_id=diff_id)
            read += 1
        members += summary.members
        if members > MAX_IMAGE_MEMBERS:  # cached summaries count as well
            raise InputError(
                f"{name}'s layers have more than {MAX_IMAGE_MEMBERS} entries, more than wheelpin reads of one image"
            )
        entries, size = summary.weight()
        kept, kept_bytes = kept + entries, kept_bytes + size
        if kept > MAX_IMAGE_KEPT or kept_bytes > MAX_IMAGE_KEPT_BYTES:
            raise InputError(
                f"{name}'s layers name more than {MAX_IMAGE_KEPT} libraries, links, distributions and "
                f"requirements, or more than {MAX_IMAGE_KEPT_BYTES} bytes of them, more than wheelpin "
                "keeps of one image"
            )
        summaries.append(summary)
    files = merge(summaries, env_of(config))
    return ConsumerImage(
        name, digest, files, read, len(descriptors) - read, resolved.size, imagedocs.config_platform(config)
    )


__all__ = [
    "ConsumerImage",
    "ConsumerPlatforms",
    "LayerCache",
    "LayerError",
    "ResolvedConsumer",
    "platforms_read",
    "read_consumer",
    "resolve_consumer",
]

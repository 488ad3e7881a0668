"""The consuming image, read from its layers through the registry client, with no container
runtime (docs/design.md §1, step 5): its manifest (an index resolved to the wheel's
platform), its config (`Env`, `diff_ids`) and each layer, summarised by
`adapters/layerstream.py` and cached by the layer's digest: layers never change, so a new
base image costs only its new layers (a summary cached by a wheelpin that summarised
layers otherwise, `imagefs.FORMAT`, is read again). `core/imagefs.merge` makes one view
of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.imagefs import ImageFiles, LayerSummary, env_of, merge
from ..core.imageref import SHA256_DIGEST
from ..core.ociimage import DOCKER_LIST_TYPE, INDEX_TYPE
from .imagestore import ImageStore
from .layerstream import LayerError, read_layer

MAX_LAYERS = 256  # overlay filesystems stack at most 128; twice that is no real image
MAX_CONFIG = 4 << 20


@dataclass(frozen=True)
class ConsumerImage:
    name: str  # repository:tag@digest as read
    digest: str  # the platform's manifest
    files: ImageFiles
    layers_read: int  # streamed this time
    layers_cached: int  # taken from the cache


class LayerCache:
    """Layer summaries on disk, one JSON file per layer digest (`None`: no cache)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, digest: str) -> Path | None:
        if self.folder is None or not SHA256_DIGEST.match(digest):
            return None
        return self.folder / digest.split(":", 1)[1]

    def get(self, digest: str) -> LayerSummary | None:
        path = self._path(digest)
        if path is None or not path.is_file():
            return None
        try:
            return LayerSummary.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry, or one of another format, is read again

    def put(self, digest: str, summary: LayerSummary) -> None:
        path = self._path(digest)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=".layer.")
        with os.fdopen(handle, "w") as stream:
            json.dump(summary.to_json(), stream)
        os.replace(name, path)


def _document(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError:
        raise InputError(f"{what} is not JSON") from None
    if not isinstance(document, dict):
        raise InputError(f"{what} is not a JSON object")
    return document


def _platform(store: ImageStore, index: dict[str, Any], architecture: str) -> tuple[str, dict[str, Any]]:
    for entry in index.get("manifests") or []:
        platform = entry.get("platform") or {}
        if platform.get("os") == "linux" and platform.get("architecture") == architecture:
            digest = str(entry.get("digest"))
            return digest, _document(store.get_manifest(digest), f"{store.name}@{digest}")
    raise InputError(f"{store.name}: the image index has no linux/{architecture} image")


def read_consumer(store: ImageStore, reference: str, *, cache: LayerCache,
                  architecture: str = "amd64") -> ConsumerImage:
    """The image `reference` (a digest, or a tag read once to its digest) names in `store`."""
    raw = store.get_manifest(reference)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    manifest = _document(raw, f"{store.name}@{digest}")
    if manifest.get("mediaType") in (INDEX_TYPE, DOCKER_LIST_TYPE) or "manifests" in manifest:
        digest, manifest = _platform(store, manifest, architecture)
    layers = manifest.get("layers") or []
    if not isinstance(layers, list) or len(layers) > MAX_LAYERS:
        raise InputError(f"{store.name}@{digest} has {len(layers)} layers, more than the {MAX_LAYERS} wheelpin reads")
    config_digest = str((manifest.get("config") or {}).get("digest") or "")
    config_size = int((manifest.get("config") or {}).get("size") or 0)
    if not SHA256_DIGEST.match(config_digest) or config_size > MAX_CONFIG:
        raise InputError(f"{store.name}@{digest}: its config is missing or over {MAX_CONFIG} bytes")
    config = _document(b"".join(store.get_blob(config_digest)), f"{store.name}@{digest}'s config")
    diff_ids = (config.get("rootfs") or {}).get("diff_ids") or []
    if len(diff_ids) != len(layers):
        raise InputError(f"{store.name}@{digest}: its config lists {len(diff_ids)} layers, its manifest {len(layers)}")
    summaries: list[LayerSummary] = []
    read = 0
    for index, (layer, diff_id) in enumerate(zip(layers, diff_ids), start=1):
        layer_digest = str(layer.get("digest") or "")
        if not SHA256_DIGEST.match(layer_digest):
            raise InputError(f"{store.name}@{digest}: layer {index} has no sha256 digest")
        summary = cache.get(layer_digest)
        if summary is None:
            what = f"layer {index} of {store.name}@{digest[:19]}"
            summary = read_layer(store.get_blob(layer_digest), size=int(layer.get("size") or 0),
                                 diff_id=str(diff_id), what=what)
            cache.put(layer_digest, summary)
            read += 1
        summaries.append(summary)
    files = merge(summaries, env_of(config))
    return ConsumerImage(f"{store.name}@{digest}", digest, files, read, len(layers) - read)


__all__ = ["ConsumerImage", "LayerCache", "LayerError", "read_consumer"]

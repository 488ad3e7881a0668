"""Reading what a wheel image holds: from its annotations (kilobytes), or, for images
other tools pushed, by streaming its layers and reading each wheel's METADATA.

A manifest list / index is resolved to its linux/amd64 manifest. A foreign layer is
streamed once (gzip, zstd or plain tar, as its first bytes say); each `*.whl` in it is spooled to a temporary file
(a zip is read from its end) and read with the same code as `wheel inspect`, so memory
stays bounded whatever the wheel's size.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import VerificationError
from ..core.ociimage import (
    DOCKER_LIST_TYPE,
    INDEX_TYPE,
    WheelEntry,
    wheels_from_annotations,
)
from .imagestore import ImageStore


@dataclass(frozen=True)
class ImageInfo:
    name: str
    digest: str
    annotations: dict[str, str]
    labels: dict[str, str]
    wheels: tuple[WheelEntry, ...]
    metadata_from: str  # "annotations" | "layers"
    bytes_fetched: int = 0
    layers: tuple[dict[str, Any], ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {"image": self.name, "digest": self.digest, "annotations": self.annotations,
                "labels": self.labels, "metadata_from": self.metadata_from,
                "bytes_fetched": self.bytes_fetched,
                "wheels": [wheel.to_json() for wheel in self.wheels]}


class ChunkReader(io.RawIOBase):
    """A readable stream over an iterator of chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _platform_manifest(store: ImageStore, document: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    for entry in document.get("manifests", []):
        platform = entry.get("platform", {})
        if platform.get("os", "linux") == "linux" and platform.get("architecture", "amd64") == "amd64":
            digest = str(entry["digest"])
            return digest, json.loads(store.get_manifest(digest))
    raise VerificationError(f"{store.name}: the image index has no linux/amd64 image")


def read_image(store: ImageStore, reference: str) -> ImageInfo:
    before = store.traffic.bytes_downloaded
    raw = store.get_manifest(reference)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    manifest: dict[str, Any] = json.loads(raw)
    if manifest.get("mediaType") in (INDEX_TYPE, DOCKER_LIST_TYPE) or "manifests" in manifest:
        digest, manifest = _platform_manifest(store, manifest)
    annotations = {str(k): str(v) for k, v in (manifest.get("annotations") or {}).items()}
    wheels = wheels_from_annotations(annotations)
    labels: dict[str, str] = {}
    source = "annotations"
    if wheels is None:
        config_digest = manifest.get("config", {}).get("digest")
        if config_digest:
            config = json.loads(b"".join(store.get_blob(str(config_digest))))
            labels = {str(k): str(v) for k, v in ((config.get("config") or {}).get("Labels") or {}).items()}
            wheels = wheels_from_annotations(labels)
            source = "labels"
    if wheels is None:
        wheels = []
        for layer in manifest.get("layers", []):
            wheels += _wheels_in_layer(store, layer)
        source = "layers"
    return ImageInfo(store.name, digest, annotations, labels, tuple(wheels), source,
                     store.traffic.bytes_downloaded - before, tuple(manifest.get("layers", [])))


def extract_wheels(store: ImageStore, info: ImageInfo, folder: Path) -> list[Path]:
    """Stream the image's layers and keep its wheel files in `folder` (for adoption)."""
    paths: list[Path] = []
    for layer in info.layers:
        paths += [folder / entry.file for entry in _wheels_in_layer(store, layer, keep=folder)]
    return paths


def _wheels_in_layer(store: ImageStore, layer: dict[str, Any], *, keep: Path | None = None) -> list[WheelEntry]:
    from ..core.inspect import read_wheel_metadata  # images of older wheelpins, without annotations
    from .layerstream import decompressed

    stream = decompressed(ChunkReader(store.get_blob(str(layer["digest"]))))
    found: list[WheelEntry] = []
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            name = member.name.lstrip("./")
            if not member.isfile() or not name.endswith(".whl"):
                continue
            source = archive.extractfile(member)
            assert source is not None
            with tempfile.TemporaryDirectory(prefix="wheelpin-layer-") as folder:
                path = (keep or Path(folder)) / Path(name).name
                hashed = hashlib.sha256()
                with path.open("wb") as spool:
                    while chunk := source.read(1 << 20):
                        hashed.update(chunk)
                        spool.write(chunk)
                metadata = read_wheel_metadata(path)
                found.append(WheelEntry(path.name, hashed.hexdigest(), member.size, metadata.name,
                                        metadata.version, metadata.requires_dist))
    return found

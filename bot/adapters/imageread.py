"""Reading what a wheel image holds, with one answer whoever pushed it: from wheelpin's
annotations (kilobytes), or, for images other tools pushed (buildah, docker, skopeo, a
workflow wheelpin adopts), from the wheels themselves.

A manifest list / index is resolved to its linux/amd64 manifest. A foreign layer is
streamed once (gzip, zstd or plain tar, as its first bytes say); each `*.whl` in it is
spooled to a temporary file (a zip is read from its end) and inspected with the same
code as `wheel inspect` and the verify step (`WheelEntry.of_report`), so its GPU archs,
python tags, DT_NEEDED and Requires-Dist are the ones wheelpin's own annotations would
say, and memory stays bounded whatever the wheel's size. What was read is kept by the
image's digest (content that never changes): in this process, and in the cache folder
under a name carrying `FACTS_FORMAT`, so a foreign image is streamed once, not on every
pass, and facts an older wheelpin read differently are read again.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from ..core.errors import InputError
from ..core.image.oci import WheelEntry, wheels_from_annotations
from ..core.image.reference import short_digest
from . import imagedocs
from .imagestore import ImageStore
from .readdeadline import image_deadline

# The cache folder's name for wheel facts read from layers; a new number when what is read
# from a wheel changes, so nothing an older wheelpin worked out is trusted.
FACTS_FORMAT = "wheelfacts-v2"
_MEMO_SIZE = 64  # images whose layer-read facts this process keeps (a few KiB each)
MAX_WHEELS = 64  # wheels one layer of a wheel image may hold (Mooncake's image: one per python tag)


@dataclass(frozen=True)
class ImageInfo:
    name: str
    digest: str
    annotations: dict[str, str]
    labels: dict[str, str]
    wheels: tuple[WheelEntry, ...]
    metadata_from: str  # "annotations" | "labels" | "layers" | "unread" (read_image with layers=False)
    bytes_fetched: int = 0
    layers: tuple[dict[str, Any], ...] = field(default=())
    size: int = 0  # config and layers as the manifest declares them (imagedocs.pulled_size)

    def to_json(self) -> dict[str, object]:
        return {
            "image": self.name,
            "digest": self.digest,
            "annotations": self.annotations,
            "labels": self.labels,
            "metadata_from": self.metadata_from,
            "bytes_fetched": self.bytes_fetched,
            "size": self.size,
            "wheels": [wheel.to_json() for wheel in self.wheels],
        }


def read_image(store: ImageStore, reference: str, *, layers: bool = True) -> ImageInfo:
    """What the image `reference` names holds, read within one deadline
    (`adapters/readdeadline.py`); its documents are bounded and checked for shape by
    `adapters/imagedocs.py` (a malformed one is an InputError). With `layers` False, an
    image whose manifest and config say nothing of its wheels is not streamed: its
    `wheels` are empty and its `metadata_from` "unread" (a cheap look, for `config
    validate --online`), unless its wheels were read from its layers before."""
    with image_deadline(f"{store.name}@{reference}"):
        return _read_image(store, reference, layers)


def _read_image(store: ImageStore, reference: str, layers: bool = True) -> ImageInfo:
    before = store.traffic.bytes_downloaded
    raw = store.get_manifest(reference)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    manifest = imagedocs.document(raw, f"{store.name}@{digest}")
    if imagedocs.is_index(manifest):
        digest = imagedocs.platform_digest(manifest, "amd64", f"{store.name}@{digest}", lenient=True)
        manifest = imagedocs.document(store.get_manifest(digest), f"{store.name}@{digest}")
    name = f"{store.name}@{digest}"
    imagedocs.layers(manifest, name)  # their shape is checked before anything else is read
    annotations = imagedocs.manifest_annotations(manifest, name)
    wheels = wheels_from_annotations(annotations)
    labels: dict[str, str] = {}
    source = "annotations"
    if wheels is None:
        config = imagedocs.config_descriptor(manifest, name)
        if config is not None:
            labels = imagedocs.labels(imagedocs.read_config(store, config, name), name)
            wheels = wheels_from_annotations(labels)
            source = "labels"
    if wheels is None and not layers:
        known = _known_facts(store, digest)
        wheels, source = (list(known), "layers") if known is not None else ([], "unread")
    if wheels is None:
        wheels = list(_layer_facts(store, digest, manifest.get("layers") or []))
        source = "layers"
    return ImageInfo(
        store.name,
        digest,
        annotations,
        labels,
        tuple(wheels),
        source,
        store.traffic.bytes_downloaded - before,
        tuple(manifest.get("layers") or []),
        imagedocs.pulled_size(manifest, name),
    )


_memo: OrderedDict[str, tuple[WheelEntry, ...]] = OrderedDict()
_memo_lock = threading.Lock()  # the service's workers read images at once


def _known_facts(store: ImageStore, digest: str) -> tuple[WheelEntry, ...] | None:
    """The wheels of the image `digest` names as read from its layers before (in this
    process, or in the cache folder), None when they never were."""
    with _memo_lock:
        if digest in _memo:
            _memo.move_to_end(digest)
            return _memo[digest]
    return _cached_facts(store, digest)


def _layer_facts(store: ImageStore, digest: str, layers: list[dict[str, Any]]) -> tuple[WheelEntry, ...]:
    """The wheels of the image `digest` names, inspected from its layers once."""
    wheels = _known_facts(store, digest)
    if wheels is None:
        wheels = tuple(entry for layer in layers for entry in _wheels_in_layer(store, layer))
        store.cache.put_derived(FACTS_FORMAT, digest, json.dumps([w.to_json() for w in wheels]).encode())
    remember_facts(digest, wheels)
    return wheels


def remember_facts(digest: str, wheels: tuple[WheelEntry, ...]) -> None:
    with _memo_lock:
        _memo[digest] = wheels
        _memo.move_to_end(digest)
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)


def _cached_facts(store: ImageStore, digest: str) -> tuple[WheelEntry, ...] | None:
    data = store.cache.get_derived(FACTS_FORMAT, digest)
    if data is None:
        return None
    try:
        return tuple(WheelEntry.from_json(item) for item in json.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # a damaged entry is read again


def extract_wheels(store: ImageStore, info: ImageInfo, folder: Path) -> list[Path]:
    """Stream the image's layers and keep its wheel files in `folder` (for adoption)."""
    return [path for layer in info.layers for path in _spooled_wheels(store, layer, folder)]


def _wheels_in_layer(store: ImageStore, layer: dict[str, Any]) -> list[WheelEntry]:
    from .inspectpool import inspect_wheel  # the wheels' reading loads when a wheel is read

    found: list[WheelEntry] = []
    with tempfile.TemporaryDirectory(prefix="wheelpin-layer-") as folder:
        for path in _spooled_wheels(store, layer, Path(folder)):
            found.append(WheelEntry.of_report(inspect_wheel(path)))
            path.unlink()  # one wheel on disk at a time
    return found


def _spooled_wheels(store: ImageStore, layer: dict[str, Any], folder: Path) -> Iterator[Path]:
    """Each `*.whl` file of the layer, written to `folder` as the stream reaches it, read as
    a consuming image's layers are (`layerstream.layer_stream`: the blob held to its
    declared size, its inflation to the bytes received; tar headers bounded and none kept,
    `adapters/boundedtar.py`), at most `MAX_WHEELS` of them."""
    import tarfile

    import zstandard

    from .boundedtar import TarRefused, entries
    from .layerstream import layer_stream

    digest = str(layer.get("digest"))
    what = f"{store.name}: the layer {short_digest(digest)}"
    size = layer.get("size")
    if not isinstance(size, int) or isinstance(size, bool):
        raise InputError(f"{what} has no size in its manifest")
    _raw, stream = layer_stream(store.get_blob(digest), size=size, what=what)
    wheels = 0
    try:
        for archive, member in entries(cast(IO[bytes], stream), bufsize=64 << 10):
            name = member.name.lstrip("./")
            if not member.isfile() or not name.endswith(".whl"):
                continue
            wheels += 1
            if wheels > MAX_WHEELS:
                raise InputError(f"{what} holds more than {MAX_WHEELS} wheels; wheelpin reads at most that many")
            source = archive.extractfile(member)
            assert source is not None
            path = folder / Path(name).name
            with path.open("wb") as spool:
                while chunk := source.read(1 << 20):
                    spool.write(chunk)
            yield path
    except TarRefused as exc:
        raise InputError(f"{what} {exc}") from None
    except (tarfile.TarError, EOFError, zstandard.ZstdError) as exc:
        raise InputError(f"{what} is not a readable tar ({type(exc).__name__}: {str(exc)[:120]})") from None

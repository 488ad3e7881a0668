"""An image's JSON documents (manifest, index, config) as a registry serves them, read with
bounded memory and checked for shape in one place: the consuming-image reader
(`adapters/consumerread.py`, docs/design.md §1 step 5) and the wheel-image reader
(`adapters/imageread.py`) both take them from here.

A document that is not the shape the OCI image spec gives it (image-spec manifest.md,
image-index.md, config.md: `layers` an array of descriptors, a descriptor's `size` an
int64, `rootfs.diff_ids` an array of strings…) is one sentence, an `InputError` (exit 2),
never a crash: a `diff_ids` of 5, an infinite size (`json` reads `Infinity`), an index
entry that is not an object, arrays nested 100,000 deep (`json` raises RecursionError).

A config is read no further than the size its manifest gives, and never past `MAX_CONFIG`
(a manifest naming a 500-byte config whose blob is 1 GB costs 500 bytes); a manifest is
bounded by the registry client (`registry.MAX_MANIFEST`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError
from ..core.image.oci import DOCKER_LIST_TYPE, INDEX_TYPE
from ..core.image.reference import SHA256_DIGEST
from .imagestore import ImageStore

# image configs are some KiB (a long build history, some hundreds): distribution caps none,
# and a few MiB is more than any real one
MAX_CONFIG = 4 << 20


@dataclass(frozen=True)
class Descriptor:
    """A content descriptor (image-spec descriptor.md): what it names and its size."""

    digest: str
    size: int


def document(data: bytes, what: str) -> dict[str, Any]:
    """`data` as a JSON object; InputError if it is not one."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: arrays nested past the parser's depth
        raise InputError(f"{what} is not JSON") from None
    if not isinstance(parsed, dict):
        raise InputError(f"{what} is not a JSON object")
    return parsed


def is_index(document: dict[str, Any]) -> bool:
    return document.get("mediaType") in (INDEX_TYPE, DOCKER_LIST_TYPE) or "manifests" in document


def descriptor(value: object, what: str) -> Descriptor:
    """A descriptor: an object with a sha256 `digest` and a non-negative integer `size`."""
    if not isinstance(value, dict):
        raise InputError(f"{what} is not a descriptor (a JSON object)")
    digest, size = value.get("digest"), value.get("size", 0)
    if not isinstance(digest, str) or not SHA256_DIGEST.match(digest):
        raise InputError(f"{what} has no sha256 digest")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 1 << 63:
        raise InputError(f"{what} has a size that is not a whole number of bytes ({str(size)[:40]})")
    return Descriptor(digest, size)


def _array(value: object, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{what} is not an array")
    return value


def _object(value: object, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{what} is not an object")
    return value


def platform_digest(index: dict[str, Any], architecture: str, what: str, *, lenient: bool = False) -> str:
    """The digest of the index's linux/`architecture` manifest; `lenient`: an entry that
    names no platform is taken as linux/amd64 (images some tools push)."""
    for number, entry in enumerate(_array(index.get("manifests"), f"{what}'s manifests"), start=1):
        named = descriptor(entry, f"{what}'s manifest {number}")
        platform = _object(entry.get("platform"), f"{what}'s manifest {number}'s platform")
        default_os, default_arch = ("linux", "amd64") if lenient else (None, None)
        if platform.get("os", default_os) == "linux" and platform.get("architecture", default_arch) == architecture:
            return named.digest
    raise InputError(f"{what}: the image index has no linux/{architecture} image")


def linux_architectures(index: dict[str, Any], what: str) -> list[str]:
    """The architectures of the index's linux images, in its order, each once: the entries
    whose `platform` names `os` linux (the OCI image-index spec's `platform` object,
    github.com/opencontainers/image-spec/blob/main/image-index.md: `architecture` and `os`
    as Go's GOARCH and GOOS). An entry naming no platform, or another os (an attestation
    manifest's `unknown`), is none, as `platform_digest` reads them."""
    found: list[str] = []
    for number, entry in enumerate(_array(index.get("manifests"), f"{what}'s manifests"), start=1):
        descriptor(entry, f"{what}'s manifest {number}")
        platform = _object(entry.get("platform"), f"{what}'s manifest {number}'s platform")
        architecture = platform.get("architecture")
        if platform.get("os") == "linux" and isinstance(architecture, str) and architecture not in found:
            found.append(architecture)
    return found


def layers(manifest: dict[str, Any], what: str) -> list[Descriptor]:
    return [
        descriptor(layer, f"{what}'s layer {number}")
        for number, layer in enumerate(_array(manifest.get("layers"), f"{what}'s layers"), start=1)
    ]


def config_descriptor(manifest: dict[str, Any], what: str) -> Descriptor | None:
    if manifest.get("config") is None:
        return None
    return descriptor(manifest["config"], f"{what}'s config")


def pulled_size(manifest: dict[str, Any], what: str) -> int:
    """The image's size as a registry stores it and a pull fetches it: its config's and its
    layers' bytes as their descriptors declare them (compressed where a layer is). One
    reading for every image, wheelpin's own or another tool's."""
    config = config_descriptor(manifest, what)
    return sum(layer.size for layer in layers(manifest, what)) + (config.size if config else 0)


def diff_ids(config: dict[str, Any], what: str) -> list[str]:
    found = _array(_object(config.get("rootfs"), f"{what}'s rootfs").get("diff_ids"), f"{what}'s diff_ids")
    if not all(isinstance(diff_id, str) for diff_id in found):
        raise InputError(f"{what}'s diff_ids are not all strings")
    return found


def config_platform(config: dict[str, Any]) -> tuple[str, str] | None:
    """The `os` and `architecture` an image's config says it runs on (the OCI image spec's
    config, github.com/opencontainers/image-spec/blob/main/config.md: both REQUIRED, as Go's
    GOOS and GOARCH); None when it does not say both, as strings: not known, so not compared."""
    system, architecture = config.get("os"), config.get("architecture")
    if isinstance(system, str) and system and isinstance(architecture, str) and architecture:
        return system, architecture
    return None


def labels(config: dict[str, Any], what: str) -> dict[str, str]:
    inner = _object(config.get("config"), f"{what}'s config")
    return {str(k): str(v) for k, v in _object(inner.get("Labels"), f"{what}'s labels").items()}


def manifest_annotations(manifest: dict[str, Any], what: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _object(manifest.get("annotations"), f"{what}'s annotations").items()}


def read_config(store: ImageStore, config: Descriptor, what: str) -> dict[str, Any]:
    """The config blob, read no further than its declared size (at most `MAX_CONFIG`)."""
    if config.size > MAX_CONFIG:
        raise InputError(
            f"{what}: its config is said to be {config.size} bytes, more than the {MAX_CONFIG} wheelpin reads"
        )
    return document(_bounded(store.get_blob(config.digest), config.size, f"{what}'s config"), f"{what}'s config")


def _bounded(chunks: Iterator[bytes], size: int, what: str) -> bytes:
    """At most `size` bytes of `chunks`; InputError past them (the rest is never read), or
    short of them."""
    parts: list[bytes] = []
    count = 0
    try:
        for chunk in chunks:
            count += len(chunk)
            if count > size:
                raise InputError(f"{what} is larger than the {size} bytes its manifest says")
            parts.append(chunk)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # a generator: the response under it is closed now, not read on
    if count != size:
        raise InputError(f"{what} is {count} bytes, not the {size} its manifest says")
    return b"".join(parts)

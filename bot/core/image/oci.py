"""The wheel image (docs/design.md §3): one uncompressed tar layer holding the wheel file(s) at
`/`, an OCI config Docker's BuildKit accepts, and annotations that describe the wheels.

Reproducible: entries sorted by name, mtime 0, owner 0:0 with no names, mode 0644, PAX
headers only where a name needs them; JSON written with sorted keys and no spaces. The
same wheels give the same digests on any machine, whatever their mtime, owner or umask.

The layer is `application/vnd.oci.image.layer.v1.tar`, not gzip: a wheel is a zip,
already compressed, so gzip would shrink it by a percent or two while costing CPU on
every push and pull and making the digest depend on a compressor's version; uncompressed,
the layer digest is also its diff_id.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.tags import parse_tag
from packaging.utils import InvalidWheelFilename
from packaging.version import InvalidVersion

from ..errors import VerificationError

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    from ..wheel.report import WheelReport

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
DOCKER_MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST_TYPE = "application/vnd.docker.distribution.manifest.list.v2+json"
LAYER_TYPES_GZIP = {"application/vnd.oci.image.layer.v1.tar+gzip", "application/vnd.docker.image.rootfs.diff.tar.gzip"}
ACCEPT_MANIFESTS = ", ".join([MANIFEST_TYPE, DOCKER_MANIFEST_TYPE, INDEX_TYPE, DOCKER_LIST_TYPE])

ANNOTATION_WHEELS = "io.wheelpin.wheels"
ANNOTATION_COMPONENT = "io.wheelpin.component"
ANNOTATION_RULES = "io.wheelpin.rules"  # core/checks/digest.rules_digest: the rules the wheels passed
SOURCE = "org.opencontainers.image.source"
REVISION = "org.opencontainers.image.revision"
VERSION = "org.opencontainers.image.version"
TITLE = "org.opencontainers.image.title"
_CHUNK = 1 << 20
_ARCHS = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
}


def canonical_json(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class WheelEntry:
    """What the image says about one wheel it holds."""

    file: str
    sha256: str
    size: int
    name: str
    version: str
    requires_dist: tuple[str, ...]
    archs: tuple[str, ...] = ()  # HIP processors the verify step found (a foreign image: read from its layers)
    tags: tuple[str, ...] = ()  # python-abi-platform tags of the file name
    # DT_NEEDED of the wheel's ELF files, sorted (None: not recorded, as by images published
    # before it was, and foreign images)
    needed: tuple[str, ...] | None = None
    # HIP processors some of the wheel's GPU libraries carry and others lack (a kernel
    # missing on that GPU at run time)
    archs_partial: tuple[str, ...] = ()
    # the bytes its files take once installed (WheelReport.installed_size); None: not
    # recorded, as by images published before it was
    installed: int | None = None
    variant: str | None = None  # a variant wheel's label (PEP 825)
    variant_properties: tuple[str, ...] = ()  # `namespace :: feature :: value`, sorted

    @property
    def archs_text(self) -> str:
        """The GPU archs as said to a person; none recorded with no DT_NEEDED recorded
        either is an image that does not say (an older wheelpin's), not a wheel without
        device code."""
        if self.archs:
            return ", ".join(self.archs)
        return "no device code" if self.needed is not None else "not recorded"

    def to_json(self) -> dict[str, Any]:
        data = {
            "file": self.file,
            "sha256": self.sha256,
            "size": self.size,
            "name": self.name,
            "version": self.version,
            "requires_dist": list(self.requires_dist),
            "archs": list(self.archs),
            "tags": list(self.tags),
        }
        if self.needed is not None:
            data["needed"] = list(self.needed)
        if self.archs_partial:
            data["archs_partial"] = list(self.archs_partial)
        if self.installed is not None:
            data["installed"] = self.installed
        if self.variant is not None:
            data["variant"] = {"label": self.variant, "properties": list(self.variant_properties)}
        return data

    @classmethod
    def of_report(cls, report: WheelReport) -> WheelEntry:
        """What an image says of a wheel, from the wheel itself: the one reading of a wheel,
        whether wheelpin publishes it, adopts it or finds it in an image another tool pushed."""
        from ..checks.archs import partial_archs

        return cls(
            report.filename,
            report.sha256,
            report.size,
            report.name,
            report.version,
            report.requires_dist,
            tuple(report.archs),
            report.tags,
            tuple(sorted({library for elf in report.elf for library in elf.needed})),
            partial_archs(report),
            report.installed_size,
            report.variant.label if report.variant else None,
            report.variant.properties if report.variant else (),
        )

    def as_report(self) -> WheelReport:
        """The wheel as the checks judge it, made of what the image says of it: its name,
        version, file name, variant and size as they are, and its ELF files as one, named
        "the wheel", holding all they need and all the HIP processors any carries (features
        dropped). So a rule it breaks the wheel breaks: a library no ELF file needs, an arch
        no GPU library has code for, one some ELF file needs. What the record keeps no fact
        of passes (an arch only some GPU libraries carry, CUDA device code, a ROCm library
        carried but not needed); with no DT_NEEDED recorded (an older wheelpin's image) it
        has no ELF file at all, and a check that `wants_elf` cannot judge it."""
        from ..wheel.elf import ElfReport
        from ..wheel.metadata import Variant
        from ..wheel.report import WheelReport

        elf = (
            ()
            if self.needed is None
            else (
                ElfReport(
                    path="the wheel",
                    needed=self.needed,
                    gpu="hip" if self.archs else None,
                    targets=self.archs,
                    archs=self.archs,
                    bundles=0,
                    compressed_bundles=0,
                ),
            )
        )
        return WheelReport(
            path=self.file,
            filename=self.file,
            name=self.name,
            version=self.version,
            build=None,
            tags=self.tags,
            sha256=self.sha256,
            size=self.size,
            requires_dist=self.requires_dist,
            requires_python=None,
            elf=elf,
            installed_size=self.installed or 0,
            variant=Variant(self.variant, self.variant_properties) if self.variant is not None else None,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WheelEntry:
        needed = data.get("needed")
        file = str(data["file"])
        tags = tuple(str(t) for t in data.get("tags", [])) or tags_of(file)  # the file name says them
        installed = data.get("installed")
        variant = data.get("variant")
        variant = variant if isinstance(variant, dict) else {}
        return cls(
            file,
            str(data["sha256"]),
            int(data["size"]),
            str(data["name"]),
            str(data["version"]),
            tuple(str(r) for r in data.get("requires_dist", [])),
            tuple(str(a) for a in data.get("archs", [])),
            tags,
            tuple(str(n) for n in needed) if isinstance(needed, list) else None,
            tuple(str(a) for a in data.get("archs_partial", [])),
            int(installed) if installed is not None else None,
            str(variant["label"]) if "label" in variant else None,
            tuple(str(p) for p in variant.get("properties", [])),
        )


def tags_of(filename: str) -> tuple[str, ...]:
    """The python-abi-platform tags a wheel's file name carries (none for a name that is
    not a wheel's)."""
    from ..wheel.metadata import wheel_filename_parts  # a wheel's name is parsed only where one is compared

    try:
        return tuple(str(tag) for tag in sorted(wheel_filename_parts(filename)[3], key=str))
    except (InvalidWheelFilename, InvalidVersion):
        return ()


def architecture_of(filenames: Sequence[str]) -> str:
    """The image architecture from the wheels' platform tags (`amd64` for x86_64, and for
    wheels that name none: pure Python, `any`)."""
    return named_architecture(filenames) or "amd64"


def named_architecture(filenames: Sequence[str]) -> str | None:
    """The architecture the wheels' platform tags name; None when none names one (no wheel,
    or pure Python ones). ValueError for wheels of several."""
    found = {named for named in map(wheel_architecture, filenames) if named is not None}
    if len(found) > 1:
        raise ValueError(f"the wheels are for several architectures: {sorted(found)}")
    return found.pop() if found else None


def wheel_architecture(filename: str) -> str | None:
    """The image architecture one wheel's platform tags name (`amd64` for x86_64); None for
    a pure-Python wheel (`any`), which installs on every platform."""
    from ..wheel.metadata import split_variant_label  # a wheel's name is parsed only where one is published

    tags = split_variant_label(filename)[0].removesuffix(".whl").split("-")[-3:]
    for tag in parse_tag("-".join(tags)):
        for arch, name in _ARCHS.items():
            if tag.platform.endswith(arch):
                return name
    return None


def _tar_info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


Verified = Mapping[str, tuple[str, int]]  # file name -> (sha256 hex, size) the verify step saw


def layer_digest(wheels: Sequence[Path], verified: Verified | None = None) -> tuple[str, int]:
    """The layer's digest and size, from one pass over the wheels."""
    digest = hashlib.sha256()
    size = 0
    for chunk in layer_chunks(wheels, verified):
        digest.update(chunk)
        size += len(chunk)
    return "sha256:" + digest.hexdigest(), size


def layer_chunks(wheels: Sequence[Path], verified: Verified | None = None) -> Iterator[bytes]:
    """The layer's bytes in chunks, for a streaming upload (hashed again by the caller).

    With `verified`, each wheel's bytes are hashed as they are read and a wheel that is
    not the one verified (swapped or rewritten since) raises VerificationError before
    the archive ends, so no upload of it can complete and no manifest names it."""
    for wheel in sorted(wheels, key=lambda p: p.name):
        with wheel.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            yield _tar_info(wheel.name, size).tobuf(format=tarfile.PAX_FORMAT)
            hashed = hashlib.sha256()
            sent = 0
            while sent < size and (chunk := stream.read(min(_CHUNK, size - sent))):
                hashed.update(chunk)
                sent += len(chunk)
                yield chunk
        if verified is not None:
            _check_verified(wheel.name, hashed.hexdigest(), sent, size, verified)
        elif sent != size:
            raise VerificationError(f"{wheel}: the file shrank while it was read")
        if size % 512:
            yield b"\0" * (512 - size % 512)
    yield b"\0" * 1024  # two zero blocks end the archive


def _check_verified(name: str, sha256: str, sent: int, size: int, verified: Verified) -> None:
    expected = verified.get(name)
    if expected is None or expected != (sha256, sent) or sent != size:
        raise VerificationError(
            f"{name}: the file changed after it was verified (sha256 {sha256[:12]}…, {sent} bytes); nothing published"
        )


@dataclass(frozen=True)
class ImageBlobs:
    """Everything a push writes: the manifest, the config and the layer's digest/size."""

    manifest: bytes
    manifest_digest: str
    config: bytes
    config_digest: str
    layer_digest: str
    layer_size: int
    annotations: dict[str, str]


def build_image(
    wheels: Sequence[WheelEntry],
    *,
    layer_digest: str,
    layer_size: int,
    architecture: str,
    source: str | None = None,
    revision: str | None = None,
    component: str | None = None,
    rules: str | None = None,
) -> ImageBlobs:
    entries = sorted(wheels, key=lambda w: w.file)
    annotations = {ANNOTATION_WHEELS: canonical_json([w.to_json() for w in entries]).decode()}
    versions = sorted({w.version for w in entries})
    if len(versions) == 1:
        annotations[VERSION] = versions[0]
    if source:
        annotations[SOURCE] = source
    if revision:
        annotations[REVISION] = revision
    if component:
        annotations[ANNOTATION_COMPONENT] = component
    if rules:
        annotations[ANNOTATION_RULES] = rules
    config = canonical_json(
        {
            "architecture": architecture,
            "os": "linux",
            "config": {"Labels": annotations},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    )
    config_digest = digest_of(config)
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": len(config)},
            "layers": [
                {
                    "mediaType": LAYER_TYPE,
                    "digest": layer_digest,
                    "size": layer_size,
                    "annotations": {TITLE: ",".join(w.file for w in entries)},
                }
            ],
            "annotations": annotations,
        }
    )
    return ImageBlobs(manifest, digest_of(manifest), config, config_digest, layer_digest, layer_size, annotations)


def wheels_from_annotations(annotations: dict[str, str]) -> list[WheelEntry] | None:
    """The wheels an image says it holds, or None for images wheelpin did not write."""
    text = annotations.get(ANNOTATION_WHEELS)
    if text is None:
        return None
    try:
        return [WheelEntry.from_json(item) for item in json.loads(text)]
    except (ValueError, KeyError, TypeError):
        return None

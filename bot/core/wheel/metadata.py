"""Wheel names and the text files of a wheel's `.dist-info` (METADATA, WHEEL, RECORD,
variant.json).

Part of the verify step: the file name (PEP 427, and a variant wheel's label: PEP 825)
through `packaging`, METADATA's Name, Version and Requires-Dist as written, the Tag lines
of WHEEL, the hashes RECORD promises for every member, and the properties a variant
wheel's variant.json gives its label.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any

from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

# PEP 825 "Variant label": 1-16 of 0-9, a-z, `_` and `.`; "Variant properties": a namespace
# and a feature of 0-9, a-z and `_`, a value of those and `.`.
_VARIANT_LABEL = re.compile(r"^[0-9a-z_.]{1,16}$")
_VARIANT_KEY = re.compile(r"^[a-z0-9_]+$")
_VARIANT_VALUE = re.compile(r"^[a-z0-9_.]+$")
VARIANT_JSON = "variant.json"
NULL_VARIANT = "null"  # PEP 825: "always corresponds to the variant with zero properties"


def is_variant_label(text: str) -> bool:
    """Whether `text` is a variant label PEP 825 allows: 1 to 16 of 0-9, a-z, `_` and `.`."""
    return bool(_VARIANT_LABEL.match(text))


def split_variant_label(filename: str) -> tuple[str, str | None]:
    """`name-ver(-build)?-py-abi-plat-label.whl` as the file name without its variant label
    (PEP 825 adds it after the platform tag) and the label; the name itself and None for a
    wheel that has none. packaging (26) refuses a label, and a name packaging reads is never
    a variant wheel's: with a label, the part where a build tag would be is a python tag,
    which never starts with a digit as a build tag must. So the label is taken off only
    where packaging refuses the whole name and takes the rest."""
    try:
        parse_wheel_filename(filename)
        return filename, None
    except (InvalidWheelFilename, InvalidVersion):
        pass
    stem, dash, label = filename.removesuffix(".whl").rpartition("-")
    if not dash or not filename.endswith(".whl") or not _VARIANT_LABEL.match(label):
        return filename, None
    plain = stem + ".whl"
    try:
        parse_wheel_filename(plain)
    except (InvalidWheelFilename, InvalidVersion):
        return filename, None
    return plain, label


def wheel_filename_parts(filename: str) -> tuple[NormalizedName, Version, tuple[int, str] | tuple[()], frozenset[Tag]]:
    """packaging's reading of a wheel's file name, a variant wheel's too (its label left
    out); InvalidWheelFilename or InvalidVersion as packaging raises them."""
    return parse_wheel_filename(split_variant_label(filename)[0])


@dataclass(frozen=True)
class WheelName:
    """What a wheel's file name says (PEP 427; PEP 825's variant label)."""

    filename: str
    name: NormalizedName
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]
    variant: str | None = None  # the variant label, for a variant wheel

    @classmethod
    def parse(cls, filename: str) -> WheelName:
        """Parse `dist-version(-build)?-py-abi-plat(-label)?.whl`; ValueError with the reason."""
        plain, label = split_variant_label(filename)
        try:
            name, version, build, tags = parse_wheel_filename(plain)
        except (InvalidWheelFilename, InvalidVersion) as exc:
            raise ValueError(f"{filename!r} is not a wheel file name ({exc})") from None
        return cls(filename, name, version, build, tags, label)

    @property
    def tag_strings(self) -> list[str]:
        return sorted(str(tag) for tag in self.tags)


def dist_info_matches(folder: str, wheel: WheelName) -> bool:
    """Whether `name-version.dist-info` names the same distribution and version."""
    stem = folder.removesuffix(".dist-info")
    name, _, version = stem.rpartition("-")
    try:
        return canonicalize_name(name) == wheel.name and Version(version) == wheel.version
    except InvalidVersion:
        return False


@dataclass(frozen=True)
class Metadata:
    name: str
    version: str
    requires_dist: tuple[str, ...]
    requires_python: str | None


_FIELDS_USED = {"name", "version", "requires_dist", "requires_python"}


def parse_metadata(data: bytes) -> Metadata:
    """Core metadata (RFC 822 style); ValueError when Name or Version is missing, or when
    a field wheelpin uses cannot be read (packaging sets such fields aside, silently: a
    Requires-Dist that is not UTF-8 would vanish from the diff)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"METADATA is not UTF-8 (byte {exc.start})") from None
    from packaging.metadata import parse_email  # its SPDX table is slow to build: loaded when METADATA is read

    raw, unparsed = parse_email(data)
    unreadable = sorted(key for key in unparsed if key.replace("-", "_") in _FIELDS_USED)
    if unreadable:
        raise ValueError(f"METADATA's {', '.join(unreadable)} cannot be read")
    name = raw.get("name")
    version = raw.get("version")
    if not name or not version:
        raise ValueError("METADATA has no Name or no Version field")
    return Metadata(
        name=name,
        version=version,
        requires_dist=tuple(raw.get("requires_dist", [])),
        requires_python=raw.get("requires_python"),
    )


def parse_wheel_tags(data: bytes) -> list[str]:
    """The `Tag:` lines of a WHEEL file, as written."""
    from packaging.metadata import parse_email

    _raw, unparsed = parse_email(data)
    return [tag.strip() for tag in unparsed.get("tag", [])]


@dataclass(frozen=True)
class RecordEntry:
    path: str
    algorithm: str | None
    digest: bytes | None
    size: int | None


def parse_record(data: bytes) -> dict[str, RecordEntry]:
    """RECORD's rows by path; ValueError on a row that is not `path,algo=digest,size`."""
    entries: dict[str, RecordEntry] = {}
    text = data.decode("utf-8")
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if len(row) != 3:
            raise ValueError(f"RECORD row {row!r} does not have three fields")
        path, hash_field, size_field = row
        algorithm = digest = None
        if hash_field:
            algorithm, _, encoded = hash_field.partition("=")
            digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        size = int(size_field) if size_field else None
        entries[path] = RecordEntry(path, algorithm, digest, size)
    return entries


@dataclass(frozen=True)
class Variant:
    """A variant wheel's label and the properties variant.json gives it (PEP 825), each
    `namespace :: feature :: value`, sorted."""

    label: str
    properties: tuple[str, ...]

    def values(self, namespace: str, features: frozenset[str]) -> list[str]:
        """The values of the properties of `namespace` whose feature is one of `features`."""
        found = []
        for prop in self.properties:
            space, feature, value = prop.split(" :: ")
            if space == namespace and feature in features:
                found.append(value)
        return found


def parse_variant_json(data: bytes, label: str) -> tuple[str, ...]:
    """The properties variant.json gives `label`, as `namespace :: feature :: value`,
    sorted; ValueError, in one sentence, for a file that is not PEP 825's shape or does
    not list the label."""
    try:
        document: Any = json.loads(data.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError both are
        raise ValueError(f"is not JSON ({exc})") from None
    variants = document.get("variants") if isinstance(document, dict) else None
    if not isinstance(variants, dict):
        raise ValueError("has no `variants` table")
    if label not in variants:
        raise ValueError(f"does not list the file name's variant label {label!r} under `variants`")
    namespaces = variants[label]
    if not isinstance(namespaces, dict):
        raise ValueError(f"gives variant {label!r} no table of namespaces")
    found: set[str] = set()
    for namespace, features in namespaces.items():
        if not _VARIANT_KEY.match(namespace) or not isinstance(features, dict):
            raise ValueError(f"has a namespace {namespace!r} that PEP 825 does not allow")
        for feature, values in features.items():
            if not _VARIANT_KEY.match(feature) or not isinstance(values, list):
                raise ValueError(f"has a feature {namespace} :: {feature!r} that PEP 825 does not allow")
            for value in values:
                if not isinstance(value, str) or not _VARIANT_VALUE.match(value):
                    raise ValueError(f"has a value {namespace} :: {feature} :: {value!r} that PEP 825 does not allow")
                found.add(f"{namespace} :: {feature} :: {value}")
    if label == NULL_VARIANT and found:
        said = ", ".join(sorted(found))
        raise ValueError(
            f"gives the null variant the propert{'y' if len(found) == 1 else 'ies'} {said}, but PEP 825 reserves "
            "the label `null` for the variant with zero properties, which every system fits"
        )
    return tuple(sorted(found))

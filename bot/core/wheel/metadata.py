"""Wheel names and the text files of a wheel's `.dist-info` (METADATA, WHEEL, RECORD).

Part of the verify step: the file name (PEP 427) through `packaging`, METADATA's Name,
Version and Requires-Dist as written, the Tag lines of WHEEL, and the hashes RECORD
promises for every member.
"""

from __future__ import annotations

import base64
import csv
import io
from dataclasses import dataclass

from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class WheelName:
    """What a wheel's file name says (PEP 427)."""

    filename: str
    name: NormalizedName
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]

    @classmethod
    def parse(cls, filename: str) -> WheelName:
        """Parse `dist-version(-build)?-py-abi-plat.whl`; ValueError with the reason."""
        try:
            name, version, build, tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion) as exc:
            raise ValueError(f"{filename!r} is not a wheel file name ({exc})") from None
        return cls(filename, name, version, build, tags)

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

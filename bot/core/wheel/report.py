"""Reading one wheel into a `WheelReport`: the facts the verify step judges.

One pass over the archive, member by member in the order their data lies: every
member's sha256 is checked against RECORD, and every ELF member is spooled to a
temporary file (never the whole wheel, never in memory) to read its DT_NEEDED list and
device code. The report holds facts only; `checks` turns them into problems.

A large wheel's members may be checked in shares at once: this module says what a share
is and how one is checked (`check_share`, each share's budget then summed against the
wheel's); running shares in other processes is `adapters/inspectpool.py`'s, given here as
a `Spread`.
"""

from __future__ import annotations

import csv
import hashlib
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..errors import InputError
from ..proposal.requirements import parse_requirement
from .amdgpu import sorted_processors
from .archive import ArchiveLimits, members_in_order, open_archive, read_member, read_small_member
from .elf import ELF_MAGIC, ElfError, ElfReport, read_elf
from .metadata import (
    VARIANT_JSON,
    Metadata,
    RecordEntry,
    Variant,
    WheelName,
    dist_info_matches,
    parse_metadata,
    parse_record,
    parse_variant_json,
    parse_wheel_tags,
)
from .offload import BundleError, ReadBudget


@dataclass(frozen=True)
class WheelReport:
    """Everything `wheel inspect` reports about one wheel, before any rule is applied."""

    path: str
    filename: str
    name: str
    version: str
    build: str | None
    tags: tuple[str, ...]
    sha256: str
    size: int
    requires_dist: tuple[str, ...]
    requires_python: str | None
    elf: tuple[ElfReport, ...]
    integrity: tuple[str, ...] = field(default=())  # facts that are always problems
    notes: tuple[str, ...] = field(default=())  # oddities real wheels have; not problems
    # What installing it adds to an image: its members' uncompressed sizes, as the zip's
    # central directory declares them (and the reading held each member to its declaration)
    installed_size: int = 0
    variant: Variant | None = None  # a variant wheel's label and properties (PEP 825)

    @property
    def archs(self) -> list[str]:
        """Sorted union of the HIP processors in the wheel, without feature suffixes."""
        return sorted_processors({arch for report in self.elf if report.gpu == "hip" for arch in report.archs})

    @property
    def cuda_archs(self) -> list[str]:
        archs = {arch for report in self.elf if report.gpu == "cuda" for arch in report.archs}
        return sorted(archs, key=lambda arch: (int(arch.rpartition("_")[2]), arch))

    @property
    def wheel_name(self) -> WheelName:
        return WheelName.parse(self.filename)

    @property
    def version_parsed(self) -> Version:
        return Version(self.version)


def file_sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


# What one share's check gives back: each member's (name, sha256, ELF report), the
# inflate budget it spent and the bundle entries it kept.
ShareResult = tuple[list[tuple[str, bytes, "ElfReport | None"]], int, int]


@dataclass(frozen=True)
class Spread:
    """How a large wheel's members may be checked at once: in `workers` shares, which `run`
    checks each with `check_share(path, names, inflate, entries)` and returns in order."""

    workers: int
    run: Callable[[Path, list[list[str]], int, int], list[ShareResult]]


def inspect_wheel(path: Path, *, limits: ArchiveLimits = ArchiveLimits(), spread: Spread | None = None) -> WheelReport:
    """Read a wheel file; InputError (exit 2) when it cannot be read as a wheel at all.
    With `spread`, a wheel of PARALLEL_FROM compressed bytes or more is read in shares."""
    _require_file(path)
    try:
        wheel_name = WheelName.parse(path.name)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    with open_archive(path, limits) as archive:
        dist_info, metadata = _read_metadata(path, archive)
        integrity, notes = _check_dist_info(path, archive, dist_info, wheel_name, metadata)
        variant = _read_variant(path, archive, dist_info, wheel_name, integrity, notes)
        record = _read_record(path, archive, dist_info, integrity)
        budget = ReadBudget.for_wheel(path.stat().st_size)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as hasher:  # the whole file's sha256 meanwhile (hashlib lets go of the GIL)
            whole = hasher.submit(file_sha256, path)
            elf_reports = _read_members(path, archive, record, dist_info, integrity, budget, spread)
            sha256, size = whole.result()
    build = "".join(str(part) for part in wheel_name.build) or None
    return WheelReport(
        path=str(path),
        filename=path.name,
        name=metadata.name,
        version=metadata.version,
        build=build,
        tags=tuple(wheel_name.tag_strings),
        sha256=sha256,
        size=size,
        requires_dist=metadata.requires_dist,
        requires_python=metadata.requires_python,
        elf=tuple(elf_reports),
        integrity=tuple(integrity),
        notes=tuple(notes),
        installed_size=installed_size(archive),
        variant=variant,
    )


def installed_size(archive: zipfile.ZipFile) -> int:
    """The bytes the wheel's files take once installed: the sum of the uncompressed sizes
    the central directory declares (no member is inflated to know it; `read_member` holds
    each member read to its declared size, and `check_directory` caps the sum)."""
    return sum(info.file_size for info in archive.infolist() if not info.is_dir())


def _read_variant(
    path: Path, archive: zipfile.ZipFile, dist_info: str, name: WheelName, problems: list[str], notes: list[str]
) -> Variant | None:
    """A variant wheel's label and the properties its variant.json gives it (PEP 825:
    "It MUST include a variant metadata file", which "MUST contain the label present in
    that wheel's filename"); a fault of either is a problem of the wheel's own."""
    member = f"{dist_info}/{VARIANT_JSON}"
    try:
        info = archive.getinfo(member)
    except KeyError:
        info = None
    if name.variant is None:
        if info is not None:
            notes.append(f"{member} is there but the file name carries no variant label, so it is no variant wheel")
        return None
    if info is None:
        problems.append(f"the file name carries variant label {name.variant!r} but {member} is missing")
        return Variant(name.variant, ())
    try:
        properties = parse_variant_json(read_small_member(path, archive, info, limit=1 << 20), name.variant)
    except ValueError as exc:
        problems.append(f"{member} {exc}")
        return Variant(name.variant, ())
    return Variant(name.variant, properties)


def read_wheel_metadata(path: Path, *, limits: ArchiveLimits = ArchiveLimits()) -> Metadata:
    """Only METADATA, for a Requires-Dist diff: no member but METADATA is inflated."""
    _require_file(path)
    try:
        WheelName.parse(path.name)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    with open_archive(path, limits) as archive:
        return _read_metadata(path, archive)[1]


def _require_file(path: Path) -> None:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: is not a file")


def _read_metadata(path: Path, archive: zipfile.ZipFile) -> tuple[str, Metadata]:
    candidates = [
        info
        for info in archive.infolist()
        if info.filename.count("/") == 1
        and info.filename.endswith("/METADATA")
        and info.filename.split("/")[0].endswith(".dist-info")
    ]
    if not candidates:
        raise InputError(f"{path}: has no *.dist-info/METADATA, so it is not a wheel")
    if len(candidates) > 1:
        names = ", ".join(sorted(info.filename for info in candidates))
        raise InputError(f"{path}: has several *.dist-info/METADATA ({names})")
    info = candidates[0]
    try:
        metadata = parse_metadata(read_small_member(path, archive, info))
        Version(metadata.version)
        # packaging's parse_email keeps a Requires-Dist as text, whatever it holds: one
        # that is no PEP 508 requirement is refused here, where the wheel is read, rather
        # than failing later in a diff or a consumer check (or being skipped there)
        for requirement in metadata.requires_dist:
            parse_requirement(requirement, source="Requires-Dist")
    except (ValueError, InvalidVersion) as exc:
        raise InputError(f"{path}: {info.filename} is malformed ({exc})") from None
    return info.filename.split("/")[0], metadata


def _check_dist_info(
    path: Path, archive: zipfile.ZipFile, dist_info: str, name: WheelName, metadata: Metadata
) -> tuple[list[str], list[str]]:
    """Problems of the dist-info folder, and notes (auditwheel renames the file's
    platform tag without always rewriting WHEEL: cupy's wheels do this)."""
    problems: list[str] = []
    if canonicalize_name(metadata.name) != name.name:
        problems.append(f"METADATA names {metadata.name!r} but the file name says {name.name!r}")
    if Version(metadata.version) != name.version:
        problems.append(f"METADATA has version {metadata.version} but the file name says {name.version}")
    if not dist_info_matches(dist_info, name):
        problems.append(f"{dist_info} does not match the file name")
    try:
        wheel_info = archive.getinfo(f"{dist_info}/WHEEL")
    except KeyError:
        problems.append(f"{dist_info}/WHEEL is missing")
        return problems, []
    declared = set(parse_wheel_tags(read_small_member(path, archive, wheel_info)))
    notes = []
    if declared != set(name.tag_strings):
        notes.append(f"WHEEL declares tags {sorted(declared)} but the file name says {name.tag_strings}")
    return problems, notes


def _read_record(
    path: Path, archive: zipfile.ZipFile, dist_info: str, problems: list[str]
) -> dict[str, RecordEntry] | None:
    try:
        info = archive.getinfo(f"{dist_info}/RECORD")
    except KeyError:
        problems.append(f"{dist_info}/RECORD is missing: member hashes cannot be checked")
        return None
    try:
        return parse_record(read_small_member(path, archive, info, limit=record_limit(archive)))
    except (ValueError, csv.Error) as exc:  # UnicodeDecodeError is a ValueError
        raise InputError(f"{path}: {dist_info}/RECORD is malformed ({exc})") from None


# A RECORD row is the path, `,sha256=` and 43 characters of digest, `,` and a size.
_RECORD_ROW_BEYOND_PATH = 128


def record_limit(archive: zipfile.ZipFile) -> int:
    """The most bytes a RECORD needs to list every member: bounded by the central directory
    (which lies in the file), not by what RECORD declares (a 1 MB wheel once declared a
    255 MiB RECORD)."""
    return 4096 + sum(
        len(info.orig_filename.encode("utf-8", "surrogateescape")) + _RECORD_ROW_BEYOND_PATH
        for info in archive.infolist()
    )


MAX_MISSING_NAMED = 20  # RECORD rows naming absent members, each named; then counted
# From this much compressed member data on, members are hashed and their ELF read in shares
# at once, when a `Spread` is given (each share's reader opens the archive itself and
# streams its members, so memory stays bounded per reader); below it, starting the readers
# would cost more than it saves.
PARALLEL_FROM = 32 << 20


def _shares(infos: list[zipfile.ZipInfo], count: int) -> list[list[int]]:
    """The members' indexes in `count` shares of about equal compressed bytes, each in
    archive order (a worker reads its share front to back)."""
    shares: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for index in sorted(range(len(infos)), key=lambda i: -infos[i].compress_size):
        lightest = loads.index(min(loads))
        shares[lightest].append(index)
        loads[lightest] += infos[index].compress_size
    return [sorted(share, key=lambda i: infos[i].header_offset) for share in shares if share]


def check_share(path: str, names: list[str], inflate: int, entries: int) -> ShareResult:
    """One share (in a worker process): hash the named members and read those that are ELF,
    with a budget of their own; (each member's result, inflate spent, entries kept)."""
    budget = ReadBudget(inflate=inflate, entries=entries)
    wheel = Path(path)
    with open_archive(wheel) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        done = [(name, *_read_one_member(wheel, archive, infos[name], budget)) for name in names]
    return done, inflate - budget.inflate, entries - budget.entries


def _checked(
    path: Path, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], budget: ReadBudget, spread: Spread | None
) -> list[tuple[bytes, ElfReport | None]]:
    """Each member's (sha256, ELF report), in `infos` order: read here, or in shares by
    `spread` for a large wheel. The shares' budgets are each the whole wheel's; what they
    spent together is held to it after (the refusal of a bomb is the same, only said later)."""
    large = sum(info.compress_size for info in archive.infolist()) >= PARALLEL_FROM
    if spread is None or spread.workers < 2 or not large or len(infos) < 2:
        return [_read_one_member(path, archive, info, budget) for info in infos]
    results: dict[str, tuple[bytes, ElfReport | None]] = {}
    inflated = kept = 0
    names = [[infos[i].filename for i in share] for share in _shares(infos, spread.workers)]
    for done, spent, entries in spread.run(path, names, budget.inflate, budget.entries):
        results.update((name, (digest, elf)) for name, digest, elf in done)
        inflated, kept = inflated + spent, kept + entries
    try:
        budget.spend_inflate(inflated, "its bundles together")
        budget.keep_entries(kept, "its bundles together")
    except BundleError as exc:
        raise InputError(f"{path}: {exc}") from None
    return [results[info.filename] for info in infos]


def _read_members(
    path: Path,
    archive: zipfile.ZipFile,
    record: dict[str, RecordEntry] | None,
    dist_info: str,
    problems: list[str],
    budget: ReadBudget,
    spread: Spread | None,
) -> list[ElfReport]:
    unsigned = {f"{dist_info}/RECORD", f"{dist_info}/RECORD.jws", f"{dist_info}/RECORD.p7s"}
    reports: list[ElfReport] = []
    seen: set[str] = set()
    infos = members_in_order(archive)
    for info, (digest, elf) in zip(infos, _checked(path, archive, infos, budget, spread), strict=True):
        seen.add(info.filename)
        if elf is not None:
            reports.append(elf)
        if record is None or info.filename in unsigned:
            continue
        entry = record.get(info.filename)
        if entry is None:
            problems.append(f"{info.filename} is not listed in RECORD")
        elif entry.algorithm != "sha256" or entry.digest is None:
            problems.append(f"{info.filename} has no sha256 in RECORD")
        elif entry.digest != digest or (entry.size is not None and entry.size != info.file_size):
            problems.append(f"{info.filename} does not match its RECORD hash or size")
    if record is not None:
        missing = sorted(set(record) - seen - unsigned)
        for name in missing[:MAX_MISSING_NAMED]:
            problems.append(f"RECORD lists {name}, which the archive does not hold")
        if len(missing) > MAX_MISSING_NAMED:
            problems.append(f"RECORD lists {len(missing) - MAX_MISSING_NAMED} more members the archive does not hold")
    return sorted(reports, key=lambda report: report.path)


def _read_one_member(
    path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: ReadBudget
) -> tuple[bytes, ElfReport | None]:
    """Hash one member; if it is an ELF, spool it to a temporary file and read it."""
    digest = hashlib.sha256()
    chunks = read_member(path, archive, info)
    first = next(chunks, b"")
    digest.update(first)
    if not first.startswith(ELF_MAGIC):
        for chunk in chunks:
            digest.update(chunk)
        return digest.digest(), None
    with tempfile.TemporaryFile(prefix="wheelpin-elf-") as spool:
        spool.write(first)
        for chunk in chunks:
            digest.update(chunk)
            spool.write(chunk)
        spool.flush()
        try:
            report = read_elf(spool, info.file_size, info.filename, budget)
        except ElfError as exc:
            raise InputError(f"{path}: {exc}") from None
    return digest.digest(), report

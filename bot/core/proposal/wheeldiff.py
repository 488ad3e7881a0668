"""What changes from the wheels pinned today to the new ones (docs/design.md §3 "Pull
request", from → to): version, each wheel's sha256 and sizes, GPU archs, python tags, the
variant label and properties (PEP 825) and the shared libraries the wheels' ELF files need
(DT_NEEDED). Pure: the proposal shows it,
`core/proposal/assemble.py` makes it from the two images' wheel entries.

A new wheel is compared with the pinned wheel it replaces: one wheel on each side is the
same wheel whatever its tags; else the wheel of the same python tag, and where an image
holds several wheels of one python tag (variant wheels, two platform tags or ABIs), the
one of the same ABI, platform tags and variant label too. Such a wheel's row says what
tells it from the others (`cp312 (variant amd_gfx942)`), where the python tag alone does not.

A library is followed across the change by its name without the version after `.so`
(`libamdhip64.so.6` → `libamdhip64.so.7` is one library whose version moved). A move of
the HIP or HSA runtime's version is a ROCm major version change: the image it goes into
must ship that ROCm.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from packaging.tags import Tag, parse_tag
from packaging.utils import InvalidWheelFilename
from packaging.version import InvalidVersion, Version

from ..image.oci import WheelEntry, tags_of
from ..wheel.amdgpu import sorted_processors
from ..wheel.metadata import split_variant_label, wheel_filename_parts
from ..wheel.rocmlibs import ROCM_RUNTIMES

_SONAME = re.compile(r"^(.+?)\.so(?:\.(.+))?$")


@dataclass(frozen=True)
class LibraryChange:
    library: str  # the name without its version: libamdhip64
    old: tuple[str, ...]  # the sonames the pinned wheels need
    new: tuple[str, ...]

    @property
    def rocm_major(self) -> bool:
        return self.library in ROCM_RUNTIMES and bool(self.old) and bool(self.new)


@dataclass(frozen=True)
class SizeChange:
    """One new wheel's file and installed sizes, and those of the pinned wheel it replaces
    (None: no pinned wheel it replaces, or an image that does not record it)."""

    file: str  # the new wheel's
    old_size: int | None
    new_size: int
    old_installed: int | None
    new_installed: int | None

    def growth(self) -> tuple[str, int, int] | None:
        """What grew most, by share: ("installed size" or "size", old, new); None when
        neither grew or nothing is known to compare."""
        measures = [
            (what, old, new)
            for what, old, new in (
                ("size", self.old_size, self.new_size),
                ("installed size", self.old_installed, self.new_installed),
            )
            if old and new is not None and new > old
        ]
        return max(measures, key=lambda m: m[2] / m[1], default=None)


@dataclass(frozen=True)
class PropertiesChange:
    """The variant properties (PEP 825) one new wheel added and removed against the pinned
    wheel it replaces."""

    row: str  # the wheel's, as WheelChanges.sha256 names it (`cp312 (variant amd_gfx942)`)
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class VariantChange:
    """How the variant (PEP 825) of one python tag's wheels moved: the labels pinned and
    new (None: a wheel that is no variant wheel), and the properties each new wheel added
    and removed against the pinned one it replaces, where both record their properties and
    are of one label, or are the python tag's only wheels (its wheel's label and what it
    promises moved together). A property found on a wheel of another label is no change of
    either: the label's move says it."""

    tag: str
    old: tuple[str | None, ...]
    new: tuple[str | None, ...]
    properties: tuple[PropertiesChange, ...] = ()

    @property
    def label_changed(self) -> bool:
        return self.old != self.new


@dataclass(frozen=True)
class WheelChanges:
    old_version: str | None
    new_version: str
    # each wheel's row: its python tag (or file), with what tells it from the others of that
    # tag where the image holds several (`cp312 (variant amd_gfx942)`), or both tags where
    # one wheel each changed it (`cp311 → py3`); old, new
    sha256: tuple[tuple[str, str | None, str | None], ...]
    archs_added: tuple[str, ...] = ()
    archs_dropped: tuple[str, ...] = ()
    archs_known: bool = True  # False: the pinned image does not record its wheels' archs
    tags_added: tuple[str, ...] = ()
    tags_dropped: tuple[str, ...] = ()
    # the rows of wheels added or dropped beside others of their python tag that stays,
    # where neither the python tags nor a variant label moving says so
    wheels_added: tuple[str, ...] = ()
    wheels_dropped: tuple[str, ...] = ()
    libraries: tuple[LibraryChange, ...] | None = None  # None: a side does not record DT_NEEDED
    sizes: tuple[SizeChange, ...] = ()  # one per new wheel
    variants: tuple[VariantChange, ...] = ()  # only where a label or a property moved

    @property
    def goes_backwards(self) -> bool:
        """The new version is lower than the pinned one, by PEP 440 ordering of their public
        parts (a local segment names a build, `+g<sha>.rocm7.2.4`, not a place in an order);
        False where either is unknown or no PEP 440 version."""
        if self.old_version is None:
            return False
        try:
            return Version(Version(self.new_version).public) < Version(Version(self.old_version).public)
        except InvalidVersion:
            return False

    def size_of(self, file: str) -> SizeChange | None:
        return next((change for change in self.sizes if change.file == file), None)


def python_tag(entry: WheelEntry) -> str:
    """The interpreter tag of a wheel (`cp312`), from its file name's tags (what the entry
    records, else the file name itself: a name is never taken for a tag)."""
    tags = {tag.split("-", 1)[0] for tag in entry.tags or tags_of(entry.file)}
    return ".".join(sorted(tags)) if tags else entry.file


def variant_label(entry: WheelEntry) -> str | None:
    """A wheel's variant label: what its image records, else what its file name carries
    (an image published before wheelpin recorded variants still names the file)."""
    return entry.variant if entry.variant is not None else split_variant_label(entry.file)[1]


class _Identity(NamedTuple):
    """What tells one wheel from the others of its distribution in one image."""

    python: str
    abi: str
    platform: str
    variant: str | None

    def said(self, parts: Sequence[str]) -> str:
        """Its python tag, with those of its `parts` ("abi", "platform", "variant") that
        tell it from the others."""
        said = self._parts()
        return f"{self.python} ({', '.join(said[part] for part in parts)})" if parts else self.python

    def said_since(self, old: _Identity, parts: Sequence[str]) -> str:
        """As `said`, each part that moved from `old`'s written `old → new`: the row of a
        wheel that replaces one of another platform tag or variant label."""
        mine, theirs = self._parts(), old._parts()
        moved = [mine[part] if mine[part] == theirs[part] else f"{theirs[part]} → {mine[part]}" for part in parts]
        return f"{self.python} ({', '.join(moved)})" if parts else self.python

    def _parts(self) -> dict[str, str]:
        return {
            "abi": self.abi,
            "platform": self.platform,
            "variant": "no variant" if self.variant is None else f"variant {self.variant}",
        }


def _tags(entry: WheelEntry) -> frozenset[Tag]:
    found: set[Tag] = set()
    for text in entry.tags or tags_of(entry.file):
        if text.count("-") == 2:  # python-abi-platform, as packaging writes a tag
            found |= parse_tag(text)
    return frozenset(found)


def _identity(entry: WheelEntry) -> _Identity:
    tags = _tags(entry)
    return _Identity(
        python_tag(entry),
        ".".join(sorted({tag.abi for tag in tags})),
        ".".join(sorted({tag.platform for tag in tags})),
        variant_label(entry),
    )


@dataclass(frozen=True)
class _Pair:
    row: str  # WheelChanges.sha256's
    old: WheelEntry | None
    new: WheelEntry | None


def _telling_parts(olds: Sequence[WheelEntry], news: Sequence[WheelEntry]) -> list[str]:
    """The parts of the wheels' identities ("abi", "platform", "variant") that differ among
    the wheels of one python tag: what their rows name."""
    identities = [_identity(w) for w in (*olds, *news)]
    return [part for part in ("abi", "platform", "variant") if len({getattr(i, part) for i in identities}) > 1]


def _rows(olds: Sequence[WheelEntry], news: Sequence[WheelEntry]) -> dict[WheelEntry, str]:
    """Each wheel of one python tag (several on a side) named by its python tag and what
    tells it from the others: its ABI, platform tags or variant label, those that differ
    among them; its file name where those do not tell two wheels of one side apart."""
    identities = {w: _identity(w) for w in (*olds, *news)}
    parts = _telling_parts(olds, news)
    said = {w: identity.said(parts) for w, identity in identities.items()}
    alike = {w for side in (olds, news) for w in side if [said[other] for other in side].count(said[w]) > 1}
    return {w: w.file if w in alike else row for w, row in said.items()}


def _row_of_pair(
    old: WheelEntry,
    new: WheelEntry,
    rows: dict[WheelEntry, str],
    olds: Sequence[WheelEntry],
    news: Sequence[WheelEntry],
) -> str:
    """A pair's row: the new wheel's, with what moved since the old one said (`old → new`)."""
    if rows[old] == rows[new] or rows[new] == new.file:
        return rows[new]
    return _identity(new).said_since(_identity(old), _telling_parts(olds, news))


def _pairs(pinned: Sequence[WheelEntry], new: Sequence[WheelEntry]) -> list[_Pair]:
    """The new wheels beside the pinned ones they replace, and those with none, by row."""
    if len(pinned) == 1 and len(new) == 1:  # one wheel each: the same wheel, whatever its tags
        before, after = python_tag(pinned[0]), python_tag(new[0])
        # its row names the tag each sha256 is of where they differ (a cp311 wheel become py3)
        return [_Pair(after if before == after else f"{before} → {after}", pinned[0], new[0])]
    pairs = []
    for tag in sorted({python_tag(w) for w in (*pinned, *new)}):
        olds = [w for w in pinned if python_tag(w) == tag]
        news = [w for w in new if python_tag(w) == tag]
        if len(olds) <= 1 and len(news) <= 1:  # the python tag says which wheel
            pairs.append(_Pair(tag, olds[0] if olds else None, news[0] if news else None))
            continue
        rows = _rows(olds, news)
        matched = _matched(olds, news)
        paired_old = {id(old) for old, _new in matched}
        paired_new = {id(new) for _old, new in matched}
        found = [_Pair(_row_of_pair(o, n, rows, olds, news), o, n) for o, n in matched]
        found += [_Pair(rows[o], o, None) for o in olds if id(o) not in paired_old]
        found += [_Pair(rows[n], None, n) for n in news if id(n) not in paired_new]
        pairs += sorted(found, key=lambda pair: pair.row)
    return pairs


def _build(entry: WheelEntry) -> tuple[int, str] | tuple[()]:
    try:
        return wheel_filename_parts(entry.file)[2]
    except (InvalidWheelFilename, InvalidVersion):
        return ()


def _matched(olds: Sequence[WheelEntry], news: Sequence[WheelEntry]) -> list[tuple[WheelEntry, WheelEntry]]:
    """The pinned wheel each new one replaces, among the wheels of one python tag: the same
    wheel at another version (ABI, platform tags, variant label and build tag alike), else
    the one of its ABI and variant label whose platform tags moved (a new manylinux floor),
    else the one wheel left on each side. A pair is made only where the key is one wheel's
    on each side, so no wheel is paired with one of two alike."""
    keys: list[Callable[[WheelEntry], object]] = [
        lambda w: (*_identity(w), _build(w)),
        lambda w: (_identity(w).abi, _identity(w).variant),
    ]
    left_old, left_new = list(olds), list(news)
    matched: list[tuple[WheelEntry, WheelEntry]] = []
    for key in keys:
        for found in {key(w) for w in left_old}:
            old_ones = [w for w in left_old if key(w) == found]
            new_ones = [w for w in left_new if key(w) == found]
            if len(old_ones) == len(new_ones) == 1:
                matched.append((old_ones[0], new_ones[0]))
                left_old.remove(old_ones[0])
                left_new.remove(new_ones[0])
    if len(left_old) == len(left_new) == 1:
        matched.append((left_old[0], left_new[0]))
    return matched


def _variant_changes(
    pinned: Sequence[WheelEntry], new: Sequence[WheelEntry], pairs: Sequence[_Pair]
) -> tuple[VariantChange, ...]:
    """For each python tag with wheels on both sides (one wheel each: those two, whatever
    their tags), the variant labels (each once, however many platform tags carry it) and
    the properties that moved on each wheel of `pairs` (the new wheels beside the pinned
    ones they replace); nothing where nothing moved (two wheels of one label, or two that
    are no variant wheels). A tag added or dropped is said as such, not here."""
    if len(pinned) == 1 and len(new) == 1:
        groups = [(python_tag(new[0]), [pinned[0]], [new[0]])]
    else:
        tags = sorted({python_tag(w) for w in pinned} & {python_tag(w) for w in new})
        groups = [
            (tag, [w for w in pinned if python_tag(w) == tag], [w for w in new if python_tag(w) == tag]) for tag in tags
        ]
    changes = []
    for tag, olds, news in groups:
        old_labels = tuple(sorted({variant_label(w) for w in olds}, key=lambda label: label or ""))
        new_labels = tuple(sorted({variant_label(w) for w in news}, key=lambda label: label or ""))
        only_wheels = len(olds) == len(news) == 1
        properties = []
        for pair in pairs:
            old, now = pair.old, pair.new
            if old is None or now is None or python_tag(now) != tag:
                continue
            if old.variant is None or now.variant is None or (old.variant != now.variant and not only_wheels):
                continue
            before, after = set(old.variant_properties), set(now.variant_properties)
            if before != after:
                properties.append(
                    PropertiesChange(pair.row, tuple(sorted(after - before)), tuple(sorted(before - after)))
                )
        if old_labels != new_labels or properties:
            changes.append(VariantChange(tag, old_labels, new_labels, tuple(properties)))
    return tuple(changes)


def _library(soname: str) -> str:
    match = _SONAME.match(soname)
    return match.group(1) if match else soname


def library_changes(old: Sequence[str], new: Sequence[str]) -> tuple[LibraryChange, ...]:
    """Per library (name without version), the sonames needed before and after, where they differ."""
    names = sorted({_library(n) for n in (*old, *new)})
    changes = []
    for name in names:
        before = tuple(sorted(n for n in set(old) if _library(n) == name))
        after = tuple(sorted(n for n in set(new) if _library(n) == name))
        if before != after:
            changes.append(LibraryChange(name, before, after))
    return tuple(changes)


def wheel_changes(pinned: Sequence[WheelEntry], new: Sequence[WheelEntry]) -> WheelChanges:
    pairs = _pairs(pinned, new)
    sha256 = tuple((p.row, p.old.sha256 if p.old else None, p.new.sha256 if p.new else None) for p in pairs)
    sizes = tuple(
        SizeChange(
            p.new.file, p.old.size if p.old else None, p.new.size, p.old.installed if p.old else None, p.new.installed
        )
        for p in pairs
        if p.new is not None
    )
    old_tags = {python_tag(w) for w in pinned}
    new_tags = {python_tag(w) for w in new}
    old_archs = {a for w in pinned for a in w.archs}
    new_archs = {a for w in new for a in w.archs}
    archs_known = bool(old_archs) or any(w.needed is not None for w in pinned) or not pinned
    libraries = None
    if pinned and all(w.needed is not None for w in (*pinned, *new)):
        libraries = library_changes(
            [n for w in pinned for n in w.needed or ()], [n for w in new for n in w.needed or ()]
        )

    def unsaid(wheel: WheelEntry, other_side: Sequence[WheelEntry]) -> bool:
        """A wheel with none to pair whose python tag stays and whose variant label is on
        the other side too: neither the python tags nor the variant label say it came or went."""
        tag = python_tag(wheel)
        return variant_label(wheel) in {variant_label(w) for w in other_side if python_tag(w) == tag}

    return WheelChanges(
        old_version=pinned[0].version if pinned else None,
        new_version=new[0].version if new else "?",
        sha256=sha256,
        archs_added=tuple(sorted_processors(new_archs - old_archs)) if archs_known and pinned else (),
        archs_dropped=tuple(sorted_processors(old_archs - new_archs)) if archs_known else (),
        archs_known=archs_known,
        tags_added=tuple(sorted(new_tags - old_tags)) if pinned else (),
        tags_dropped=tuple(sorted(old_tags - new_tags)),
        wheels_added=tuple(p.row for p in pairs if p.old is None and p.new and unsaid(p.new, pinned)),
        wheels_dropped=tuple(p.row for p in pairs if p.new is None and p.old and unsaid(p.old, new)),
        libraries=libraries,
        sizes=sizes,
        variants=_variant_changes(pinned, new, pairs),
    )

"""A component's wheels as a set, judged only for a component's wheels. One wheel per
configured python tag and variant label (PEP 825: an upstream building one wheel per GPU
family makes, for one python tag, wheels told apart by their label alone); with no python
tags listed, the wheels of one python tag, one per label (exactly one wheel where none is
a variant wheel). A non-variant wheel and the null variant may stand beside the variants:
PEP 825 orders them after every variant, the fallbacks an installer takes when no variant
fits. All of one version, each label one property set (PEP 825: "Every variant label MUST
uniquely correspond to a specific set of variant properties, which MUST be the same for
all wheels using the same label within a single package version"), and, where
`wheel.variants` lists them, exactly those labels for every python tag."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .base import Finding, WheelCheck

if TYPE_CHECKING:
    from ..wheel.report import WheelReport

_COUNTS = {2: "two", 3: "three"}


def python_tags_of(filename: str) -> set[str]:
    from ..wheel.metadata import wheel_filename_parts

    return {tag.interpreter for tag in wheel_filename_parts(filename)[3]}


def variant_label_of(report: WheelReport) -> str | None:
    """A wheel's variant label: what its reading found, else what its file name carries;
    None for a wheel that is no variant wheel."""
    from ..wheel.metadata import split_variant_label

    return report.variant.label if report.variant is not None else split_variant_label(report.filename)[1]


def _by_label(reports: Sequence[WheelReport]) -> dict[str | None, list[WheelReport]]:
    found: dict[str | None, list[WheelReport]] = {}
    for report in reports:
        found.setdefault(variant_label_of(report), []).append(report)
    return found


def _listed(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class WheelSetCheck(WheelCheck[tuple[str, ...] | None]):
    name = "python_tags"
    kind = "set"
    label = "wheel set"
    field = "python_tags"
    flag = None  # `wheel inspect` reads one wheel
    default = None

    def check(self, report: WheelReport, rule: tuple[str, ...] | None) -> list[Finding]:
        return []

    def check_set(self, reports: Sequence[WheelReport], rule: tuple[str, ...] | None) -> list[str]:
        if rule is None:
            return []
        if not reports:
            return ["no wheel was given"]
        found = _per_listed_tag(reports, rule) if rule else _of_one_tag(reports)
        versions = sorted({r.version for r in reports})
        if len(versions) > 1:
            found.append(f"the wheels carry several versions: {', '.join(versions)}")
        found += _property_sets(reports)
        return found

    def passed(self, rule: tuple[str, ...] | None) -> list[str]:
        return ["one wheel each for " + ", ".join(rule)] if rule else []

    def passed_with_variants(self, rule: tuple[str, ...] | None) -> list[str]:
        """`passed` of a set holding variant wheels, which has one wheel per python tag and
        variant label, so several of one tag."""
        return ["one wheel each for " + ", ".join(rule) + " and variant label"] if rule else []


def _per_listed_tag(reports: Sequence[WheelReport], tags: tuple[str, ...]) -> list[str]:
    """One wheel per listed python tag and variant label, and no wheel of a tag not listed."""
    found: list[str] = []
    for tag in tags:
        matching = [r for r in reports if tag in python_tags_of(r.filename)]
        labels = _by_label(matching)
        if not matching or set(labels) == {None}:
            if len(matching) != 1:
                found.append(f"expected one wheel for {tag}, found {len(matching)}")
            continue
        for label, same in labels.items():
            if len(same) > 1:
                which = "no variant" if label is None else f"variant {label}"
                found.append(f"expected one wheel for {tag} ({which}), found {len(same)}")
    extra = [r.filename for r in reports if not python_tags_of(r.filename) & set(tags)]
    return found + [f"{name} is for none of the python tags {', '.join(tags)}" for name in extra]


def _of_one_tag(reports: Sequence[WheelReport]) -> list[str]:
    """With no python tag listed: one wheel, or variant wheels of one python tag, one per label."""
    labels = _by_label(reports)
    if set(labels) == {None}:
        return (
            []
            if len(reports) == 1
            else [f"expected one wheel, found {len(reports)} (list wheel.python_tags for several)"]
        )
    found: list[str] = []
    for label, same in labels.items():
        if len(same) > 1:
            which = "non-variant wheel" if label is None else f"wheel for variant {label}"
            found.append(f"expected one {which}, found {len(same)}")
    tags = sorted({".".join(sorted(python_tags_of(r.filename))) for r in reports})
    if len(tags) > 1:
        found.append(f"the wheels are of several python tags, {_listed(tags)} (list wheel.python_tags for several)")
    return found


def _property_sets(reports: Sequence[WheelReport]) -> list[str]:
    """Each label that the wheels give more than one property set: an installer reads one
    set per label (from the index's `{name}-{version}-variants.json`), so some wheel of that
    label would be installed on what it does not fit."""
    found: list[str] = []
    for label, same in _by_label([r for r in reports if r.variant is not None]).items():
        given: dict[tuple[str, ...], str] = {}
        for report in same:
            assert report.variant is not None
            given.setdefault(report.variant.properties, report.filename)
        if len(given) > 1:
            said = ", ".join(
                f"{', '.join(f'`{p}`' for p in properties) or 'no properties'} by {file}"
                for properties, file in given.items()
            )
            count = _COUNTS.get(len(given), str(len(given)))
            found.append(
                f"variant {label} is given {count} property sets: {said} (PEP 825: one label, one property set "
                "in a version)"
            )
    return found


class VariantSetCheck(WheelCheck[tuple[str, ...]]):
    """`wheel.variants`: the labels every python tag's wheels carry, as `python_tags` names
    the tags, so that a GPU family whose build made no wheel is refused rather than
    published without it. `""` is the non-variant wheel, as PEP 825's `variant_label`
    marker says it ("For the non-variant wheel, it is an empty string")."""

    name = "variants"
    kind = "set"
    label = "wheel set"
    field = "variants"
    flag = None  # `wheel inspect` reads one wheel
    default = ()

    def check(self, report: WheelReport, rule: tuple[str, ...]) -> list[Finding]:
        return []

    def check_set(self, reports: Sequence[WheelReport], rule: tuple[str, ...]) -> list[str]:
        if not rule:
            return []
        found: list[str] = []
        for tag in sorted({tag for r in reports for tag in python_tags_of(r.filename)}):
            carried = {variant_label_of(r) or "" for r in reports if tag in python_tags_of(r.filename)}
            for label in rule:
                if label not in carried:
                    found.append(
                        f"{tag} has no non-variant wheel" if not label else f"{tag} has no wheel of variant {label}"
                    )
        for report in reports:
            carries = variant_label_of(report)
            if carries is None and "" not in rule:
                found.append(
                    f"{report.filename} is no variant wheel, and wheel.variants does not list "
                    '"" (the non-variant wheel)'
                )
            elif carries is not None and carries not in rule:
                found.append(f"{report.filename} is of variant {carries}, which wheel.variants does not list")
        return found

    def passed(self, rule: tuple[str, ...]) -> list[str]:
        if not rule:
            return []
        said = [f"variant {label}" if label else "the non-variant wheel" for label in rule]
        return ["for each python tag, one wheel each of " + _listed(said)]

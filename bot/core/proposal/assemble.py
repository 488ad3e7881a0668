"""Proposal assembly (docs/design.md §3 "Pull request"): what a proposal says, from the new
image's wheels, the pinned image's wheels, the component's config and the pin edits.
Pure: `bot/loop/execute.py` reads the images and files, this module decides what they
mean, `core/proposal/text.py` writes the text.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.utils import canonicalize_name

from ..checks.api import CHECKS
from ..checks.archs import missing_wanted
from ..checks.rules import WheelRules
from ..checks.wheelset import WheelSetCheck
from ..config.model import Component
from ..image.oci import WheelEntry
from ..image.reach import Reach
from ..pins.bump import BumpPlan
from ..sizes import size_text
from .requirements import Conflict, RequirementsDiff, diff_requirements, find_conflicts, parse_requirement
from .text import ProposalFacts
from .upstreamcommit import Commit, History
from .wheeldiff import WheelChanges, wheel_changes


def constraint_lines(text: str) -> list[str]:
    """The requirements of a constraints file: comments, blank lines and options (`-r`,
    `-c`, `--hash`) left out."""
    lines = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            lines.append(line)
    return lines


def verification_lines(component: Component, commit: str, wheels: Sequence[WheelEntry] = ()) -> tuple[str, ...]:
    """The checks every published wheel of `component` passed, one line each; the wheel
    set's said per variant label too when `wheels` hold variant wheels."""
    rules = WheelRules.from_config(component.wheel, commit=commit)
    labelled = any(wheel.variant is not None for wheel in wheels)
    return tuple(
        line
        for check in CHECKS.values()
        for line in (
            check.passed_with_variants(rules.of(check))
            if labelled and isinstance(check, WheelSetCheck)
            else check.passed(rules.of(check))
        )
    )


def _constraints(component: Component, constraints_text: str | None) -> list[str]:
    """The config's constraints and its constraints file's, each once (a line in both
    would give each conflict twice)."""
    constraints = list(component.constraints)
    if constraints_text is not None:
        constraints += constraint_lines(constraints_text)
    return list(dict.fromkeys(" ".join(line.split()) for line in constraints))


def requirements_diff(
    component: Component, *, pinned: Sequence[WheelEntry], new: Sequence[WheelEntry], constraints_text: str | None
) -> RequirementsDiff:
    """Requires-Dist of the pinned wheels → the new ones, with the new ones' conflicts
    against the constraints typed in the config and read from its constraints file."""
    old_requires = [r for w in pinned for r in w.requires_dist]
    new_requires = [r for w in new for r in w.requires_dist]
    diff = diff_requirements(old_requires, new_requires, old_source="pinned", new_source="new")
    return RequirementsDiff(
        diff.added,
        diff.removed,
        diff.changed,
        tuple(find_conflicts(new_requires, _constraints(component, constraints_text), source="new")),
    )


def known_conflicts(
    component: Component, conflicts: Sequence[Conflict], pinned: Sequence[WheelEntry], constraints_text: str | None
) -> tuple[Conflict, ...]:
    """The new wheels' conflicts the pinned wheels already had: the same package against the
    same constraint (whatever range each declares) is not new."""
    requires = [r for w in pinned for r in w.requires_dist]
    before = {
        (_package(c.requirement), c.constraint)
        for c in find_conflicts(requires, _constraints(component, constraints_text), source="pinned")
    }
    return tuple(c for c in conflicts if (_package(c.requirement), c.constraint) in before)


def _package(requirement: str) -> str:
    return canonicalize_name(parse_requirement(requirement, source="a conflict").name)


def notes(component: Component, wheels: Sequence[WheelEntry]) -> tuple[str, ...]:
    """What a reviewer must not miss: each wanted arch the new wheels have no code for, or
    code in only some of their GPU libraries."""
    wanted = component.wheel.archs_wanted
    carried = sorted({arch for w in wheels for arch in w.archs})
    missing = missing_wanted(wanted, carried)
    partial = [
        arch
        for arch in wanted
        if arch not in missing
        and missing_wanted([arch], sorted({a for w in wheels for a in w.archs if a not in w.archs_partial}))
    ]
    return tuple(f"{arch}: no code object, skipped (wheel.archs_wanted)" for arch in missing) + tuple(
        f"{arch}: code objects in only some of the GPU libraries, so some kernels are missing "
        "on it (wheel.archs_wanted)"
        for arch in partial
    )


# A growth smaller than this is said in the table only: a share of a small wheel (a pure
# Python one of some kB) moves by more than any setting with every change, and weighs nothing
# next to images of tens of GB.
GROWTH_NOTED_FROM = 1_000_000


def growth_notes(component: Component, changes: WheelChanges) -> tuple[str, ...]:
    """Each new wheel whose file or installed size grew from the pinned one's by more than
    `wheel.size_growth_warn` (0: never said) and by GROWTH_NOTED_FROM bytes at least: what
    every image that installs it grows by."""
    share = component.wheel.size_growth_warn
    found = []
    for change in changes.sizes:
        grown = change.growth()
        if (
            share
            and grown is not None
            and (grown[2] - grown[1]) / grown[1] > share
            and grown[2] - grown[1] >= GROWTH_NOTED_FROM
        ):
            what, old, new = grown
            found.append(
                f"{change.file}: {what} grows {(new - old) / old:.0%}, {size_text(old)} → "
                f"{size_text(new)}, over the {share:.0%} wheel.size_growth_warn allows"
            )
    return tuple(found)


def history_notes(history: History | None, new_commit: str) -> tuple[str, ...]:
    """The pinned commit left the new one's history (a branch rewritten, a release on
    another line): said first, as the commit list alone would read as a successor."""
    warning = history.warning(new_commit) if history is not None else None
    return (warning,) if warning else ()


def version_notes(changes: WheelChanges) -> tuple[str, ...]:
    """A version that goes backwards: proposed (the upstream's branch or newest tag is
    what the component follows), and said where no reviewer misses it."""
    if not changes.goes_backwards:
        return ()
    return (
        f"the version goes backwards: {changes.old_version} → {changes.new_version} "
        "(lower by PEP 440 ordering): merging this downgrades the wheel",
    )


def assemble(
    component: Component,
    *,
    upstream: str,
    old_commit: str | None,
    new_commit: str,
    image: str,
    wheels: Sequence[WheelEntry],
    pinned: Sequence[WheelEntry],
    constraints_text: str | None,
    commits: Sequence[Commit],
    bump: BumpPlan,
    state: dict[str, object],
    check_refs: Sequence[str],
    reach: Reach = Reach(),
    provenance: str = "",
    more_verification: Sequence[str] = (),
    more_notes: Sequence[str] = (),
    consumer: Sequence[str] = (),
    tags: tuple[str | None, str | None] = (None, None),
    pinned_image: str | None = None,
    pinned_problem: str | None = None,
    image_sizes: tuple[int | None, int | None] = (None, None),
    history: History | None = None,
) -> ProposalFacts:
    """`image_sizes`: the new image's and the pinned one's (config and layers, as their
    manifests declare them), where read; `history`: what `commits` start after, and how it
    relates to `new_commit`."""
    diff = requirements_diff(component, pinned=pinned, new=wheels, constraints_text=constraints_text)
    changes = wheel_changes(pinned, wheels)
    moved = history_notes(history, new_commit) + version_notes(changes)
    return ProposalFacts(
        component=component.name,
        upstream=upstream,
        old_commit=old_commit,
        new_commit=new_commit,
        old_tag=tags[0],
        new_tag=tags[1],
        pinned_image=pinned_image,
        pinned_problem=pinned_problem,
        version=wheels[0].version if wheels else "?",
        image=image,
        image_size=image_sizes[0],
        pinned_image_size=image_sizes[1],
        wheels=tuple(wheels),
        commits=tuple(commits),
        diff=diff,
        verification=verification_lines(component, new_commit, wheels) + tuple(more_verification),
        files=tuple(sorted(bump.new_texts)),
        edits=bump.edits,
        state=dict(state),
        check_refs=tuple(check_refs),
        reach=reach,
        changes=changes,
        notes=moved
        + notes(component, wheels)
        + growth_notes(component, changes)
        + bump.left_behind_said
        + tuple(more_notes),
        history=history,
        known_conflicts=known_conflicts(component, diff.conflicts, pinned, constraints_text),
        provenance=provenance,
        consumer=tuple(consumer),
    )

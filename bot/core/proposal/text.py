"""The text of a proposal (docs/design.md §3 "Pull request"), built from small pure parts.

Title; from → to with a compare link and the commit list; the wheel table (sizes old →
new, the image's own size, variant properties); the
Requires-Dist diff and constraint conflicts (loud); the verification results; how to
check by hand; the hidden `<!-- wheelpin: {...} -->` marker holding the proposal's
machine-readable state. Cut to MAX_BODY, long sections first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..image.oci import WheelEntry
from ..image.reach import Reach
from ..image.reference import ImageRef, ImageRefError, short_digest
from ..pins.bump import Edit
from ..sizes import size_text
from .marker import marker
from .requirements import Conflict, RequirementsDiff
from .upstreamcommit import Commit, History

if TYPE_CHECKING:  # what changed between two wheels is worked out (assemble) only for a proposal
    from .wheeldiff import SizeChange, WheelChanges

# The longest text a proposal or a dashboard is written to: what every forge wheelpin writes
# to accepts. GitHub refuses an issue or pull request body longer than this many characters
# (422, "body is too long"); the local platform has no cap.
MAX_BODY = 65_536
_FORGES = re.compile(r"^(?:https://|git@)(github\.com|gitlab\.com|codeberg\.org)[:/](.+?)(?:\.git)?/?$")


@dataclass(frozen=True, kw_only=True)
class ProposalFacts:
    component: str
    upstream: str
    old_commit: str | None
    new_commit: str
    pinned_image: str | None = None  # what the base pins, when its commit cannot be told (old_commit None)
    pinned_problem: str | None = None  # why the pinned image could not be read ("… not in the registry (404)")
    old_tag: str | None = None  # the upstream's release tags on them, when the component follows tags
    new_tag: str | None = None
    version: str
    image: str  # repository:tag@digest as pinned
    image_size: int | None = None  # its config and layers as its manifest declares them
    pinned_image_size: int | None = None  # the same of the image pinned today
    wheels: tuple[WheelEntry, ...]
    commits: tuple[Commit, ...] = ()
    history: History | None = None  # what the commits start after, and whether the new commit descends from it
    diff: RequirementsDiff = RequirementsDiff()
    verification: tuple[str, ...] = ()  # the checks that passed, one line each
    changes: WheelChanges | None = None  # from the pinned wheels to the new ones
    notes: tuple[str, ...] = ()  # what a reviewer must not miss (a wanted arch skipped)
    known_conflicts: tuple[Conflict, ...] = ()  # those of diff.conflicts the pinned wheels had already
    provenance: str = ""  # who made the image: built by wheelpin (and how), or adopted
    consumer: tuple[str, ...] = ()  # the consuming image: a header line, then what the wheel would break there
    files: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()  # every value the bump changes: file, line, old → new
    check_refs: tuple[str, ...] = ()  # references skopeo and wheelpin read (repo@digest, oci:…)
    reach: Reach = Reach()  # how the registry is spoken to: the flags those commands need
    state: dict[str, Any] = field(default_factory=dict)


def title(facts: ProposalFacts) -> str:
    return f"Bump {facts.component} to {facts.version} ({facts.new_commit[:8]})"


def compare_link(upstream: str, old: str | None, new: str) -> str | None:
    match = _FORGES.match(upstream)
    if not match:
        return None
    host, path = match.groups()
    if old is None:
        return f"https://{host}/{path}/commit/{new}"
    middle = "/-/compare/" if host == "gitlab.com" else "/compare/"
    return f"https://{host}/{path}{middle}{old}...{new}"


def _moved(old: int | None, new: int | None) -> str:
    """`old → new (+8%)` where the pinned side is known, `new (unchanged)` where it is the
    same; `new` alone where nothing pinned is known to compare with."""
    if new is None:
        return "not recorded"
    if not old:
        return size_text(new)
    if old == new:
        return f"{size_text(new)} (unchanged)"
    if size_text(old) == size_text(new):  # a move the rounding hides, said in bytes
        return f"{size_text(old)} → {size_text(new)} ({new - old:+,} bytes)"
    share = (new - old) / old
    return (
        f"{size_text(old)} → {size_text(new)} ({share:+.1%})"
        if abs(share) < 0.1
        else f"{size_text(old)} → {size_text(new)} ({share:+.0%})"
    )


def _size_cells(wheel: WheelEntry, change: SizeChange | None) -> str:
    if change is None:
        return f"{size_text(wheel.size)} | {_moved(None, wheel.installed)}"
    return f"{_moved(change.old_size, change.new_size)} | {_moved(change.old_installed, change.new_installed)}"


def _image_line(facts: ProposalFacts) -> str:
    if facts.image_size is None:
        return f"Image: `{facts.image}`"
    pinned = f"; the pinned one {size_text(facts.pinned_image_size)}" if facts.pinned_image_size is not None else ""
    return f"Image: `{facts.image}`, {size_text(facts.image_size)}{pinned}"


def _variant_lines(wheels: Sequence[WheelEntry]) -> str:
    """Each variant wheel's label and properties (PEP 825), under the table."""
    lines = [
        f"- `{w.file}`: variant `{w.variant}`, "
        + (", ".join(f"`{p}`" for p in w.variant_properties) or "no properties (the null variant)")
        for w in wheels
        if w.variant is not None
    ]
    return "\n\nVariants:\n" + "\n".join(lines) if lines else ""


def _sections(facts: ProposalFacts, commits: Sequence[Commit], cut: int) -> list[str]:
    if facts.old_commit:
        old = f"`{facts.old_commit[:8]}`"
    elif facts.pinned_image:  # pinned, by an image that does not say its commit: never "none pinned"
        old = f"`{_short_reference(facts.pinned_image)}` ({facts.pinned_problem or 'its upstream commit not known'})"
        if facts.history is not None and facts.history.from_tag and facts.history.since:
            old += f", whose tag names `{facts.history.since[:8]}`,"
    else:
        old = "`(none pinned)`"
    old += f" (tag `{facts.old_tag}`)" if facts.old_tag else ""
    new = f"`{facts.new_commit[:8]}`" + (f" (tag `{facts.new_tag}`)" if facts.new_tag else "")
    link = compare_link(facts.upstream, facts.old_commit or _tag_commit(facts), facts.new_commit)
    head = [f"Moves **{facts.component}** from {old} to {new} of {facts.upstream}."]
    if link:
        head.append(f"Compare: {link}")
    parts = ["\n\n".join(head)]
    if facts.notes:
        parts.append("### ⚠️ Notes\n" + "\n".join(f"- **{note}**" for note in facts.notes))
    if facts.changes is not None:
        lines = (
            _unread_lines(facts.changes, facts.pinned_problem, facts.edits)
            if facts.pinned_problem
            else _change_lines(facts.changes)
        )
        parts.append("### From → to\n" + "\n".join(lines))
    if commits:
        listed = [f"- `{c.sha[:8]}` {c.subject}{_mark(c)}" for c in commits]
        if cut:
            listed.append(f"- … and {cut} more commits (cut to fit)")
        history = facts.history  # said where the list is not simply what came after the pin
        said = (
            f"{history.said()}:\n"
            if history is not None and (history.divergence is not None or history.from_tag)
            else ""
        )
        parts.append("### Commits\n" + said + "\n".join(listed))
    rows = ["| wheel | size | installed | sha256 | GPU archs | tags |", "|---|---|---|---|---|---|"]
    rows += [
        f"| `{w.file}` | {_size_cells(w, facts.changes.size_of(w.file) if facts.changes else None)} "
        f"| `{w.sha256}` | {w.archs_text} | {', '.join(w.tags)} |"
        for w in facts.wheels
    ]
    parts.append("### Wheels\n" + "\n".join(rows) + _variant_lines(facts.wheels) + "\n\n" + _image_line(facts))
    if facts.pinned_problem:  # every requirement is on the new side alone: none is "added"
        declared = [f"- `{' | '.join(c.new or ())}`" for c in facts.diff.added]
        parts.append(
            "### Requires-Dist\nThe new wheels' (not compared: the pinned image could not be read):\n"
            + "\n".join(declared)
            if declared
            else "Requires-Dist: the new wheels declare none (not compared: the pinned image could not be read)."
        )
    else:
        parts.append(
            "### Requires-Dist\n" + _diff_text(facts.diff) if not facts.diff.empty else "Requires-Dist: unchanged."
        )
    if facts.diff.conflicts:
        lines = [
            f"- **`{c.requirement}`** vs the image's `{c.constraint}`{_since(facts, c)}" for c in facts.diff.conflicts
        ]
        parts.append(
            "### ⚠️ CONSTRAINT CONFLICTS\nThe new wheel asks for versions the image does not "
            "ship:\n" + "\n".join(lines) + "\n\n" + _for_upstream(facts)
        )
    if facts.consumer:
        parts.append(
            "### Against the consuming image\n"
            + facts.consumer[0]
            + "".join(f"\n- {line}" for line in facts.consumer[1:])
        )
    if facts.verification:
        parts.append(
            "### Verification\n"
            + "\n".join(f"- ✅ {line}" for line in facts.verification)
            + (f"\n\nProvenance: {facts.provenance}" if facts.provenance else "")
        )
    refs = facts.check_refs or (_bare(facts.image),)
    commands = []
    for ref in refs:
        skopeo = ref if ref.startswith("oci:") else f"docker://{ref}"  # skopeo refuses repo:tag@digest
        commands += [
            f"skopeo inspect{facts.reach.skopeo_flags} {skopeo}",
            f"wheelpin image show{facts.reach.wheelpin_flags} {ref}",
        ]
    parts.append("### Check by hand\n```sh\n" + "\n".join(commands) + "\n```")
    if facts.files:
        parts.append("Pins moved in: " + ", ".join(f"`{f}`" for f in facts.files) + _edit_lines(facts.edits))
    parts.append(marker(facts.state))
    return parts


def _since(facts: ProposalFacts, conflict: Conflict) -> str:
    """Whether the pinned wheel had `conflict` too; nothing where it could not be read."""
    if facts.pinned_problem:
        return ""
    return " (already present in the pinned wheel)" if conflict in facts.known_conflicts else " — **new**"


def _tag_commit(facts: ProposalFacts) -> str | None:
    """The commit the pinned image's tag names, where the list starts from it."""
    history = facts.history
    return history.since if history is not None and history.from_tag else None


def _for_upstream(facts: ProposalFacts) -> str:
    """Ready-to-paste text for an issue upstream: what the wheel declares, what the image ships."""
    name = facts.wheels[0].name if facts.wheels else facts.component
    lines = [f"- `{c.requirement}` excludes `{c.constraint}`" for c in facts.diff.conflicts]
    text = (
        f"{name} {facts.version} (commit {facts.new_commit[:12]}) declares requirements that exclude "
        "versions a downstream image ships and tests with:\n\n" + "\n".join(lines) + "\n\n"
        "Could these ranges be widened, or is there a known incompatibility? "
        "(Found by wheelpin, checking the new wheel's Requires-Dist against the image's constraints.)"
    )
    return "<details><summary>For upstream: text for an issue</summary>\n\n```markdown\n" + text + "\n```\n</details>"


def _mark(commit: Commit) -> str:
    """What became of a listed commit's wheel, where wheelpin tried it: refused by the
    checks, or its build failed."""
    if commit.refused:
        return f" — ⛔ refused: {_flat(commit.refused)}"
    if commit.failed:
        return f" — ❌ {_flat(commit.failed)}"
    return ""


def _flat(text: str, limit: int = 160) -> str:
    """`text` on one line, cut to about `limit` characters at a space: never inside a word,
    which may be an image reference or a path a reader copies (one longer than `limit`
    is kept whole)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    if cut <= 0:
        cut = flat.find(" ", limit)
        if cut < 0:
            return flat
    return flat[:cut].rstrip(" ,;:(") + " …"


def _short_reference(text: str) -> str:
    """An image reference as a sentence names it (core/image/reference.py `ImageRef.short`);
    the text itself where it is none."""
    try:
        return ImageRef.parse(text).short()
    except ImageRefError:
        return text


def _unread_lines(changes: WheelChanges, problem: str, edits: Sequence[Edit]) -> list[str]:
    """From → to when the pinned image could not be read: said once, and nothing compared
    with it; each wheel's sha256 from the value the pin file holds, where the bump
    replaces one with it."""
    held = {edit.new: edit for edit in edits if edit.what == "sha256"}
    lines = [
        f"- ⚠️ **the pinned image could not be read ({problem}): nothing below is compared with it**",
        f"- version `{changes.new_version}`",
    ]
    for tag, _before, after in changes.sha256:
        if after is None:
            continue
        edit = held.get(after)
        if edit is None or not edit.old:
            lines.append(f"- `{tag}` sha256 `{after[:16]}…`")
        elif edit.python_tag is not None:  # the pin names the tag: the value it held is that wheel's too
            lines.append(f"- `{tag}` sha256 `{edit.old[:16]}…` (`{edit.file}:{edit.line}`) → `{after[:16]}…`")
        else:  # the image's only wheel, whose tag then is not known: not said to be the new one's
            lines.append(
                f"- sha256 `{edit.old[:16]}…` (`{edit.file}:{edit.line}`, the pinned wheel's) → `{tag}` `{after[:16]}…`"
            )
    return lines


def _change_lines(changes: WheelChanges) -> list[str]:
    """From → to, the losses first and loud."""
    lines: list[str] = []
    if changes.goes_backwards:
        lines.append(f"- ⚠️ **version goes backwards: `{changes.old_version}` → `{changes.new_version}`**")
    if changes.archs_dropped:
        lines.append(f"- ⚠️ **GPU archs dropped: {', '.join(changes.archs_dropped)}**")
    if changes.tags_dropped:
        lines.append(f"- ⚠️ **python tags dropped: {', '.join(changes.tags_dropped)}**")
    if changes.wheels_dropped:
        lines.append(f"- ⚠️ **wheels dropped: {_listed(changes.wheels_dropped)}**")
    several = len(changes.sha256) > 1  # a line names the python tag or the wheel it is of
    for variant in changes.variants:
        if variant.label_changed:
            of = _of(variant.tag, several)
            lines.append(f"- ⚠️ **variant label{of} changed: {_labels(variant.old)} → {_labels(variant.new)}**")
        for wheel in variant.properties:
            if wheel.removed:
                lines.append(f"- ⚠️ **variant properties{_of(wheel.row, several)} removed: {_listed(wheel.removed)}**")
    for library in changes.libraries or ():
        if library.rocm_major:
            major = library.new[-1].rsplit(".so.", 1)[-1].split(".")[0]
            lines.append(
                f"- ⚠️ **`{' '.join(library.old)}` → `{' '.join(library.new)}`: a ROCm major version "
                f"change; the image must ship ROCm {major}**"
            )
    old = f"`{changes.old_version}`" if changes.old_version else "(nothing pinned)"
    if not changes.goes_backwards:
        lines.append(f"- version {old} → `{changes.new_version}`")
    for tag, before, after in changes.sha256:
        lines.append(
            f"- `{tag}` sha256 {f'`{before[:16]}…`' if before else '(none)'} → "
            f"{f'`{after[:16]}…`' if after else '(none)'}"
        )
    if changes.archs_added:
        lines.append(f"- GPU archs added: {', '.join(changes.archs_added)}")
    if not changes.archs_known:
        lines.append("- GPU archs: not compared (the pinned image does not record them)")
    if changes.tags_added:
        lines.append(f"- python tags added: {', '.join(changes.tags_added)}")
    if changes.wheels_added:
        lines.append(f"- wheels added: {_listed(changes.wheels_added)}")
    for wheel in (wheel for variant in changes.variants for wheel in variant.properties):
        if wheel.added:
            lines.append(f"- variant properties{_of(wheel.row, several)} added: {_listed(wheel.added)}")
    if changes.libraries is None and changes.old_version is not None:  # nothing pinned: nothing to compare
        lines.append("- libraries (DT_NEEDED): not compared (the pinned image does not record them)")
    moved = [lib for lib in changes.libraries or () if lib.old and lib.new and not lib.rocm_major]
    lines += [f"- needs `{' '.join(lib.old)}` → `{' '.join(lib.new)}`" for lib in moved]
    added = [name for lib in changes.libraries or () if not lib.old for name in lib.new]
    dropped = [name for lib in changes.libraries or () if not lib.new for name in lib.old]
    if added:
        lines.append("- needs newly: " + ", ".join(f"`{name}`" for name in added))
    if dropped:
        lines.append("- no longer needs: " + ", ".join(f"`{name}`" for name in dropped))
    return lines


def _of(row: str, several: bool) -> str:
    """Which wheels a variant line is of, where the proposal holds several: their python
    tag, or one wheel's row (`cp312 (variant amd_gfx942)`)."""
    return f" of `{row}`" if several else ""


def _labels(labels: Sequence[str | None]) -> str:
    """Variant labels as a reader knows them; a wheel without one is no variant wheel."""
    return ", ".join(f"`{label}`" if label is not None else "none (no variant wheel)" for label in labels)


def _listed(values: Sequence[str]) -> str:
    return ", ".join(f"`{value}`" for value in values)


def _edit_lines(edits: Sequence[Edit]) -> str:
    """Where each value moved, old → new (image references shortened to their digests)."""

    def short(value: str) -> str:
        return short_digest(value.rsplit("@", 1)[-1]) if "@" in value else value[:16]

    return "".join(f"\n- `{e.file}:{e.line}` {e.what} `{short(e.old)}` → `{short(e.new)}`" for e in edits)


def _bare(image: str) -> str:
    """`repo:tag@digest` → `repo@digest`."""
    repository, _, digest = image.rpartition("@")
    last = repository.rsplit("/", 1)[-1]
    return (repository.rsplit(":", 1)[0] if ":" in last else repository) + "@" + digest


def _diff_text(diff: RequirementsDiff) -> str:
    if diff.empty:
        return "No change."
    lines = [f"- added `{' | '.join(c.new or ())}`" for c in diff.added]
    lines += [f"- removed `{' | '.join(c.old or ())}`" for c in diff.removed]
    lines += [f"- changed `{' | '.join(c.old or ())}` → `{' | '.join(c.new or ())}`" for c in diff.changed]
    return "\n".join(lines)


def body(facts: ProposalFacts, *, limit: int = MAX_BODY) -> str:
    """The body, with the commit list cut (and said so) until it fits `limit`."""
    commits = list(facts.commits)
    cut = 0
    while True:
        text = "\n\n".join(_sections(facts, commits, cut))
        if len(text) <= limit:
            return text
        if not commits:
            end = "\n\n(cut to fit)\n\n" + marker(facts.state)
            return text[: limit - len(end)] + end
        drop = max(1, len(commits) // 4)
        commits = commits[:-drop]
        cut += drop

"""The text of a proposal (docs/design.md §3 "Pull request"), built from small pure parts.

Title; from → to with a compare link and the commit list; the wheel table; the
Requires-Dist diff and constraint conflicts (loud); the verification results; how to
check by hand; the hidden `<!-- wheelpin: {...} -->` marker holding the proposal's
machine-readable state. Cut to GitHub's 65,536-character cap, long sections first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .ociimage import WheelEntry
from .pins import Edit
from .requirements import RequirementsDiff

MAX_BODY = 65_536
MARKER_START = "<!-- wheelpin: "  # the hidden state marker of a proposal, and of the bot's commits
MARKER = re.compile(re.escape(MARKER_START) + r"(\{.*?\}) -->", re.S)
_FORGES = re.compile(r"^(?:https://|git@)(github\.com|gitlab\.com|codeberg\.org)[:/](.+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


@dataclass(frozen=True, kw_only=True)
class ProposalFacts:
    component: str
    upstream: str
    old_commit: str | None
    new_commit: str
    version: str
    image: str  # repository:tag@digest as pinned
    wheels: tuple[WheelEntry, ...]
    commits: tuple[Commit, ...] = ()
    diff: RequirementsDiff = RequirementsDiff()
    verification: tuple[str, ...] = ()  # the checks that passed, one line each
    files: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()  # every value the bump changes: file, line, old → new
    check_refs: tuple[str, ...] = ()  # references skopeo and wheelpin read (repo@digest, oci:…)
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


def marker(state: dict[str, Any]) -> str:
    return f"{MARKER_START}{json.dumps(state, sort_keys=True, separators=(',', ':'))} -->"


def read_marker(text: str) -> dict[str, Any] | None:
    matches = list(MARKER.finditer(text))  # the bot's own marker comes last (commit
    if not matches:                           # subjects above it may hold lookalikes)
        return None
    match = matches[-1]
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _size(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"


def _sections(facts: ProposalFacts, commits: Sequence[Commit], cut: int) -> list[str]:
    old = facts.old_commit[:8] if facts.old_commit else "(none pinned)"
    link = compare_link(facts.upstream, facts.old_commit, facts.new_commit)
    head = [f"Moves **{facts.component}** from `{old}` to `{facts.new_commit[:8]}` of {facts.upstream}."]
    if link:
        head.append(f"Compare: {link}")
    parts = ["\n\n".join(head)]
    if commits:
        listed = [f"- `{c.sha[:8]}` {c.subject}" for c in commits]
        if cut:
            listed.append(f"- … and {cut} more commits (cut to fit)")
        parts.append("### Commits\n" + "\n".join(listed))
    rows = ["| wheel | version | size | sha256 | GPU archs | tags |", "|---|---|---|---|---|---|"]
    rows += [f"| `{w.file}` | {w.version} | {_size(w.size)} | `{w.sha256}` | "
             f"{', '.join(w.archs) or 'no device code'} | {', '.join(w.tags)} |" for w in facts.wheels]
    parts.append("### Wheels\n" + "\n".join(rows) + f"\n\nImage: `{facts.image}`")
    parts.append("### Requires-Dist\n" + _diff_text(facts.diff))
    if facts.diff.conflicts:
        lines = [f"- **`{c.requirement}`** vs the image's `{c.constraint}`" for c in facts.diff.conflicts]
        parts.append("### ⚠️ CONSTRAINT CONFLICTS\nThe new wheel asks for versions the image does not "
                     "ship:\n" + "\n".join(lines))
    if facts.verification:
        parts.append("### Verification\n" + "\n".join(f"- ✅ {line}" for line in facts.verification))
    refs = facts.check_refs or (_bare(facts.image),)
    commands = []
    for ref in refs:
        skopeo = ref if ref.startswith("oci:") else f"docker://{ref}"  # skopeo refuses repo:tag@digest
        commands += [f"skopeo inspect {skopeo}", f"wheelpin image show {ref}"]
    parts.append("### Check by hand\n```sh\n" + "\n".join(commands) + "\n```")
    if facts.files:
        parts.append("Pins moved in: " + ", ".join(f"`{f}`" for f in facts.files) + _edit_lines(facts.edits))
    parts.append(marker(facts.state))
    return parts


def _edit_lines(edits: Sequence[Edit]) -> str:
    """Where each value moved, old → new (image references shortened to their digests)."""
    def short(value: str) -> str:
        return value.rsplit("@", 1)[-1][:19] if "@" in value else value[:16]
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

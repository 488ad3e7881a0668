"""The plan of `wheelpin reconcile --dry-run`, as text (docs/dry-run.md): per component, the
pinned image, the upstream head and the commits between, the build it would start, the
image reference it would publish to, the pin diff, the proposal, every refusal the real
pass would meet, and what only the build can tell. The plan itself is made by
`loop/preview.py`; `--json` carries it as the `plan` key of each component."""

from __future__ import annotations

import re

from ..core.decide.plan import Kind
from ..loop.preview import DIGEST, SHA256, ComponentPlan
from ..loop.results import ComponentResult, PassResult

COMMITS_SHOWN = 20  # the newest ones; --json lists them all (up to the proposal's bound)
_PLACEHOLDER = re.compile(r"\{[a-z0-9_]+\}")
_FROM_VERSION = "from the wheel's version"
_DOING = {Kind.RECORD: "record the failure"}  # a step its kind alone does not say, as the header says it


def plan_text(result: PassResult) -> str:
    lines: list[str] = []
    for component in result.components:
        lines += _component(component)
    if any(component.would_fail for component in result.components):
        lines.append(f"the real pass would fail (exit {result.exit_code}): see `refused` above")
    elif result.failed:
        lines.append(f"the dry run failed (exit {result.exit_code}): see above")
    elif result.left_alone:
        lines.append("the real pass would leave a branch alone (exit 3)")
    return "\n".join(lines)


def component_plan(component: ComponentResult) -> list[str]:
    """One component's plan, a line each (the run's summary shows it too: commands/summary.py)."""
    return _component(component)


def _component(component: ComponentResult) -> list[str]:
    plan = component.plan
    kinds = ", ".join(a.kind.value for a in component.actions)
    if plan is None:  # the dry run itself failed before a plan was made
        return [f"{component.name}: {component.status}", *(f"  - {m}" for m in component.messages)]
    said = f"would {kinds}" if kinds else "nothing to do"
    if plan.fails_at is Kind.REPORT:  # the pass says why it fails, after what it does first
        before = [_DOING.get(a.kind, a.kind.value) for a in component.actions if a.kind is not Kind.REPORT]
        said = f"would {', '.join(before)}, and fail (refused below)" if before else "would fail (refused below)"
    elif plan.fails_at is not None:
        said += f", and fail at {plan.fails_at.value} (refused below)"
    lines = [f"{component.name}: {said}"]
    lines += _pinned(plan)
    if plan.head is not None:
        lines.append(f"  upstream: {plan.upstream} at {plan.head[:8]}")
    if plan.commits and plan.history is not None:
        order = "" if plan.history.head_only else ", newest first"
        lines.append(f"  commits: {plan.history.said()}{order}")
        warning = plan.history.warning(plan.head or "")
        if warning:
            lines.append(f"    ! {warning}")
        lines += [f"    {c.sha[:8]} {c.subject}" for c in plan.commits[:COMMITS_SHOWN]]
        if len(plan.commits) > COMMITS_SHOWN:
            lines.append(f"    … and {len(plan.commits) - COMMITS_SHOWN} more (--json lists them)")
    if plan.build is not None:
        lines.append(f"  build: {plan.build.runs}")
        lines.append(f"    in {plan.build.where}")
        lines += [f"    input {key} = {value}" for key, value in plan.build.inputs.items()]
    elif plan.build_said:
        lines.append(f"  build: none ({plan.build_said})")
    if plan.image is not None:
        lines.append(f"  image: {plan.image}")
    if plan.edits:
        lines.append("  pins:")
        lines += [f"    {e.file}:{e.line} {e.old} → {e.new}" for e in plan.edits]
        lines += [f"    ! {sentence}" for sentence in plan.tags_moved]
    lines += [f"  ⚠️ left behind: {sentence}" for sentence in plan.left_behind]
    if plan.title is not None:
        verb = {"create": "creates", "update": "updates"}.get(plan.proposal, plan.proposal)
        lines.append(f"  proposal: {verb} {plan.branch}: {plan.title}")
    elif plan.proposal == "close":
        lines.append(f"  proposal: closes {plan.branch} (the base already pins the head)")
    elif plan.proposal == "keep":
        lines.append(f"  proposal: keeps {plan.branch} as it is (it proposes the head already)")
    elif plan.proposal == "leave alone":
        lines.append(f"  proposal: leaves {plan.branch} alone (a human wrote to it)")
    if plan.waits:
        lines.append(f"  waits: {plan.waits}")
    unknown = _unknown(plan)
    if unknown:
        lines.append(f"  known after the build: {unknown}")
    if plan.consumer_platform:
        lines.append(f"  consuming image: {plan.consumer_platform}")
    if plan.after_build:
        lines.append(f"  {plan.after_build}")
    lines += [f"  refused: {why}" for why in plan.refusals]
    lines += [f"  - {message}" for message in component.messages]
    return lines


def _pinned(plan: ComponentPlan) -> list[str]:
    pinned = plan.pinned
    if pinned.reference is None:
        return [f"  pinned: {pinned.why}"]
    found = [f"  pinned: {pinned.reference}"]
    if pinned.version is not None:
        commit = f", built from {pinned.commit[:8]}" if pinned.commit else ""
        found.append(f"    its wheel {pinned.version}{commit}")
    if pinned.why:
        found.append(f"    {pinned.why}")
    return found


def _unknown(plan: ComponentPlan) -> str:
    """The placeholders the plan could not fill, each with what fills it."""
    said = " ".join([plan.image or "", plan.title or "", *(e.new for e in plan.edits)])
    names = sorted(set(_PLACEHOLDER.findall(said)))
    meaning = {DIGEST: "the image's digest, once published", SHA256: "the wheel's sha256"}
    return ", ".join(f"{name} ({meaning.get(name, _FROM_VERSION)})" for name in names)

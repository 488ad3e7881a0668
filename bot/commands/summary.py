"""A pass in Markdown, for the summary of a GitHub Actions run: what `reconcile --summary FILE`
appends to FILE (the action gives `$GITHUB_STEP_SUMMARY`, which GitHub renders on the
run's page: docs "Workflow commands for GitHub Actions", adding a job summary)."""

from __future__ import annotations

from pathlib import Path

from ..core.decide.plan import Report, Wait
from ..loop.results import ComponentResult, PassResult
from .plantext import component_plan

_ICONS = {"nothing": "✅", "done": "✅", "planned": "📝", "waiting": "⏳", "left-alone": "✋", "failed": "❌"}


def _cell(text: str | None) -> str:
    return (text or "–").replace("|", "\\|").replace("\n", " ")


def _code(text: str | None, length: int = 0) -> str:
    return f"`{text[:length] if length else text}`" if text else "–"


def _row(component: ComponentResult) -> str:
    status = component.status.value
    return (
        f"| {component.name} | {_ICONS.get(status, '')} {status} | {_code(component.head, 8)} | "
        f"{_code(component.pinned, 8)} | {_cell(component.image)} | {_cell(component.proposal)} |"
    )


def pass_markdown(result: PassResult, *, where: str) -> str:
    lines = [
        f"### wheelpin: {'the plan' if result.dry_run else 'a pass'} on `{where}`",
        "",
        "| component | status | upstream head | pinned | image | proposal |",
        "|---|---|---|---|---|---|",
    ]
    lines += [_row(component) for component in result.components]
    for component in result.components:
        # a pass's report or wait is its message, said below
        actions = [a for a in component.actions if result.dry_run or not isinstance(a, (Report, Wait))]
        said = (
            [f"- {'would ' if result.dry_run else ''}{component.action_said(a)}" for a in actions]
            + [f"- {message}" for message in component.messages]
            + [f"- ⚠️ **{note}**" for note in component.notes]
            + [f"- {problem}" for problem in component.problems]
            + ([f"- {component.retry}"] if component.retry else [])
        )
        if result.dry_run and component.plan is not None:  # docs/dry-run.md
            said += ["", "```text", *component_plan(component), "```"]
        if said:
            lines += [
                "",
                f"<details{' open' if component.status.value == 'failed' else ''}><summary>{component.name}</summary>",
                "",
                *said,
                "",
                "</details>",
            ]
    if result.requests:
        lines += [
            "",
            "Requests: "
            + ", ".join(f"{name.replace('_', ' ')} {count}" for name, count in sorted(result.requests.items())),
        ]
    return "\n".join(lines) + "\n"


def append_summary(path: Path, result: PassResult, *, where: str) -> None:
    """Append the pass to `path` (several steps share one summary file)."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(pass_markdown(result, where=where) + "\n")

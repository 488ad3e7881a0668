"""A component's verify rules (docs/design.md §1.3), from its config and the built commit,
and the refusal a person reads when wheels break them: one line, grouped by kind, the
root cause first, cut to SUMMARY_LIMIT characters with every problem kept for `--json`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.model import Component
from .api import CHECKS, KINDS, LABELS
from .base import WheelCheck
from .name import NameCheck
from .rules import WheelRules, checked_problems
from .wheelset import python_tags_of

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    from ..wheel.report import WheelReport


def component_rules(component: Component, *, commit: str | None) -> WheelRules:
    return WheelRules.from_config(component.wheel, commit=commit)


SUMMARY_LIMIT = 600


@dataclass(frozen=True)
class Problem:
    kind: str  # one of checks.KINDS (checks/api.py)
    text: str
    file: str | None = None  # the wheel it is about; None for the set
    head: str = ""  # a library an ELF needs: "x.so needs" …
    item: str = ""  # … this library (several are said in one sentence)

    def __str__(self) -> str:
        return f"{self.file}: {self.text}" if self.file else self.text


def check_wheels(component: Component | None, reports: Sequence[WheelReport], rules: WheelRules) -> list[Problem]:
    """Every problem of every wheel and, for a component's wheels, of the set as `rules` asks it
    (component_rules: its python_tags), the root cause first."""
    return [problem for _, problem in checked_wheels(component, reports, rules)]


def checked_wheels(
    component: Component | None, reports: Sequence[WheelReport], rules: WheelRules
) -> list[tuple[WheelCheck[Any] | None, Problem]]:
    """`check_wheels`, each problem with the check (the rule) that found it; None for an
    archive's own integrity."""
    found: list[tuple[WheelCheck[Any] | None, Problem]] = (
        []
        if component is None
        else [
            (check, Problem(check.kind, text))
            for check in CHECKS.values()
            for text in check.check_set(reports, rules.of(check))
        ]
    )
    for report in reports:
        found += [
            (
                check,
                Problem(
                    finding.kind,
                    _explained(finding.kind, finding.text, report, rules),
                    report.filename,
                    finding.head,
                    finding.item,
                ),
            )
            for check, finding in checked_problems(report, rules)
        ]
    return sorted(found, key=lambda pair: KINDS.index(pair[1].kind))


_NAME = NameCheck()


def _explained(kind: str, text: str, report: WheelReport, rules: WheelRules) -> str:
    """A wrong distribution that is the non-ROCm variant of the right one says so: it is
    why every CUDA library and missing arch after it is there."""
    expected = rules.of(_NAME) or ""
    if kind == "name" and "rocm" in expected.lower() and "rocm" not in report.name.lower():
        return (
            f"distribution is {report.name!r}, expected {expected!r}: a build of the non-ROCm variant "
            "(its ROCm switch, such as HIP_BUILD or USE_ROCM, was not set)"
        )
    return text


def verify_wheels(component: Component | None, reports: Sequence[WheelReport], rules: WheelRules) -> list[str]:
    """Every problem of every wheel, prefixed by its file name, and of the set."""
    return [str(problem) for problem in check_wheels(component, reports, rules)]


def summary(problems: Sequence[Problem], *, wheels: int, limit: int = SUMMARY_LIMIT) -> str:
    """One line a person reads: by kind in KINDS order, each sentence once with the
    wheels it is about, cut to `limit` characters saying how many problems there are."""
    by_kind: dict[str, dict[str, list[str | None]]] = {}
    for problem in _joined(problems):
        by_kind.setdefault(problem.kind, {}).setdefault(problem.text, []).append(problem.file)
    parts = []
    for kind, sentences in by_kind.items():
        said = [text + _where(files, wheels) for text, files in sentences.items()]
        label = LABELS.get(kind, kind)
        parts.append((f"{label}: " if label else "") + "; ".join(said))
    line = " · ".join(parts)
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    if len(line) <= limit:
        return line if len(problems) < 4 else f"{line} ({count})"
    end = f" … ({count} in all; --json lists every one)"
    return line[: limit - len(end)].rstrip(" ;·:") + end


_PLURALS = {"cuda": "CUDA libraries", "libraries": "forbidden libraries"}


def _joined(problems: Sequence[Problem]) -> list[Problem]:
    """The libraries one ELF of one wheel needs against the rules, said in one sentence:
    "x.so needs A, B, C (CUDA libraries)"."""
    items: dict[tuple[str, str, str | None], list[Problem]] = {}
    for problem in problems:
        if problem.head:
            items.setdefault((problem.kind, problem.head, problem.file), []).append(problem)
    joined: list[Problem] = []
    for problem in problems:
        group = items.get((problem.kind, problem.head, problem.file)) if problem.head else None
        if group is None or len(group) == 1:
            joined.append(problem)
        elif problem is group[0]:
            libraries = ", ".join(p.item for p in group)
            joined.append(
                Problem(
                    problem.kind,
                    f"{problem.head} {libraries} ({_PLURALS.get(problem.kind, problem.kind)})",
                    problem.file,
                )
            )
    return joined


def _where(files: Sequence[str | None], wheels: int) -> str:
    named = sorted({file for file in files if file})
    if wheels <= 1 or not named:
        return ""
    if len(named) == wheels:
        return " (every wheel)"
    tags = sorted({row for name in named for row in _rows_of(name)})
    return f" (in {', '.join(tags) or ', '.join(named)})"


def _rows_of(filename: str) -> list[str]:
    """The python tags of a wheel, each with its variant label where it has one (`cp312
    (variant amd_gfx942)`): the variant wheels of one tag are told apart by it."""
    from ..wheel.metadata import split_variant_label

    label = split_variant_label(filename)[1]
    return [tag if label is None else f"{tag} (variant {label})" for tag in python_tags_of(filename)]

"""What a wheel must be, one rule per check of `api.CHECKS`, and every rule a wheel breaks.

`problems(report, rules)` is pure: each broken rule is one sentence. The same rules serve
`wheel inspect` (from its flags), `image publish` and the reconciler (from a component's
config: core/checks/component.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .api import CHECKS
from .base import Finding, Given, WheelCheck

if TYPE_CHECKING:
    from ..config.model import Wheel
    from ..wheel.report import WheelReport

Rule = TypeVar("Rule")


class WheelRules:
    """One rule per check, by the check's name (`WheelRules(expect_name="lmcache",
    rocm=False)`); a check not named applies its default. Raises ValueError for a rule
    that cannot be, TypeError for a name no check has."""

    __slots__ = ("_rules",)

    def __init__(self, **rules: Any) -> None:
        unknown = sorted(set(rules) - set(CHECKS))
        if unknown:
            raise TypeError(f"no wheel check is named {', '.join(unknown)}")
        self._rules: dict[str, Any] = {
            name: check.accept(rules[name]) if name in rules else check.default for name, check in CHECKS.items()
        }

    @classmethod
    def from_flags(cls, given: Mapping[str, Given]) -> WheelRules:
        """The rules `wheel inspect`'s flags give (argparse's values, by check name)."""
        return cls(**{name: CHECKS[name].from_flag(value) for name, value in given.items()})

    @classmethod
    def from_config(cls, wheel: Wheel, *, commit: str | None) -> WheelRules:
        """The rules of a component's `[wheel]` table (config.Wheel), for a build of `commit`."""
        return cls(
            **{name: check.from_config(getattr(wheel, check.field), commit=commit) for name, check in CHECKS.items()}
        )

    def of(self, check: WheelCheck[Rule]) -> Rule:
        return cast(Rule, self._rules[check.name])

    def __getattr__(self, name: str) -> Any:
        """A rule by its check's name (`rules.allow_vendored_rocm`); `of` is the typed way."""
        if name.startswith("_"):  # _rules itself, before __init__ set it (copy, pickle)
            raise AttributeError(name)
        try:
            return self._rules[name]
        except KeyError:
            raise AttributeError(name) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WheelRules) and self._rules == other._rules

    def __hash__(self) -> int:
        return hash(tuple(self._rules.items()))

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={rule!r}" for name, rule in self._rules.items() if rule != CHECKS[name].default)
        return f"WheelRules({given})"


def kinded_problems(report: WheelReport, rules: WheelRules) -> list[Finding]:
    """Every rule the wheel breaks, kinds from api.KINDS, in the order the checks run. A
    library an ELF needs is said once, by the first check that names it (libcudart is a
    CUDA library, and not also a forbidden one for a forbid_needed that lists it)."""
    return [finding for _, finding in checked_problems(report, rules)]


def checked_problems(report: WheelReport, rules: WheelRules) -> list[tuple[WheelCheck[Any] | None, Finding]]:
    """`kinded_problems`, each with the check that found it (None for the archive's own
    integrity, which no rule asks): which rule a wheel breaks, for a caller that weighs
    rules apart (`config validate --online`)."""
    found: list[tuple[WheelCheck[Any] | None, Finding]] = [
        (None, Finding("integrity", text)) for text in report.integrity
    ]
    said: set[tuple[str, str]] = set()
    for check in CHECKS.values():
        for finding in check.check(report, rules.of(check)):
            if finding.item and (finding.head, finding.item) in said:
                continue
            said.add((finding.head, finding.item))
            found.append((check, finding))
    return found


def problems(report: WheelReport, rules: WheelRules) -> list[str]:
    """Every rule the wheel breaks, one sentence each; empty when it passes."""
    return [finding.text for finding in kinded_problems(report, rules)]

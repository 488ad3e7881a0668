"""What every wheel check is: one rule a wheel must pass before it is published
(docs/design.md §1.3), declared once with the kind its problems are filed under, the label
a refusal says them with, the `[wheel]` config field it reads, the `wheel inspect` flag it
is given by, and the Verification lines a proposal says it passed with. Pure.

`api.CHECKS` lists them; `rules.WheelRules` holds one rule value per check; the CLI, the
config reading and the proposal are derived from these declarations.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    import argparse

    from ..wheel.amdgpu import TargetId
    from ..wheel.report import WheelReport

Rule = TypeVar("Rule")

# What argparse hands over for a flag: a switch's presence, a repeatable flag's values, a
# single flag's value (None when not given).
Given = bool | list[str] | str | None


class Finding(NamedTuple):
    """One broken rule: its kind (api.KINDS), its sentence, and for a library an ELF needs,
    what the sentence says it of (`head`, "x.so needs") and the library (`item`), so that
    several libraries of one ELF can be said in one sentence."""

    kind: str
    text: str
    head: str = ""
    item: str = ""


class Flag(NamedTuple):
    """How `wheel inspect` is given a check's rule: `--option VALUE` (repeatable or not), or
    a switch (`metavar` None) whose presence is the value."""

    option: str
    help: str
    metavar: str | None = None
    repeatable: bool = False

    def add_to(self, parser: argparse.ArgumentParser, dest: str) -> None:
        if self.metavar is None:
            parser.add_argument(self.option, dest=dest, action="store_true", help=self.help)
        elif self.repeatable:
            parser.add_argument(
                self.option, dest=dest, action="append", default=[], metavar=self.metavar, help=self.help
            )
        else:
            parser.add_argument(self.option, dest=dest, metavar=self.metavar, help=self.help)


class WheelCheck(ABC, Generic[Rule]):
    """One rule of the verify step. A rule given in Python passes through `accept`, which
    raises ValueError, in one sentence, for a rule that cannot be."""

    name: str  # its key in api.CHECKS, and its keyword in WheelRules
    kind: str  # what its problems are filed under in refusals and --json
    label: str  # the words a refusal's summary says its kind with
    field: str  # the field of config.Wheel it reads
    flag: Flag | None  # None only for a rule about several wheels (wheel inspect reads one)
    default: Rule  # the rule when none is given (WheelRules(), wheel inspect without its flag)
    # Whether a wheel breaks it by what its ELF files lack (code for an arch, a library
    # needed): a wheel whose ELF files are not known (an image an older wheelpin published
    # records none of their facts) cannot be judged by it, where the others can
    wants_elf: bool = False

    def accept(self, value: Any) -> Rule:
        """The rule `value` is, checked; ValueError when it cannot be one."""
        return value  # type: ignore[no-any-return]

    def from_flag(self, given: Given) -> Rule:
        """The rule its `wheel inspect` flag gives (argparse's value of it)."""
        return self.accept(tuple(given) if isinstance(given, list) else given)

    def from_config(self, value: Any, *, commit: str | None) -> Rule:
        """The rule its config field's (already validated) value gives, for a build of
        `commit` (None when none is known)."""
        return self.accept(tuple(value) if isinstance(value, list) else value)

    @abstractmethod
    def check(self, report: WheelReport, rule: Rule) -> list[Finding]:
        """Every way the wheel breaks the rule, of this check's kind; empty when it passes."""

    def check_set(self, reports: Sequence[WheelReport], rule: Rule) -> list[str]:
        """Every way the wheels of one component, together, break the rule."""
        return []

    def passed(self, rule: Rule) -> list[str]:
        """What a proposal's Verification section says every wheel passed, one line each."""
        return []

    def found(self, texts: Sequence[str]) -> list[Finding]:
        return [Finding(self.kind, text) for text in texts]

    def needing(self, report: WheelReport, patterns: Sequence[str], what: str) -> list[Finding]:
        """Every library an ELF of the wheel needs (DT_NEEDED) that matches one of the
        fnmatch `patterns`, said as "x.so needs lib, a <what> library (pattern)"."""
        import fnmatch

        found: list[Finding] = []
        for elf in report.elf:
            for library in elf.needed:
                hit = next((pattern for pattern in patterns if fnmatch.fnmatchcase(library, pattern)), None)
                if hit is not None:
                    found.append(
                        Finding(
                            self.kind,
                            f"{elf.path} needs {library}, {what} library ({hit})",
                            head=f"{elf.path} needs",
                            item=library,
                        )
                    )
        return found


class TargetsCheck(WheelCheck["tuple[TargetId, ...]"]):  # quoted: amdgpu loads when a check runs
    """A check whose rule is a list of GPU targets (`--require-arch`, `--want-arch`): a flag's
    names must be targets wheelpin knows; a config's were checked when it was read."""

    default = ()

    def accept(self, value: Any) -> tuple[TargetId, ...]:
        return tuple(value)

    def from_flag(self, given: Given) -> tuple[TargetId, ...]:
        from ..wheel.amdgpu import TargetId

        return tuple(TargetId.parse_known(arch) for arch in (given if isinstance(given, list) else ()))

    def from_config(self, value: Any, *, commit: str | None) -> tuple[TargetId, ...]:
        from ..wheel.amdgpu import TargetId

        return tuple(TargetId.parse(arch) for arch in value)

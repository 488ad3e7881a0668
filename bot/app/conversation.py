"""What the service says to a downstream repository's people, and hears from them: the
`Conversation` Protocol a forge implements (adapters/github/conversation.py for GitHub),
the pull request a command acts on, and the dashboard's rows. The service's contract with
a forge, as adapters/platform.py is the loop's: it imports core alone, so a forge's
package may name it (tests/test_layout.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..core.errors import ConfigError


class IssuesDisabled(ConfigError):
    """The repository has its issues turned off: no dashboard there."""


@dataclass(frozen=True)
class PullTarget:
    """What a `/wheelpin` command on a pull request acts on."""

    branch: str  # its head branch
    open: bool
    commit: str | None  # the upstream commit its marker proposes


@dataclass(frozen=True)
class Row:
    """One component on the dashboard, as the service last saw it."""

    component: str
    pinned: str | None = None  # the upstream commit the base pins
    head: str | None = None  # the upstream head
    build: str = ""
    image: str | None = None
    proposal: str | None = None  # the pull request's address, or the branch
    status: str = "not checked yet"
    last_error: str | None = None
    last_error_at: float | None = None
    notes: tuple[str, ...] = ()  # from the proposal of `head` (a wanted arch skipped)


class Conversation(Protocol):
    """One repository's people, on its forge: who may command the bot, reactions and
    replies to a command, the bot's open proposals, and the one dashboard."""

    def permission_of(self, user: str) -> str: ...

    def react(self, comment: int, content: str) -> None: ...

    def pull_target(self, number: int) -> PullTarget | None: ...

    def say_once(self, branch: str, *, key: str, text: str) -> None: ...

    def comment(self, number: int, text: str, *, key: str | None, answering: int | None = None) -> None:
        """A reply on issue `number`, made once per `key` (the job making it may run again;
        None: made without looking), looked for among the comments since `answering`, the
        comment it answers."""
        ...

    def open_proposals(self) -> dict[str, str]: ...

    def dashboard_text(self, rows: list[Row], *, repository: str, config_error: str | None) -> str:
        """The dashboard's text in the forge's markup; it changes only when a row does."""
        ...

    def keep_dashboard(self, text: str, *, known: int | None = None) -> int:
        """The one dashboard issue (`known`: its number from before) brought to `text`;
        returns its number. IssuesDisabled, RuleRefused or PermissionRefused: none there."""
        ...

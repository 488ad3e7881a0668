"""The error hierarchy of wheelpin (docs/design.md §2) and the exit code each one maps to.

Every failure a user can meet is one of these, carrying one clear sentence that names
the file or reference at fault. The command line prints that sentence and exits with
the class's code; the loop decides from the class whether to retry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class WheelpinError(Exception):
    """Base of every error wheelpin reports on purpose."""

    exit_code: int = 1
    # a problem of the config or of what it names in the repository (a pin that cannot be
    # read), which `config validate` finds with every other: a command stopping at one says so
    validate_finds: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(WheelpinError):
    """The user must fix something: an argument, a file, a credential. Never retried."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file is wrong."""


class InputError(UsageError):
    """An input file cannot be read as what it claims to be (a wheel, an ELF, a bundle)."""


class CredentialsError(UsageError):
    """Credentials are missing or refused."""


class PermissionRefused(CredentialsError):
    """The credentials work, but lack a permission the action needs (a GitHub App without
    `workflows`, a token without write access). Never retried: someone must grant it."""


class VerificationError(WheelpinError):
    """An artifact was read but is wrong: nothing may be published or proposed from it.
    `message` is one readable line; `problems` lists every problem found."""

    exit_code = 1

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class RefusedError(WheelpinError):
    """A guard said no (a tag holding other content, a branch a human pushed to)."""

    exit_code = 3


class RuleRefused(RefusedError):
    """GitHub refused a write by a rule of the repository (a ruleset, branch protection,
    signed commits): the same write is refused until someone changes the rule."""


class BuildFailed(WheelpinError):
    """A build ran and failed, or left no wheel: recorded against its commit, which backs
    off before it is built again. `recorded` is the line kept in the state file."""

    def __init__(self, message: str, *, recorded: str | None = None) -> None:
        super().__init__(message)
        self.recorded = recorded or message


class NotFound(VerificationError):
    """A registry answered 404 for a manifest that was named (a digest deleted, a tag never
    pushed): read, and not there, which no retry changes."""


class TransientError(WheelpinError):
    """An outside system failed in a way that may pass: retry with backoff. `attempts` and
    `seconds` say how hard the adapter tried (its retries included); `doing` is what the
    loop was doing when it failed, said once before the adapter's sentence."""

    exit_code = 4

    def __init__(
        self, message: str, *, retry_after: float | None = None, attempts: int = 1, seconds: float = 0.0
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.attempts = attempts
        self.seconds = seconds
        self.doing: str | None = None

    def while_doing(self, doing: str) -> TransientError:
        """This failure, its sentence led by what it stopped ("reading the image pinned at
        docker/Dockerfile:3 (to compare its wheels): …"); said by the outermost caller
        only, as an inner one knows less of why."""
        if self.doing is None:
            self.doing = doing
            self.message = f"{doing}: {self.message}"
            self.args = (self.message,)
        return self


@contextmanager
def doing(what: str) -> Iterator[None]:
    """An outside failure inside says `what` was being done when it happened."""
    try:
        yield
    except TransientError as exc:
        raise exc.while_doing(what) from exc


def tries(attempts: int, seconds: float) -> str:
    """How hard an adapter tried: "1 try", "4 tries in 8 s", "5 tries in 0.8 s"."""
    if attempts <= 1:
        return "1 try"
    return f"{attempts} tries in {seconds:.1f} s" if seconds < 10 else f"{attempts} tries in {seconds:.0f} s"


def kind_of(error: WheelpinError) -> str:
    """A short name for the kind of an error, for metrics and dashboards."""
    for cls, name in (
        (PermissionRefused, "permission"),
        (CredentialsError, "credentials"),
        (ConfigError, "config"),
        (InputError, "input"),
        (UsageError, "usage"),
        (VerificationError, "verification"),
        (RefusedError, "refused"),
        (TransientError, "transient"),
    ):
        if isinstance(error, cls):
            return name
    return "failed"

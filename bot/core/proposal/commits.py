"""What makes a branch and a commit the bot's (docs/design.md §3 "Pull request"): the one
policy both platforms (`adapters/localplatform.py`, `adapters/github/platform.py`) call.
The bot writes only branches under its prefix; its commits carry the state marker of
`core/proposal/marker.py` and, when the config asks, a Signed-off-by line. Pure."""

from __future__ import annotations

from ..config.model import Author
from ..errors import RefusedError
from .marker import MARKER_START


def check_bot_branch(branch: str, prefix: str) -> None:
    """RefusedError unless `branch` is a plain branch name under the bot's prefix."""
    if not branch.startswith(prefix) or branch.startswith("refs/"):
        raise RefusedError(f"wheelpin writes only branches under {prefix}, not {branch}")


def signed_off(message: str, author: Author) -> str:
    """The message with the DCO's Signed-off-by line of `author`."""
    return f"{message.rstrip()}\n\nSigned-off-by: {author.name} <{author.email}>\n"


def co_authored(message: str, author: Author) -> str:
    """The message with a Co-authored-by trailer of `author`: the configured identity kept
    on a commit GitHub signs, which must name no author of its own (docs "Creating a commit
    with multiple authors"; "About commit signature verification", signature verification
    for bots). Trailers go last, after any Signed-off-by, in one block."""
    trailer = f"Co-authored-by: {author.name} <{author.email}>"
    body = message.rstrip()
    last = body.rsplit("\n\n", 1)[-1]
    if trailer in last.splitlines():
        return f"{body}\n"
    joined = "\n" if last.startswith("Signed-off-by:") else "\n\n"
    return f"{body}{joined}{trailer}\n"


def carries_marker(message: str) -> bool:
    """The message holds a proposal's state marker: one condition of a commit being the bot's."""
    return MARKER_START in message

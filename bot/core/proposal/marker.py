"""The hidden state marker of a proposal and of the bot's commits, `<!-- wheelpin: {...} -->`:
written last into a proposal's body (core/proposal/text.py) and a commit's message, read back
by every pass to know what it proposed before (loop/observe.py, the platforms). Kept apart
from the proposal's wording, which a pass that proposes nothing never loads."""

from __future__ import annotations

import json
import re
from typing import Any

MARKER_START = "<!-- wheelpin: "
MARKER = re.compile(re.escape(MARKER_START) + r"(\{.*?\}) -->", re.S)


def marker(state: dict[str, Any]) -> str:
    return f"{MARKER_START}{json.dumps(state, sort_keys=True, separators=(',', ':'))} -->"


def read_marker(text: str) -> dict[str, Any] | None:
    matches = list(MARKER.finditer(text))  # the bot's own marker comes last (commit
    if not matches:  # subjects above it may hold lookalikes)
        return None
    match = matches[-1]
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

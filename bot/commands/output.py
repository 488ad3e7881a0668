"""How every command prints: one JSON document with `--json`, human text otherwise."""

from __future__ import annotations

import json
import sys
from typing import Any

# Whether this process printed its JSON document: after it, an error is said on stderr alone,
# so stdout stays one document (bot/cli.py's _failed).
emitted = False


def emit_json(document: Any, *, compact: bool = False) -> None:
    """One JSON document; `compact` puts it on one line (JSON Lines, for loops)."""
    global emitted
    emitted = True
    json.dump(document, sys.stdout, indent=None if compact else 2, sort_keys=False)
    sys.stdout.write("\n")
    sys.stdout.flush()


def emit_text(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")

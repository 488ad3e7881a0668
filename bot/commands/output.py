"""How every command prints: one JSON document with `--json`, human text otherwise."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit_json(document: Any, *, compact: bool = False) -> None:
    """One JSON document; `compact` puts it on one line (JSON Lines, for loops)."""
    json.dump(document, sys.stdout, indent=None if compact else 2, sort_keys=False)
    sys.stdout.write("\n")
    sys.stdout.flush()


def emit_text(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"

"""`wheelpin config validate [FILE]` and `wheelpin config schema`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.config import Config
from ..core.configfile import ConfigInvalid
from .output import emit_json, emit_text
from .repo import load


def validate_command(*, file: Path | None, repo: Path | None, as_json: bool) -> int:
    try:
        loaded = load(config=file, repo=repo)
    except ConfigInvalid as exc:
        if as_json:
            emit_json({"file": str(exc.path), "valid": False, "problems": exc.problems})
        else:
            for problem in exc.problems:
                sys.stderr.write(f"{problem}\n")
            sys.stderr.write(f"wheelpin: {exc.path}: {len(exc.problems)} problem(s)\n")
        return 2
    names = [component.name for component in loaded.config.components]
    if as_json:
        emit_json({"file": str(loaded.path), "valid": True, "root": str(loaded.root),
                   "components": names, "problems": []})
    else:
        emit_text(f"{loaded.path}: valid, {len(names)} component(s): {', '.join(names)}")
    return 0


def schema_command() -> int:
    emit_text(json.dumps(Config.model_json_schema(), indent=2))
    return 0

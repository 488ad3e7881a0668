"""`wheelpin config validate [FILE]` and `wheelpin config schema`."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

from ..core.config import Config
from ..core.configfile import ConfigInvalid, LoadedConfig
from ..core.workflowfile import MAX_WORKFLOW_BYTES, components_warnings
from .output import emit_json, emit_text
from .repo import load


def validate_command(*, file: Path | None, repo: Path | None, as_json: bool) -> int:
    try:
        loaded = load(config=file, repo=repo)
    except ConfigInvalid as exc:
        if as_json:
            emit_json({"file": str(exc.path), "valid": False, "problems": exc.problems, "warnings": []})
        else:
            for problem in exc.problems:
                sys.stderr.write(f"{problem}\n")
            sys.stderr.write(f"wheelpin: {exc.path}: {len(exc.problems)} problem(s)\n")
        return 2
    names = [component.name for component in loaded.config.components]
    warnings = workflow_warnings(loaded)
    if as_json:
        emit_json({"file": str(loaded.path), "valid": True, "root": str(loaded.root),
                   "components": names, "problems": [], "warnings": warnings})
    else:
        for warning in warnings:
            sys.stderr.write(f"warning: {warning}\n")
        emit_text(f"{loaded.path}: valid, {len(names)} component(s): {', '.join(names)}")
    return 0


def workflow_warnings(loaded: LoadedConfig) -> list[str]:
    """What the workflows the components dispatch lack (a run-name carrying the commit, the
    inputs given), read from `.github/workflows/` of the config's repository; each
    sentence names its component."""
    found = components_warnings(loaded.config.components, lambda path: read_bounded(loaded.root, path),
                                where=str(loaded.root))
    return [f"component {names[0]}: {warning}" if len(names) == 1 else f"components {warning}"
            for names, warning in found]


def read_bounded(root: Path, path: str) -> str | None:
    """A file of the checkout at `root`, None if there is none. Past MAX_WORKFLOW_BYTES
    only that much is read (enough for the workflow check to refuse it)."""
    target = root / path
    if not target.exists():
        return None
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    if not target.is_file():  # a FIFO or a device would block or never end
        raise OSError(errno.EINVAL, "not a regular file", str(target))
    with target.open("rb") as stream:
        data = stream.read(MAX_WORKFLOW_BYTES + 1)
    if len(data) > MAX_WORKFLOW_BYTES:
        return data.decode("utf-8", errors="replace")  # only its size matters now
    return data.decode("utf-8")


def schema_command() -> int:
    from ..core.config import json_schema

    emit_text(json.dumps(json_schema(), indent=2))
    return 0

"""Finding the repository and its config for the commands that work on one."""

from __future__ import annotations

from pathlib import Path

from ..adapters.configdisk import find_config, load_config, root_for
from ..core.configfile import LoadedConfig
from ..core.errors import UsageError


def load(*, config: Path | None, repo: Path | None, check_files: bool = True) -> LoadedConfig:
    if repo is not None and not repo.is_dir():
        raise UsageError(f"{repo}: no such repository folder")
    path = find_config(repo or Path.cwd(), config)
    return load_config(path, root=root_for(path, repo) if config else (repo or Path.cwd()),
                       check_files=check_files)

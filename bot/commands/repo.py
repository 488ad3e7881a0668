"""Finding the repository and its config for the commands that work on one."""

from __future__ import annotations

from pathlib import Path

from ..adapters.configdisk import find_config, load_config, repository_root, root_for
from ..core.config.load import LoadedConfig
from ..core.errors import UsageError


def load(*, config: Path | None, repo: Path | None, check_files: bool = True) -> LoadedConfig:
    """The config of `repo` (else of the repository the working folder is in, found from
    any folder of it), or `config` itself."""
    if repo is not None and not repo.is_dir():
        raise UsageError(f"{repo}: no such repository folder")
    folder = repo or repository_root(Path.cwd())
    path = find_config(folder, config)
    return load_config(path, root=root_for(path, repo) if config else folder, check_files=check_files)

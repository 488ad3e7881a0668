"""A repository's config on disk (docs/design.md §3 "Config"): `--config FILE`, else the
first of `core.config.model.CONFIG_FILES` at the repository root; read with a size cap, then
loaded by `core/config/load.py` with the checks that need the repository's files."""

from __future__ import annotations

from pathlib import Path

from ..core.config.load import MAX_CONFIG, LoadedConfig, load_config_text
from ..core.config.model import CONFIG_FILES, escape_problem
from ..core.errors import ConfigError


def find_config(root: Path, explicit: Path | None = None) -> Path:
    if explicit is not None:
        if explicit.is_dir():
            raise ConfigError(f"{explicit} is a directory, not a config file")
        if not explicit.is_file():
            raise ConfigError(f"{explicit}: no such config file")
        return explicit
    for candidate in CONFIG_FILES:
        if (root / candidate).is_file():
            return root / candidate
    raise ConfigError(f"{root}: no config found (looked for {' and '.join(CONFIG_FILES)}; or pass --config FILE)")


def repository_root(start: Path) -> Path:
    """The repository a command run in `start` works on, as git finds its own: in a git
    checkout, the nearest of `start` and the folders above it, up to the checkout's top (a
    folder with `.git`), that holds a config; `start` itself otherwise (outside a checkout
    nothing above is looked at, and "no config found" names `start`)."""
    folders = [start, *start.absolute().parents]
    top = next((index for index, folder in enumerate(folders) if (folder / ".git").exists()), None)
    if top is None:
        return start
    return next(
        (folder for folder in folders[: top + 1] if any((folder / candidate).is_file() for candidate in CONFIG_FILES)),
        start,
    )


def root_for(path: Path, repo: Path | None) -> Path:
    """The repository a config belongs to: --repo, else above `.github/`, else its folder."""
    if repo is not None:
        return repo
    folder = path.resolve().parent
    return folder.parent if folder.name == ".github" else folder


def read_config_text(path: Path) -> str:
    """A config file's text, at most MAX_CONFIG bytes of UTF-8, else one ConfigError."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG:
        raise ConfigError(f"{path}: the config is over {MAX_CONFIG} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the config is not UTF-8 text (byte {exc.start})") from None


def load_config(path: Path, *, root: Path, check_files: bool = True) -> LoadedConfig:
    """Parse and validate a config file; ConfigInvalid listing every problem with its line."""
    text = read_config_text(path)
    if not check_files:
        return load_config_text(text, path=path, root=root, exists=None)
    return load_text_at(text, path=path, root=root)


def load_text_at(text: str, *, path: Path, root: Path) -> LoadedConfig:
    """Config text as if it were the file `path` of the checkout `root` (`wheelpin init`
    checks what it will write so): every problem located in `path`, pin files looked up in `root`."""
    return load_config_text(
        text,
        path=path,
        root=root,
        exists=lambda file: (root / file).is_file(),
        directory=lambda file: (root / file).is_dir(),
        escapes=lambda file: escape_problem(root, file),
    )

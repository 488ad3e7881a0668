"""The mode a proposal writes a file with (both platforms): the one the base tree gives
it, so an executable pinned file stays executable; a new file is a regular one. A path
that is a symbolic link in the base, or that passes through one, is refused: writing the
new text there would replace the link (or, in git, become the link's target), not edit
the file it points to."""

from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import ConfigError

REGULAR = "100644"
EXECUTABLE = "100755"
SYMLINK = "120000"
FOLDER = "040000"
KEPT = frozenset({REGULAR, EXECUTABLE})


def folders_and_path(path: str) -> list[str]:
    """`a/b/c` → `a`, `a/b`, `a/b/c`: what must be looked up in the base tree."""
    parts = path.split("/")
    return ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]


def mode_to_write(path: str, base_modes: Mapping[str, str], *, base: str) -> str:
    """The mode of `path` in the new tree. `base_modes`: the mode, in the base tree, of
    `path` and of each folder above it (absent: not there)."""
    for above in folders_and_path(path):
        mode = base_modes.get(above)
        if mode is None:
            break
        if above != path and mode != FOLDER or above == path and mode not in KEPT:
            what = "a symbolic link" if mode == SYMLINK else "a submodule" if mode == "160000" else f"mode {mode}"
            raise ConfigError(
                f"{path} is not written: {above} is {what} at {base[:8]}, and wheelpin writes "
                "files only, never through a link (pin the file it points to)"
            )
    return base_modes.get(path) or REGULAR

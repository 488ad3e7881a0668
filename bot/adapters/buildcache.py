"""The build cache (docs/design.md §1.2): where every build kind leaves the wheels of a
commit (`builds/<component>/<commit>/out`), marked complete only once all are there, so a
build stopped halfway is never taken for a finished one; and, beside them, who made them
when it was not a build of wheelpin's (wheels a maintainer gave)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from . import cachebound

COMPLETE = ".complete"


def build_folder(cache: Path, component: str, commit: str) -> Path:
    """Where the build of `commit` is; asked for by the pass that uses it, which holds it
    from the cache's bound until it ends (adapters/cachebound.py)."""
    folder = cache / "builds" / component / commit
    bounded = cachebound.bounded(cache / "builds")
    if bounded is not None:
        bounded.use(folder)
    return folder


PROVENANCE = "provenance"  # beside `out/`: who made these wheels, when they are not a build of wheelpin's


def seed_build(cache: Path, component: str, commit: str, wheels: Sequence[Path], *, provenance: str) -> list[Path]:
    """Wheels built elsewhere, taken as the build of `commit`: copied into the build
    folder and marked complete only once all are there (a stop halfway leaves no build)."""
    folder = build_folder(cache, component, commit)
    out = folder / "out"
    discard_build(cache, component, commit)
    staging = folder / "out.partial"
    staging.mkdir(parents=True)
    for wheel in wheels:
        shutil.copyfile(wheel, staging / wheel.name)
    note_provenance(cache, component, commit, provenance)
    (staging / COMPLETE).write_text(commit + "\n")
    staging.rename(out)
    return sorted(out.glob("*.whl"))


def note_provenance(cache: Path, component: str, commit: str, provenance: str) -> None:
    """Say where the build of `commit` comes from, when it is not a build of wheelpin's."""
    folder = build_folder(cache, component, commit)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PROVENANCE).write_text(provenance + "\n")


def discard_build(cache: Path, component: str, commit: str) -> None:
    """Forget the wheels held as the build of `commit` (another build is to be taken)."""
    shutil.rmtree(build_folder(cache, component, commit), ignore_errors=True)


def build_provenance(cache: Path, component: str, commit: str) -> str | None:
    path = build_folder(cache, component, commit) / PROVENANCE
    return path.read_text().strip() if path.exists() else None


def built_wheels(cache: Path, component: str, commit: str) -> list[Path] | None:
    out = build_folder(cache, component, commit) / "out"
    if not (out / COMPLETE).exists():
        return None
    return sorted(out.glob("*.whl"))

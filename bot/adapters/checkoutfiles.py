"""Reading and writing files of a local checkout, several at once, all or nothing.

A pin path is resolved to the real file it reaches, which must lie inside the
repository: a symlinked file or folder leading out is refused (one sentence, nothing
written), at read time and again at write time (a symlink can appear in between). A
symlink that stays inside is followed, and names its target: two names of one file
(a symlink, or a hard link) are refused or folded into one, never edited twice.

Every new text is first written to a temporary file beside its real target (same folder,
so the rename stays on one file system), flushed, and given the target's mode. Then every
target is read again and compared with the text the edit was planned from: a file changed
meanwhile (a human edited it while a bump waited on the registry) is refused and nothing
is written. Only then are the temporaries renamed over the targets, each re-checked right
before its rename. If any step fails, the temporaries are removed and any target already
replaced is put back, so a failure leaves every file as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..core.config.model import Component, escape_problem
from ..core.errors import UsageError


def real_file(root: Path, file: str) -> Path:
    """The real path `file` reaches in `root`; UsageError if it leads out of the repository."""
    problem = escape_problem(root, file)
    if problem is not None:
        raise UsageError(f"{problem}; nothing changed")
    return (root.resolve() / file).resolve()


def canonical_component(component: Component, root: Path) -> Component:
    """`component` with each pin file named by the repository-relative real path it reaches,
    so two names of one file (a symlink inside the repository) read, plan and write as one.
    Two different paths of one file (hard links, a case-folding file system) are refused:
    rewriting one by rename would leave the other holding the old pin."""
    real_root = root.resolve()
    names: dict[str, str] = {}
    seen: dict[tuple[int, int], str] = {}
    for pin in component.pins:
        if pin.file in names:
            continue
        target = real_file(root, pin.file)
        relative = target.relative_to(real_root).as_posix()
        try:
            status = target.stat()
        except OSError:
            names[pin.file] = relative  # read_texts names the missing file
            continue
        first = seen.setdefault((status.st_dev, status.st_ino), relative)
        if first != relative:
            raise UsageError(
                f"{pin.file} and {first} are one file under two paths (a hard link?): "
                "name it once in the config; nothing changed"
            )
        names[pin.file] = relative
    pins = [pin.model_copy(update={"file": names[pin.file]}) for pin in component.pins]
    return component.model_copy(update={"pins": pins})


def read_texts(root: Path, files: list[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for file in files:
        path = real_file(root, file)
        try:
            texts[file] = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise UsageError(f"{root / file}: no such file") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"{root / file}: is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise UsageError(f"{root / file}: cannot read ({exc.strerror})") from None
    return texts


def _check_unchanged(root: Path, file: str, target: Path, original: bytes, expected: Mapping[str, str] | None) -> None:
    """Refuse `file` if its real path moved, or its bytes are no longer what the edit was
    planned from (`expected`, else what staging read)."""
    if real_file(root, file) != target:
        raise _Changed(
            f"{file}: its path now leads elsewhere (a symlink changed) while wheelpin "
            "was bumping it; nothing changed, run the bump again"
        )
    wanted = expected[file].encode("utf-8") if expected is not None and file in expected else original
    try:
        now = target.read_bytes()
    except OSError as exc:
        raise _Changed(f"{file}: cannot read it again ({exc.strerror}); nothing changed") from None
    if now != wanted:
        raise _Changed(
            f"{file} changed on disk while wheelpin was bumping it; nothing changed, run the bump again on the new text"
        )


class _Changed(UsageError):
    """A target is not what the edit was planned from."""


def write_texts_atomically(root: Path, texts: Mapping[str, str], expected: Mapping[str, str] | None = None) -> None:
    """Write every file or none; raise UsageError naming the file at fault. `expected`
    maps each file to the text its new text was planned from: a file that no longer holds
    it is refused (and so is every other file of the write)."""
    staged: list[tuple[str, Path, Path, bytes]] = []  # (file, real target, temporary, original)
    try:
        for file, text in texts.items():
            target = real_file(root, file)
            original = target.read_bytes()
            handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".wheelpin", dir=target.parent)
            temporary = Path(name)
            staged.append((file, target, temporary, original))
            with os.fdopen(handle, "wb") as stream:
                stream.write(text.encode("utf-8"))
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        for file, target, _temporary, original in staged:  # all verified before any is written
            _check_unchanged(root, file, target, original, expected)
    except UsageError:
        _discard(staged)
        raise
    except OSError as exc:
        _discard(staged)
        raise UsageError(f"{exc.filename or root}: cannot write ({exc.strerror}); nothing changed") from None
    replaced: list[tuple[Path, bytes]] = []
    try:
        for file, target, temporary, original in staged:
            _check_unchanged(root, file, target, original, expected)
            os.replace(temporary, target)
            replaced.append((target, original))
    except (OSError, UsageError) as exc:
        _discard(staged)
        for target, original in replaced:
            _restore(target, original)
        if isinstance(exc, UsageError):
            raise
        raise UsageError(f"{exc.filename or root}: cannot write ({exc.strerror}); nothing changed") from None


def _discard(staged: list[tuple[str, Path, Path, bytes]]) -> None:
    for _file, _target, temporary, _original in staged:
        temporary.unlink(missing_ok=True)


def _restore(target: Path, original: bytes) -> None:
    mode = target.stat().st_mode & 0o7777
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".wheelpin", dir=target.parent)
    with os.fdopen(handle, "wb") as stream:
        stream.write(original)
    os.chmod(name, mode)
    os.replace(name, target)

"""Reading and writing files of a local checkout, several at once, all or nothing.

Every new text is first written to a temporary file beside its target (same folder, so
the rename stays on one file system) and flushed; only then are they renamed over the
targets. If any step fails, the temporaries are removed and any target already replaced
is put back, so a failure leaves every file as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import UsageError


def read_texts(root: Path, files: list[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for file in files:
        try:
            texts[file] = (root / file).read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise UsageError(f"{root / file}: no such file") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"{root / file}: is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise UsageError(f"{root / file}: cannot read ({exc.strerror})") from None
    return texts


def write_texts_atomically(root: Path, texts: Mapping[str, str]) -> None:
    """Write every file or none; raise UsageError naming the file at fault."""
    staged: list[tuple[Path, Path, bytes]] = []  # (target, temporary, original bytes)
    try:
        for file, text in texts.items():
            target = root / file
            original = target.read_bytes()
            handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".wheelpin",
                                            dir=target.parent)
            temporary = Path(name)
            staged.append((target, temporary, original))
            with os.fdopen(handle, "wb") as stream:
                stream.write(text.encode("utf-8"))
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temporary, target.stat().st_mode & 0o7777)
    except OSError as exc:
        _discard(staged)
        raise UsageError(f"{exc.filename or root}: cannot write ({exc.strerror}); nothing changed") from None
    replaced: list[tuple[Path, bytes]] = []
    try:
        for target, temporary, original in staged:
            os.replace(temporary, target)
            replaced.append((target, original))
    except OSError as exc:
        _discard(staged)
        for target, original in replaced:
            _restore(target, original)
        raise UsageError(f"{exc.filename or root}: cannot write ({exc.strerror}); nothing changed") from None


def _discard(staged: list[tuple[Path, Path, bytes]]) -> None:
    for _target, temporary, _original in staged:
        temporary.unlink(missing_ok=True)


def _restore(target: Path, original: bytes) -> None:
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".wheelpin", dir=target.parent)
    with os.fdopen(handle, "wb") as stream:
        stream.write(original)
    os.replace(name, target)

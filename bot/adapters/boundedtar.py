"""A tar stream read with bounded memory whatever its headers say: the reader under
`adapters/layerstream.py` (a consuming image's layers, docs/design.md §1 step 5).

The standard library's `tarfile` reads an extended header's whole value into memory
before it hands over the member it describes, and in stream mode keeps every member's
header in `TarFile.members`. Here:

- a POSIX pax extended header ('x', 'g'; Solaris 'X') or a GNU long name or link record
  ('L', 'K') larger than `MAX_EXTENDED_HEADER` is refused from its 512-byte header, before
  its body is read (IEEE 1003.1 "pax Interchange Format": the header's size field gives
  the length of the records that follow);
- at most `MAX_EXTENDED_RUN` such headers in a row (each applies to the next header:
  `tarfile` reads a run of them by recursion, each one's body held until the member);
- GNU sparse members (old 'S' headers, whose extension blocks `tarfile` follows without
  bound, and pax sparse 1.0, whose map's length the data gives) are refused: no image
  tool writes them (Go's archive/tar, which docker, buildah and skopeo use, reads them
  but never writes them);
- `entries` yields the members one at a time and keeps none.

The hooks are `TarInfo._proc_member` and `_proc_gnusparse_10` (stable since Python 3.3);
tests/adapters/test_layer_hostile.py checks they are still there.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from typing import IO, Any

MAX_EXTENDED_HEADER = 64 << 10  # a path and a link target of PATH_MAX each, and room for xattrs
MAX_EXTENDED_RUN = 8  # pax + GNU long name + long link is the most a writer chains
_EXTENSIONS = frozenset(
    {tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK}
)


class TarRefused(Exception):
    """A header past a bound: its text is the end of a sentence naming the layer."""


class _Header(tarfile.TarInfo):
    def _proc_member(self, archive: Any) -> Any:
        if self.type in _EXTENSIONS:
            if self.size > MAX_EXTENDED_HEADER:
                raise TarRefused(
                    f"has an extended tar header of {self.size} bytes, more than the "
                    f"{MAX_EXTENDED_HEADER} wheelpin reads"
                )
            archive.extension_run += 1
            if archive.extension_run > MAX_EXTENDED_RUN:
                raise TarRefused(f"has more than {MAX_EXTENDED_RUN} extended tar headers in a row")
        else:
            archive.extension_run = 0
            if self.type == tarfile.GNUTYPE_SPARSE:
                raise TarRefused("has a GNU sparse entry, which no image tool writes")
        return super()._proc_member(archive)  # type: ignore[misc]

    def _proc_gnusparse_10(self, next: Any, pax_headers: Any, archive: Any) -> None:
        raise TarRefused("has a GNU sparse entry, which no image tool writes")


class _Archive(tarfile.TarFile):
    tarinfo = _Header
    extension_run = 0


def entries(stream: IO[bytes], *, bufsize: int) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    """Each member of the tar `stream` (read forward only), with the archive to extract it
    from; no member is kept once the next is read."""
    with _Archive.open(fileobj=stream, mode="r|", bufsize=bufsize) as archive:
        while (member := archive.next()) is not None:
            archive.members.clear()  # type: ignore[attr-defined]  # stream mode appends every header; none is read again
            yield archive, member

"""A bounded, seekable view of part of a binary file.

The ELF and offload-bundle readers of the verify step read through a `Window` so that
no offset or count in a file can make them read outside the part they were given
(a section, a bundle): every read past the end raises `OutOfBounds`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO


class OutOfBounds(ValueError):
    """A read asked for bytes past the end of the window."""


class Window:
    """Bytes `[start, start + size)` of a seekable binary file, addressed from 0."""

    def __init__(self, stream: BinaryIO, start: int, size: int) -> None:
        if start < 0 or size < 0:
            raise OutOfBounds(f"window at {start} of {size} bytes")
        self._stream = stream
        self.start = start
        self.size = size

    def read(self, offset: int, length: int) -> bytes:
        """Exactly `length` bytes at `offset`, or OutOfBounds."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise OutOfBounds(f"{length} bytes at offset {offset} run past the end ({self.size} bytes)")
        self._stream.seek(self.start + offset)
        data = self._stream.read(length)
        if len(data) != length:
            raise OutOfBounds(f"the file ends before offset {offset + length}")
        return data

    def sub(self, offset: int, length: int) -> Window:
        """The part `[offset, offset + length)` of this window, as a window."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise OutOfBounds(f"{length} bytes at offset {offset} run past the end ({self.size} bytes)")
        return Window(self._stream, self.start + offset, length)

    def chunks(self, offset: int = 0, *, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """The bytes from `offset` to the end, in chunks of at most `chunk_size`."""
        position = offset
        while position < self.size:
            length = min(chunk_size, self.size - position)
            yield self.read(position, length)
            position += length

    def first_nonzero(self, offset: int) -> int:
        """Offset of the first non-zero byte at or after `offset`, or `size` if none."""
        position = offset
        for chunk in self.chunks(offset, chunk_size=1 << 16):
            stripped = chunk.lstrip(b"\0")
            if stripped:
                return position + len(chunk) - len(stripped)
            position += len(chunk)
        return self.size

"""Sizes as a person reads them, one spelling wherever wheelpin says one: the proposal's
wheel table and notes, the consuming image's line, `image show`, `image publish` and
`wheel inspect`. Decimal units (kB, MB, GB), as registries and pip say them."""

from __future__ import annotations


def size_text(size: int) -> str:
    """`812 bytes`, `20.5 kB`, `104.9 MB`, `1.2 GB`."""
    if size >= 1e9:
        return f"{size / 1e9:.1f} GB"
    if size >= 1e6:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e3:.1f} kB" if size >= 1e3 else f"{size} bytes"

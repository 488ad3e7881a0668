"""The `pep440` versioning: versions as Python packages number them (PEP 440, read by
packaging.version), so `1.0.dev1 < 1.0a1 < 1.0rc1 < 1.0 < 1.0.post1`, `1.0` equals
`1.0.0`, and a leading `v` is allowed. A tag whose version is not PEP 440 (`0.5.10-rocm`)
is not a release under it. https://peps.python.org/pep-0440/
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from .base import Examples, Versioning


class Pep440(Versioning):
    name = "pep440"
    examples = Examples(
        ascending=("0.9", "1.0.dev1", "1.0a1", "1.0b2", "1.0rc1", "1.0", "1.0.post1", "1.1", "2026.1"),
        invalid=("0.5.10-rocm", "nightly", "1.2.x", "", "1.0+", "2026-01-05-abc"),
        prereleases=(("1.0rc1", "1.0"), ("2.0.0b2", "2.0.0"), ("0.5.dev3", "0.5")),
    )

    def is_valid(self, version: str) -> bool:
        try:
            Version(version)
        except InvalidVersion:
            return False
        return True

    def key(self, version: str) -> Version:
        return Version(version)

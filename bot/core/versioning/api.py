"""The versionings, by the name `upstream.versioning` gives (as Renovate's
lib/modules/versioning/api.ts maps names to modules). A new versioning is one module in
this folder and one line here (docs/config.md, "Add a versioning");
tests/core/versioning/test_versioning_contract.py holds each to the contract of base.Versioning.
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import Versioning
from .loose import Loose
from .pep440 import Pep440

VERSIONINGS: dict[str, Versioning] = {
    versioning.name: versioning
    for versioning in (
        Pep440(),
        Loose(),
    )
}


def versioning_of(name: str | None, versions: Iterable[str]) -> Versioning:
    """The versioning `name` names; with none named (`upstream.versioning` absent), PEP 440
    when every one of `versions` is a PEP 440 version, else loose: tags numbered as Python
    packages get PEP 440's pre-, post- and dev-release order, others their numbers
    compared as numbers."""
    if name is not None:
        return VERSIONINGS[name]
    pep440 = VERSIONINGS["pep440"]
    return pep440 if all(pep440.is_valid(version) for version in versions) else VERSIONINGS["loose"]

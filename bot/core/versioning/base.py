"""What every versioning is: the rule by which the versions that upstream release tags
carry (`tagversions.TagPattern` reads them out of the tags) are told valid and put in
order, so that following tags picks the newest release and never proposes an older one
over a newer pin (docs/design.md §1.1). Pure.

`api.VERSIONINGS` lists them by the name `upstream.versioning` gives;
tests/core/versioning/test_versioning_contract.py holds each to this contract, from its `examples`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple, Protocol


class Comparable(Protocol):
    """A sort key: keys of one versioning compare with each other (never across two)."""

    def __lt__(self, other: Any, /) -> bool: ...


class Examples(NamedTuple):
    """What a versioning promises, said by example (the contract test checks each)."""

    ascending: tuple[str, ...]  # valid versions, each strictly older than the next
    invalid: tuple[str, ...]  # versions it refuses: a tag carrying one is never followed
    prereleases: tuple[tuple[str, str], ...]  # (a pre-release, the release it comes before)


class Versioning(ABC):
    """One rule for release versions: which strings are versions, and their order."""

    name: str  # its key in api.VERSIONINGS: the value of `upstream.versioning`
    examples: Examples

    @abstractmethod
    def is_valid(self, version: str) -> bool:
        """True when `version` is a version under this rule (it can be ordered)."""

    @abstractmethod
    def key(self, version: str) -> Comparable:
        """The sort key of a valid `version`: older versions have smaller keys, and two
        spellings of one version (PEP 440's `1.0` and `1.0.0`) equal keys."""

    def is_older(self, candidate: str, than: str) -> bool:
        """True when valid version `candidate` is strictly older than valid version `than`."""
        return self.key(candidate) < self.key(than)

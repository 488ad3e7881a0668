"""One upstream commit as a proposal lists it (adapters/upstream.py reads them, the
proposal's text writes them): kept apart from the text so that reading the upstream does
not load how a proposal is written."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    refused: str | None = None  # why wheelpin refused this commit's wheel, if it did
    failed: str | None = None  # why its build failed, when the last try of it did

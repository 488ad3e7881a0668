"""The pin formats by name, as a pin's `kind` says them (config.PIN_KINDS maps the same names
to the formats' config models; tests/core/pins/test_pinformat_contract.py keeps the two in step
and holds every format to base.PinFormat). A new format is one module in this folder and
one line here (docs/pins.md, "Add a pin format")."""

from __future__ import annotations

from typing import Any

from .base import PinFormat
from .dockerfile_arg import DockerfileArg
from .dockerfile_from import DockerfileFrom

FORMATS: dict[str, PinFormat[Any]] = {
    fmt.name: fmt
    for fmt in (
        DockerfileArg(),
        DockerfileFrom(),
    )
}

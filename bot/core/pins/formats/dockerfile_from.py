"""`dockerfile-from`: a stage's FROM line holds the reference, `FROM repo:tag@sha256:… AS wheels`
(config key `from_stage`), with the wheel's sha256, if any, in an ARG (`sha256_arg`)."""

from __future__ import annotations

from ...config.model import DockerfileFromPin
from ._dockerfile import parsed, with_sha256
from .base import PinError, PinSites, closest, literal


class DockerfileFrom:
    name = "dockerfile-from"
    key = "from_stage"

    def named(self, pin: DockerfileFromPin) -> str:
        return f"FROM … AS {pin.from_stage}"

    def read(self, pin: DockerfileFromPin, text: str) -> PinSites:
        dockerfile = parsed(text, pin.file)
        wanted = pin.from_stage
        stage = dockerfile.stage(wanted)
        if stage is None:
            raise PinError(f"{pin.file}: no FROM … AS {wanted} stage"
                           + closest("stages", wanted, (s.name for s in dockerfile.stages if s.name)))
        if "$" in stage.image.value:
            raise PinError(
                f"{pin.file}:{stage.line}: FROM {stage.image.value} uses a variable: pin that ARG "
                "with image_arg instead"
            )
        return with_sha256(pin, dockerfile, literal(pin.file, (stage.image,)))

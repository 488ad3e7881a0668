"""`dockerfile-arg`: the default of an ARG holds the reference, `ARG X_IMAGE="repo:tag@sha256:…"`
(config key `image_arg`), with the wheel's sha256 in another ARG (`sha256_arg`). An ARG
declared in several stages has all its defaults moved together."""

from __future__ import annotations

from ...config.model import DockerfileArgPin
from ._dockerfile import arg_sites, parsed, with_sha256
from .base import PinSites, literal


class DockerfileArg:
    name = "dockerfile-arg"
    key = "image_arg"

    def named(self, pin: DockerfileArgPin) -> str:
        return pin.image_arg

    def read(self, pin: DockerfileArgPin, text: str) -> PinSites:
        dockerfile = parsed(text, pin.file)
        image = literal(pin.file, arg_sites(dockerfile, pin.image_arg, pin.file))
        return with_sha256(pin, dockerfile, image)

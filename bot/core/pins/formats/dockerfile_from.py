"""`dockerfile-from`: a stage's FROM line holds the reference, `FROM repo:tag@sha256:… AS wheels`
(config key `from_stage`), with the wheel's sha256, if any, in an ARG (`sha256_arg`). Found
before any config where a named wheel stage's own FROM is a literal digest pin."""

from __future__ import annotations

import re

from ...config.model import DockerfileFromPin, stage_site
from ..locate import ParsedDockerfile, ValueSite
from ._dockerfile import is_dockerfile, parsed, with_sha256
from ._stages import (
    built_on,
    consumer_of,
    image_sources,
    not_a_pin,
    sha256_args,
    stage_named,
    stages_of,
    unique,
    variable_of,
)
from .base import FoundPin, PinError, PinSites, Reference, Skipped, closest, literal


class DockerfileFrom:
    name = "dockerfile-from"
    key = "from_stage"

    def named(self, pin: DockerfileFromPin) -> str:
        return f"FROM … AS {pin.from_stage}"

    def read(self, pin: DockerfileFromPin, text: str) -> PinSites:
        dockerfile = parsed(text, pin.file)
        return with_sha256(pin, dockerfile, lambda: self._image(pin, dockerfile))

    def _image(self, pin: DockerfileFromPin, dockerfile: ParsedDockerfile) -> tuple[ValueSite, ...]:
        wanted = pin.from_stage
        stage = dockerfile.stage(wanted)
        if stage is None:
            raise PinError(
                f"{pin.file}: no FROM … AS {wanted} stage"
                + closest("stages", wanted, (s.name for s in dockerfile.stages if s.name))
            )
        if "$" in stage.image.value:
            raise PinError(
                f"{pin.file}:{stage.line}: FROM {stage.image.value} uses a variable: pin that ARG "
                "with image_arg instead"
            )
        return literal(pin.file, (stage.image,))

    def looks_in(self, file: str) -> bool:
        return is_dockerfile(file)

    def find(self, text: str, file: str) -> tuple[list[FoundPin], list[Skipped]]:
        dockerfile = parsed(text, file)
        stages = stages_of(text)
        found: list[FoundPin] = []
        skipped: list[Skipped] = []
        for stage in stages:
            if variable_of(stage.image) is not None:
                continue  # one ARG: dockerfile-arg's
            if "$" in stage.image:
                skipped.append(
                    Skipped(
                        file,
                        stage.line,
                        f"FROM {stage.image}",
                        "built from variables: wheelpin pins one ARG or a literal reference",
                    )
                )
                continue
            if stage.image.lower() == "scratch" or stage_named(stages[: stage.index], stage.image):
                continue
            why = built_on(stage, stages) or not_a_pin(stage.image)
            if why is None and stage.name is not None:
                prefix = re.sub(r"[^A-Za-z0-9]", "_", stage.name).upper()
                found.append(
                    FoundPin(
                        file,
                        stage.line,
                        stage.image,
                        self.name,
                        self.key,
                        stage.name,
                        f"FROM … AS {stage.name}",
                        stage.line,
                        sha256_args(dockerfile, prefix),
                        consumer_of(stages, stage, dockerfile, file),
                    )
                )
            else:
                skipped.append(
                    Skipped(
                        file,
                        stage.line,
                        f"FROM {stage.image}",
                        why or "the stage has no name (FROM … AS NAME) to pin it by",
                    )
                )
        for line, what, source in image_sources(text):
            skipped.append(
                Skipped(
                    file,
                    line,
                    f"{what}={source}",
                    "an image named in the instruction, not through a stage: no pin format moves it (to pin a "
                    "wheel image, name it in a stage, FROM … AS NAME, and take it from that stage)",
                )
            )
        return unique(found), skipped

    def references(self, text: str, file: str) -> list[Reference]:
        """Every stage's literal FROM (its stage the site, when it has a name) and every image
        a COPY or RUN takes straight from a registry, which no pin can name."""
        dockerfile = parsed(text, file)
        stages = stages_of(text)
        found: list[Reference] = []
        for stage in dockerfile.stages:
            image = stage.image.value
            earlier = {s.name.lower() for s in dockerfile.stages[: stage.index] if s.name}
            if "$" in image or image.lower() == "scratch" or image.lower() in earlier:
                continue  # a variable, no image, or another stage
            site = stage_site(stage.name) if stage.name else None
            base = built_on(stages[stage.index], stages) is not None
            found.append(Reference(file, stage.line, "FROM", image, site, base))
        found += [Reference(file, line, what, source, None) for line, what, source in image_sources(text)]
        return sorted(found, key=lambda reference: reference.line)

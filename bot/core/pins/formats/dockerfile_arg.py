"""`dockerfile-arg`: the default of an ARG holds the reference, `ARG X_IMAGE="repo:tag@sha256:…"`
(config key `image_arg`), with the wheel's sha256 in another ARG (`sha256_arg`). An ARG
declared in several stages has all its defaults moved together. Found before any config
where a global ARG's default is a digest pin and a wheel stage's `FROM ${X_IMAGE}` names it."""

from __future__ import annotations

from ...config.model import DockerfileArgPin, arg_site
from ._dockerfile import arg_sites, is_dockerfile, parsed, with_sha256
from ._stages import built_on, consumer_of, global_defaults, not_a_pin, sha256_args, stages_of, unique, variable_of
from .base import FoundPin, PinSites, Reference, Skipped, literal


class DockerfileArg:
    name = "dockerfile-arg"
    key = "image_arg"

    def named(self, pin: DockerfileArgPin) -> str:
        return pin.image_arg

    def read(self, pin: DockerfileArgPin, text: str) -> PinSites:
        dockerfile = parsed(text, pin.file)
        return with_sha256(pin, dockerfile, lambda: literal(pin.file, arg_sites(dockerfile, pin.image_arg, pin.file)))

    def looks_in(self, file: str) -> bool:
        return is_dockerfile(file)

    def find(self, text: str, file: str) -> tuple[list[FoundPin], list[Skipped]]:
        dockerfile = parsed(text, file)
        stages = stages_of(text)
        defaults = global_defaults(dockerfile)
        found: list[FoundPin] = []
        skipped: list[Skipped] = []
        named_by_from: set[str] = set()
        for stage in stages:
            name = variable_of(stage.image)
            if name is None:
                continue  # a literal FROM: dockerfile-from's
            named_by_from.add(name)
            declared = defaults.get(name)
            if declared is None or declared.default is None:
                continue  # a stage's base chosen at build time: nothing pinned here
            value, line = declared.default.value, declared.default.line
            why = built_on(stage, stages) or not_a_pin(value)
            if why is not None:
                skipped.append(Skipped(file, line, f"ARG {name}", why))
                continue
            found.append(
                FoundPin(
                    file,
                    line,
                    value,
                    self.name,
                    self.key,
                    name,
                    f"ARG {name}",
                    stage.line,
                    sha256_args(dockerfile, name.removesuffix("_IMAGE")),
                    consumer_of(stages, stage, dockerfile, file),
                )
            )
        for name, arg in defaults.items():
            if name in named_by_from or arg.default is None or not_a_pin(arg.default.value) is not None:
                continue
            skipped.append(
                Skipped(file, arg.default.line, f"ARG {name}", "pinned by digest, but no stage's FROM names it")
            )
        return unique(found), skipped

    def references(self, text: str, file: str) -> list[Reference]:
        """Every ARG default written out (one with a variable is chosen at build time), a
        base image's when a stage built on it starts `FROM ${NAME}`."""
        dockerfile = parsed(text, file)
        stages = stages_of(text)
        bases = {variable_of(stage.image) for stage in stages if built_on(stage, stages) is not None}
        return [
            Reference(
                file, arg.default.line, f"ARG {arg.name}", arg.default.value, arg_site(arg.name), arg.name in bases
            )
            for arg in dockerfile.args
            if arg.default is not None and "$" not in arg.default.value
        ]

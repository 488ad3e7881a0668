"""How a Dockerfile's stages use one another, which the Dockerfile formats read to find the
wheel pins a file already holds before any config (`find`, for `wheelpin init`).

A wheel image is a FROM-scratch image that a Dockerfile only copies files out of. So a
reference counts as a wheel pin when it is pinned by digest and names the image of a stage
that runs nothing and that no stage is built on: other stages only `COPY --from` it (or
mount it, `RUN --mount=…,from=…`). Each format says where such a reference is written (a
stage's own FROM, or the global ARG its `FROM ${X_IMAGE}` names); the rest is here: which
stage copies from which, why a stage is a base image and not a wheel image, the wheel
sha256 ARGs beside a pin, and the image the wheel is installed into.

The BuildKit parser (PyPI `dockerfile`) says which instructions each stage holds;
`core/pins/locate.py` says where each value is written, as a bump reads it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import dockerfile

from ...image.reference import ImageRef, ImageRefError
from ..locate import ArgDeclaration, ParsedDockerfile
from .base import ConsumerSite, FoundPin, Sha256Arg

_VARIABLE = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_PYTHON_TAG = re.compile(r"^(?:cp|pp|py)[0-9]{1,3}t?$")
# What a stage holding only a FROM-scratch wheel image may say without being built on.
_INERT = frozenset({"ARG", "ENV", "LABEL"})


@dataclass(frozen=True)
class Stage:
    """One stage, as the BuildKit parser reads it: the instructions it holds and the later
    stages that copy from (or mount) it."""

    index: int
    name: str | None
    line: int
    image: str
    instructions: tuple[str, ...]
    copied_by: tuple[int, ...]

    @property
    def label(self) -> str:
        return f"stage {self.name}" if self.name else f"the stage at line {self.line}"


@functools.lru_cache(maxsize=64)
def stages_of(text: str) -> tuple[Stage, ...]:
    """The stages of `text`, read once per text: both Dockerfile formats look at each file.
    The caller has parsed `text` first (`_dockerfile.parsed`), which refuses what the
    parser cannot read."""
    heads: list[tuple[str | None, int, str]] = []
    instructions: list[list[str]] = []
    copied_by: list[list[int]] = []
    for command in dockerfile.parse_string(text):
        instruction = command.cmd.upper()
        if instruction == "FROM":
            words = list(command.value)
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            heads.append((name, command.start_line, words[0]))
            instructions.append([])
            copied_by.append([])
        elif heads:
            instructions[-1].append(instruction)
            for source in _sources(command.flags):
                found = _index_named(heads[:-1], source)
                if found is not None:
                    copied_by[found].append(len(heads) - 1)
    return tuple(
        Stage(i, name, line, image, tuple(instructions[i]), tuple(copied_by[i]))
        for i, (name, line, image) in enumerate(heads)
    )


def _sources(flags: tuple[str, ...]) -> list[str]:
    """The stages a COPY (`--from=NAME`) or a RUN (`--mount=…,from=NAME`) reads from."""
    found: list[str] = []
    for flag in flags:
        if flag.startswith("--from="):
            found.append(flag.removeprefix("--from="))
        elif flag.startswith("--mount="):
            for part in flag.removeprefix("--mount=").split(","):
                key, _, value = part.partition("=")
                if key.strip() == "from":
                    found.append(value.strip())
    return found


@functools.lru_cache(maxsize=64)
def image_sources(text: str) -> tuple[tuple[int, str, str], ...]:
    """The images a COPY (`--from=REF`) or a RUN (`--mount=…,from=REF`) reads straight from
    a registry, not through a stage: each (line, the instruction as said, the reference).
    BuildKit reads a `--from` value as an image when no stage has that name or index
    (https://docs.docker.com/reference/dockerfile/#copy---from); a value built from a
    variable is chosen at build time, so it is no reference here."""
    commands = dockerfile.parse_string(text)
    heads = [list(c.value) for c in commands if c.cmd.upper() == "FROM"]
    names = {words[2].lower() for words in heads if len(words) >= 3 and words[1].lower() == "as"}
    count = len(heads)
    found: list[tuple[int, str, str]] = []
    for command in commands:
        instruction = command.cmd.upper()
        for source in _sources(command.flags):
            if "$" in source or source.lower() in names or (source.isdigit() and int(source) < count):
                continue
            try:
                ImageRef.parse(source)
            except ImageRefError:
                continue  # BuildKit refuses it at build time
            said = "COPY --from" if instruction == "COPY" else f"{instruction} --mount from"
            found.append((command.start_line, said, source))
    return tuple(found)


def _index_named(heads: list[tuple[str | None, int, str]], name: str) -> int | None:
    if name.isdigit() and int(name) < len(heads):
        return int(name)
    return next((i for i, (own, _, _) in enumerate(heads) if own and own.lower() == name.lower()), None)


def stage_named(stages: tuple[Stage, ...], name: str) -> Stage | None:
    """The stage `name` refers to among `stages`: by its name, or by its index."""
    if name.isdigit() and int(name) < len(stages):
        return stages[int(name)]
    return next((s for s in stages if s.name and s.name.lower() == name.lower()), None)


def variable_of(image: str) -> str | None:
    """The ARG a FROM names when its image is that one variable (`${X_IMAGE}`, `$X_IMAGE`)."""
    match = _VARIABLE.match(image)
    return (match.group(1) or match.group(2)) if match else None


def global_defaults(parsed: ParsedDockerfile) -> dict[str, ArgDeclaration]:
    """The ARGs declared before the first FROM with a default: those a FROM can name."""
    return {arg.name: arg for arg in parsed.args if arg.stage is None and arg.default is not None}


def built_on(stage: Stage, stages: tuple[Stage, ...]) -> str | None:
    """Why `stage` is not a wheel image's: it runs an instruction, or a later stage starts
    from it; None when stages only copy from it, if any do."""
    running = [i for i in stage.instructions if i not in _INERT]
    if running:
        return f"{stage.label} runs {running[0]}: a base image, not a wheel image"
    for later in stages[stage.index + 1 :]:
        if stage.name and later.image.lower() == stage.name.lower():
            return f"{later.label} is built on it: a base image, not a wheel image"
    return None  # copied from, or by nothing here (a fragment): what the image holds decides


def not_a_pin(value: str) -> str | None:
    """Why `value` is no digest-pinned reference; None when it is one."""
    try:
        ref = ImageRef.parse(value)
    except ImageRefError:
        return "not an image reference"
    if not ref.pinned:
        return "pinned by tag only (no @sha256:…): wheelpin moves digest pins"
    return None


def sha256_args(parsed: ParsedDockerfile, prefix: str) -> tuple[Sha256Arg, ...]:
    """The ARGs beside an image pin holding a wheel's sha256: `PREFIX_SHA256`, or one per
    python tag, `PREFIX_SHA256_CP310` (each default 64 hex digits)."""
    found: dict[str, Sha256Arg] = {}
    stem = f"{prefix}_SHA256"
    for arg in parsed.args:
        if arg.default is None or arg.name in found or not _SHA256.match(arg.default.value):
            continue
        if arg.name == stem:
            found[arg.name] = Sha256Arg(arg.name, arg.default.line, arg.default.value, None)
        elif arg.name.startswith(stem + "_") and _PYTHON_TAG.match(tag := arg.name[len(stem) + 1 :].lower()):
            found[arg.name] = Sha256Arg(arg.name, arg.default.line, arg.default.value, tag)
    return tuple(found.values())


def consumer_of(
    stages: tuple[Stage, ...], wheel_stage: Stage, parsed: ParsedDockerfile, file: str
) -> ConsumerSite | None:
    """The image the first stage copying from the wheel stage is built on, followed down
    its chain of stages: an ARG's default, a named stage's literal FROM, or a digest."""
    if not wheel_stage.copied_by:
        return None
    stage = stages[wheel_stage.copied_by[0]]
    while (below := stage_named(stages[: stage.index], stage.image)) is not None:
        stage = below
    name = variable_of(stage.image)
    if name is not None:
        declared = [a for a in parsed.declarations(name) if a.stage is None and a.default is not None]
        if not declared or declared[0].default is None or "$" in declared[0].default.value:
            return None
        return ConsumerSite(file, declared[0].default.line, from_arg=name, value=declared[0].default.value)
    if "$" in stage.image or stage.image.lower() == "scratch":
        return None
    if stage.name:
        return ConsumerSite(file, stage.line, from_stage=stage.name, value=stage.image)
    try:
        pinned = ImageRef.parse(stage.image).pinned
    except ImageRefError:
        return None
    return ConsumerSite(file, stage.line, image=stage.image, value=stage.image) if pinned else None


def unique(found: list[FoundPin]) -> list[FoundPin]:
    """One pin per name: two stages may start from the same `${X_IMAGE}`."""
    seen: set[str] = set()
    kept = []
    for pin in found:
        if pin.named not in seen:
            seen.add(pin.named)
            kept.append(pin)
    return kept

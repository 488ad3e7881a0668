"""Finding the wheel-image pins a downstream repository's Dockerfiles already hold, before
it has a config (`wheelpin init`). Pure: the caller reads the files.

A wheel image is a FROM-scratch image that a Dockerfile only copies files out of. So a
reference counts as a wheel pin when it is pinned by digest and names the image of a stage
that runs nothing and that no stage is built on: other stages only `COPY --from` it (or
mount it, `RUN --mount=…,from=…`). It is written either in the stage's own `FROM
repo:tag@sha256:… AS stage`, or in the default of the global `ARG X_IMAGE="…"` that the
stage's `FROM ${X_IMAGE}` names. Everything else that looks like an image (a base image, a
reference pinned by tag only, one built from several variables) is skipped with the reason.

The BuildKit parser (PyPI `dockerfile`) says which instructions each stage holds;
`core/pins/locate.py` says where each value is written, as the pass reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import dockerfile

from .locate import ParsedDockerfile, parse
from ..image.reference import ImageRef, ImageRefError

_VARIABLE = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_PYTHON_TAG = re.compile(r"^(?:cp|pp|py)[0-9]{1,3}t?$")
# What a stage holding only a FROM-scratch wheel image may say without being built on.
_INERT = frozenset({"ARG", "ENV", "LABEL"})


@dataclass(frozen=True)
class Sha256Arg:
    """An ARG whose default is a wheel's sha256, beside an image pin."""

    name: str
    line: int
    value: str
    python_tag: str | None  # from its name's suffix (`…_SHA256_CP310`), when it has one


@dataclass(frozen=True)
class ConsumerSite:
    """Where the image the wheel is installed into is named: one of the three ways
    `component.consumer` takes it (core/config/model.py Consumer)."""

    file: str
    line: int
    from_arg: str | None = None
    from_stage: str | None = None
    image: str | None = None
    value: str = ""  # the reference as written (with an ARG's default put in)


@dataclass(frozen=True)
class FoundPin:
    """One wheel-image reference pinned by digest, and what sits beside it."""

    file: str
    line: int
    reference: str
    image_arg: str | None
    from_stage: str | None
    stage_line: int
    sha256_args: tuple[Sha256Arg, ...]
    consumer: ConsumerSite | None

    @property
    def ref(self) -> ImageRef:
        return ImageRef.parse(self.reference)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Skipped:
    """A reference that is no wheel pin, and why."""

    file: str
    line: int
    what: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}: {self.why}"


@dataclass
class _Stage:
    index: int
    name: str | None
    line: int
    image: str
    instructions: list[str]
    copied_by: list[int]  # the stages that copy from (or mount) this one


def _stages(text: str) -> list[_Stage]:
    stages: list[_Stage] = []
    for command in dockerfile.parse_string(text):
        instruction = command.cmd.upper()
        if instruction == "FROM":
            words = list(command.value)
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            stages.append(_Stage(len(stages), name, command.start_line, words[0], [], []))
        elif stages:
            stages[-1].instructions.append(instruction)
            for source in _sources(command.flags):
                found = _stage_named(stages[:-1], source)
                if found is not None:
                    found.copied_by.append(len(stages) - 1)
    return stages


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


def _stage_named(stages: list[_Stage], name: str) -> _Stage | None:
    if name.isdigit() and int(name) < len(stages):
        return stages[int(name)]
    return next((s for s in stages if s.name and s.name.lower() == name.lower()), None)


def _built_on(stage: _Stage, stages: list[_Stage]) -> str | None:
    """Why `stage` is not a wheel image's: it runs an instruction, or a later stage starts
    from it; None when stages only copy from it, if any do."""
    running = [i for i in stage.instructions if i not in _INERT]
    if running:
        return f"{_label(stage)} runs {running[0]}: a base image, not a wheel image"
    for later in stages[stage.index + 1:]:
        if stage.name and later.image.lower() == stage.name.lower():
            return f"{_label(later)} is built on it: a base image, not a wheel image"
    return None  # copied from, or by nothing here (a fragment): what the image holds decides


def _label(stage: _Stage) -> str:
    return f"stage {stage.name}" if stage.name else f"the stage at line {stage.line}"


def scan(text: str, file: str) -> tuple[list[FoundPin], list[Skipped]]:
    """The wheel pins of one Dockerfile, and the references skipped; DockerfileError when
    the BuildKit parser cannot read it."""
    parsed = parse(text, where=file)
    stages = _stages(text)
    globals_ = {arg.name: arg for arg in parsed.args if arg.stage is None and arg.default is not None}
    found: list[FoundPin] = []
    skipped: list[Skipped] = []
    named_by_from: set[str] = set()
    for stage in stages:
        variable = _VARIABLE.match(stage.image)
        if variable:
            name = variable.group(1) or variable.group(2)
            named_by_from.add(name)
            declared = globals_.get(name)
            if declared is None or declared.default is None:
                continue  # a stage's base chosen at build time: nothing pinned here
            value, line, what = declared.default.value, declared.default.line, f"ARG {name}"
        else:
            if "$" in stage.image:
                skipped.append(Skipped(file, stage.line, f"FROM {stage.image}",
                                       "built from variables: wheelpin pins one ARG or a literal reference"))
                continue
            if stage.image.lower() == "scratch" or _stage_named(stages[:stage.index], stage.image):
                continue
            value, line, what = stage.image, stage.line, f"FROM {stage.image}"
        why = _built_on(stage, stages) or _not_a_pin(value)
        if why is None and not variable and stage.name is None:
            why = "the stage has no name (FROM … AS NAME) to pin it by"
        if why is not None:
            skipped.append(Skipped(file, line, what, why))
            continue
        image_arg = (variable.group(1) or variable.group(2)) if variable else None
        prefix = image_arg.removesuffix("_IMAGE") if image_arg else re.sub(r"[^A-Za-z0-9]", "_", stage.name or "").upper()
        found.append(FoundPin(file, line, value, image_arg, None if image_arg else stage.name, stage.line,
                              _sha256_args(parsed, prefix), _consumer(stages, stage, parsed, file)))
    for name, arg in globals_.items():
        if name in named_by_from or arg.default is None or _not_a_pin(arg.default.value) is not None:
            continue
        skipped.append(Skipped(file, arg.default.line, f"ARG {name}",
                               "pinned by digest, but no stage's FROM names it"))
    return _unique(found), skipped


def _unique(found: list[FoundPin]) -> list[FoundPin]:
    """One pin per ARG: two stages may start from the same `${X_IMAGE}`."""
    seen: set[tuple[str | None, str | None]] = set()
    kept = []
    for pin in found:
        key = (pin.image_arg, pin.from_stage)
        if key not in seen:
            seen.add(key)
            kept.append(pin)
    return kept


def _not_a_pin(value: str) -> str | None:
    """Why `value` is no digest-pinned reference; None when it is one."""
    try:
        ref = ImageRef.parse(value)
    except ImageRefError:
        return "not an image reference"
    if not ref.pinned:
        return "pinned by tag only (no @sha256:…): wheelpin moves digest pins"
    return None


def _sha256_args(parsed: ParsedDockerfile, prefix: str) -> tuple[Sha256Arg, ...]:
    """The ARGs beside an image pin holding a wheel's sha256: `PREFIX_SHA256`, or one per
    python tag, `PREFIX_SHA256_CP310` (each default 64 hex digits)."""
    found: dict[str, Sha256Arg] = {}
    stem = f"{prefix}_SHA256"
    for arg in parsed.args:
        if arg.default is None or arg.name in found or not _SHA256.match(arg.default.value):
            continue
        if arg.name == stem:
            found[arg.name] = Sha256Arg(arg.name, arg.default.line, arg.default.value, None)
        elif arg.name.startswith(stem + "_") and _PYTHON_TAG.match(tag := arg.name[len(stem) + 1:].lower()):
            found[arg.name] = Sha256Arg(arg.name, arg.default.line, arg.default.value, tag)
    return tuple(found.values())


def _consumer(stages: list[_Stage], wheel_stage: _Stage, parsed: ParsedDockerfile, file: str) -> ConsumerSite | None:
    """The image the first stage copying from the wheel stage is built on, followed down
    its chain of stages: an ARG's default, a named stage's literal FROM, or a digest."""
    if not wheel_stage.copied_by:
        return None
    stage = stages[wheel_stage.copied_by[0]]
    while (below := _stage_named(stages[:stage.index], stage.image)) is not None:
        stage = below
    variable = _VARIABLE.match(stage.image)
    if variable:
        name = variable.group(1) or variable.group(2)
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

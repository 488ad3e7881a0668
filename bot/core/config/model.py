"""The model of a repository's components: which upstream feeds which wheel into which pins.

Read from `.github/wheelpin.toml` (or `wheelpin.toml`, or `--config`). The key names of
docs/design.md §3 are a contract; everything is checked here, before any pass runs, and
`loader` reports each error with the file, the key path and the line.
"""

# No `from __future__ import annotations` in this module: pydantic would evaluate each of
# its ~60 annotations from a string (a compile each), at every start-up.

import difflib
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from ... import PROJECT_URL, SCHEMA_URL
from ..checks.glibc import glibc_version
from ..image.reference import ImageRef, ImageRefError, parse_repository
from ..trust.policy import Trust
from ..wheel.amdgpu import TargetId
from ..wheel.localversion import normalized_segment
from .schedules import check_schedule, check_timezone
from .templates import (
    COMMAND_FIELDS,
    COMMIT_FIELDS,
    INPUT_FIELDS,
    TemplateError,
    check_fields,
    fields_of,
    validate_tag_template,
)

COMPONENT_NAME = r"^[a-z0-9][a-z0-9._-]*$"
_ARG = r"^[A-Za-z_][A-Za-z0-9_]*$"
_DISTRIBUTION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_PYTHON_TAG = re.compile(r"^(?:cp|pp|py)[0-9]{1,3}t?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # NUL ends a path for the OS; others only confuse


CONFIG_FILES = (".github/wheelpin.toml", "wheelpin.toml")  # looked for in this order
BRANCH_PREFIX = "wheelpin/"  # the bot's branches are `<prefix><component>` unless the config says otherwise


class _Model(BaseModel):
    # every field says what it is (`Field(description=…)`): the JSON Schema's descriptions,
    # which editors show (pydantic's attribute docstrings would be read from the source at each start)
    model_config = ConfigDict(extra="forbid", frozen=True)


class Author(_Model):
    name: Annotated[str, Field(description="The name on the commits wheelpin makes.")] = "wheelpin[bot]"
    email: Annotated[str, Field(description="The email on the commits wheelpin makes.")] = (
        "wheelpin@users.noreply.github.com"
    )


class Defaults(_Model):
    """Repository-wide settings; a component may override labels, schedule, quiet period."""

    base_branch: Annotated[
        str, Field(description="The branch pull requests are proposed against (and pins are read from).")
    ] = "main"
    branch_prefix: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9._-]+/$",
            description="The prefix of wheelpin's branches: a component's is the prefix and its name.",
        ),
    ] = BRANCH_PREFIX
    labels: Annotated[list[str], Field(description="Labels put on every pull request wheelpin opens.")] = ["wheelpin"]
    schedule: Annotated[
        str,
        Field(
            description=(
                "How often the upstream is looked at: an interval (`30m`, `6h`, `1d`) or a "
                "crontab line (`0 6 * * 1-5`)."
            )
        ),
    ] = "30m"
    timezone: str = Field(
        default="UTC",
        description="the IANA time zone crontab lines are read in, such as Europe/Berlin (intervals do not care)",
    )
    quiet_minutes: Annotated[
        int,
        Field(
            ge=0,
            description="Minutes an upstream commit must be old before it is built (a burst of pushes builds once).",
        ),
    ] = 0
    author: Annotated[Author, Field(description="Who wheelpin's commits are by.")] = Author()
    signoff: Annotated[
        bool, Field(description="Add a `Signed-off-by` line to wheelpin's commits (for repositories that require DCO).")
    ] = False

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        return check_schedule(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        return check_timezone(value)


def _versioning_names(schema: dict[str, Any]) -> None:
    """`upstream.versioning`'s names in the JSON Schema, from the registry (an editor offers them)."""
    from ..versioning.api import VERSIONINGS

    schema["anyOf"] = [{"type": "string", "enum": list(VERSIONINGS)}, {"type": "null"}]


class Upstream(_Model):
    """Any git URL (https, ssh, file://, a local path) and a branch or a tag pattern."""

    repo: Annotated[
        str,
        Field(
            min_length=1,
            description="The upstream git repository: a URL, or a path relative to the config's repository.",
        ),
    ]
    branch: Annotated[str | None, Field(description="Follow the head of this branch (give this or `tags`).")] = None
    tags: str | None = Field(
        default=None,
        description="the newest release tag by version: a glob such as "
        "v* , or a pattern naming the version part, such as v{version}-rocm",
    )
    versioning: str | None = Field(
        default=None,
        json_schema_extra=_versioning_names,
        description="the versioning the tags' versions are told valid and ordered by "
        "(docs/config.md says each); absent: PEP 440 when every matching tag's version "
        "is one, else loose",
    )

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: str | None) -> str | None:
        if value is not None:
            from ..versioning.tags import TagPattern

            TagPattern.parse(value)
        return value

    @field_validator("versioning")
    @classmethod
    def _versioning(cls, value: str | None) -> str | None:
        from ..versioning.api import VERSIONINGS

        if value is not None and value not in VERSIONINGS:
            raise ValueError(f"{value!r} is not a versioning: give one of {', '.join(VERSIONINGS)}")
        return value

    @model_validator(mode="after")
    def _one_ref(self) -> Self:
        if (self.branch is None) == (self.tags is None):
            raise ValueError("give exactly one of upstream.branch or upstream.tags")
        if self.versioning is not None and self.tags is None:
            raise ValueError("upstream.versioning orders release tags: give it with upstream.tags, not a branch")
        return self


class Wheel(_Model):
    distribution: Annotated[
        str,
        Field(
            description=(
                "The wheel's distribution name (as on PyPI), checked against the wheel's file name and METADATA."
            )
        ),
    ]
    archs: Annotated[
        list[str], Field(description="GPU targets every ELF with HIP code must carry, such as gfx942 or gfx90a:xnack-.")
    ] = []
    archs_wanted: list[str] = Field(
        default=[],
        description="archs used where present: a missing one is named in the proposal and "
        "the dashboard; a wheel with none of them is refused",
    )
    require_needed: Annotated[
        list[str], Field(description="Globs of libraries some ELF must need (DT_NEEDED), such as libamdhip64.so.*.")
    ] = []
    forbid_needed: Annotated[
        list[str], Field(description="Globs of libraries no ELF may need, such as libcudart.so.*.")
    ] = []
    rocm: bool = Field(default=True, description="refuse CUDA libraries and CUDA device code")
    allow_vendored_rocm: bool = Field(
        default=False,
        description="let the wheel carry ROCm's own libraries (libamdhip64, librocblas…), as "
        "PyTorch's self-contained ROCm wheels do; by default the image must provide them",
    )
    allow_variant_mismatch: bool = Field(
        default=False,
        description="let a variant wheel (PEP 825) whose `amd :: gfx_arch` properties name GPU "
        "targets it has no code object for through; by default each target named must be in every GPU library",
    )
    python_tags: list[str] = Field(
        default=[], description="one wheel per tag (per tag and variant label for variant wheels), e.g. cp310…cp313"
    )
    variants: list[str] = Field(
        default=[],
        description="the variant labels (PEP 825) each python tag's wheels must carry, one wheel each, such as "
        'amd_gfx942 and amd_gfx950; "" names the non-variant wheel beside them. Empty: whatever labels the build makes',
    )
    version_carries_commit: bool = Field(
        default=True, description="the version's local part holds g<sha8> (LMCache yes, Mooncake no)"
    )
    smoke: str | None = Field(
        default=None,
        description="a shell command run in a fresh venv per python tag holding only the "
        "wheel (e.g. python -c 'import mooncake'); a failure publishes nothing",
    )
    local_segments: list[str] = Field(
        default=[],
        description="segments the wheel's local version must carry, e.g. torch2.10 and "
        "cxx11abi1: the ABI its image tag promises",
    )
    size_growth_warn: Annotated[
        float,
        Field(
            ge=0,
            description="the share by which a wheel's file or installed size may grow from the pinned one before the "
            "proposal flags it, such as 0.2 for 20% (a growth under 1 MB is never flagged); 0 never flags",
        ),
    ] = 0.2
    max_glibc: str | None = Field(
        default=None,
        description="the oldest glibc of the consuming images, such as 2.28: a wheel whose manylinux "
        "tag needs a newer one is refused, and so is one with no manylinux tag (linux_x86_64 promises no glibc: "
        "PEP 600)",
    )

    @field_validator("distribution")
    @classmethod
    def _distribution(cls, value: str) -> str:
        if not _DISTRIBUTION.match(value):
            raise ValueError(f"{value!r} is not a distribution name")
        return value

    @field_validator("archs", "archs_wanted")
    @classmethod
    def _archs(cls, value: list[str]) -> list[str]:
        for arch in value:
            TargetId.parse_known(arch)
        return value

    @field_validator("local_segments")
    @classmethod
    def _local_segments(cls, value: list[str]) -> list[str]:
        return [normalized_segment(segment) for segment in value]

    @field_validator("max_glibc")
    @classmethod
    def _max_glibc(cls, value: str | None) -> str | None:
        if value is not None:
            glibc_version(value)
        return value

    @field_validator("python_tags")
    @classmethod
    def _python_tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not _PYTHON_TAG.match(tag):
                raise ValueError(f"{tag!r} is not a python tag such as cp312")
        if len(set(value)) != len(value):
            raise ValueError("python_tags lists a tag twice")
        return value

    @field_validator("variants")
    @classmethod
    def _variants(cls, value: list[str]) -> list[str]:
        from ..wheel.metadata import is_variant_label

        for label in value:
            if label and not is_variant_label(label):
                raise ValueError(
                    f"{label!r} is not a variant label (PEP 825: 1 to 16 of 0-9, a-z, _ and .), "
                    'nor "" for the non-variant wheel'
                )
        if len(set(value)) != len(value):
            raise ValueError("variants lists a label twice")
        return value


class _BuildKind(_Model):
    """What every build kind's table carries besides its own keys."""

    kind: str  # each kind's model narrows it to its name (a Literal): the union's tag
    timeout_minutes: Annotated[int, Field(gt=0, description="Minutes a build may take before it counts as failed.")] = (
        180
    )


class CommandBuild(_BuildKind):
    """`kind = "command"`: a local `command` run in a clean checkout of the commit (the local platform only)."""

    kind: Annotated[
        Literal["command"],
        Field(description="The build kind: a command run here (may be left out when `command` is given)."),
    ] = "command"
    command: Annotated[
        str | list[str],
        Field(
            description=(
                "A local build command (the local platform only; never run on GitHub): it writes "
                "the wheels to $WHEELPIN_OUT."
            )
        ),
    ]

    @model_validator(mode="before")
    @classmethod
    def _not_a_workflow(cls, value: Any) -> Any:
        if isinstance(value, dict) and ("inputs" in value or "publishes_image" in value):
            raise ValueError("build.inputs and build.publishes_image go with build.workflow")
        return value

    @field_validator("command")
    @classmethod
    def _placeholders(cls, value: str | list[str]) -> str | list[str]:
        for part in [value] if isinstance(value, str) else value:
            _fields(part, COMMAND_FIELDS, "command")
        return value


class ActionsBuild(_BuildKind):
    """`kind = "github-actions"`: a GitHub Actions `workflow` dispatched with `inputs`."""

    kind: Annotated[
        Literal["github-actions"],
        Field(
            description="The build kind: a GitHub Actions workflow (may be left out when `workflow` is given).",
        ),
    ] = "github-actions"
    workflow: Annotated[
        str,
        Field(
            description=(
                "The GitHub Actions workflow file that builds the wheel, dispatched with the commit as an input."
            )
        ),
    ]
    inputs: Annotated[
        dict[str, str], Field(description="The workflow's inputs: templates of {sha} {sha8} {ref} {component}.")
    ] = {}
    ref: str | None = Field(default=None, description="the downstream ref to dispatch on")
    publishes_image: bool = Field(
        default=False,
        description="the workflow pushes the image itself "
        "(as ATOM's does): wheelpin adopts it, verified, and never re-pushes",
    )

    @field_validator("inputs")
    @classmethod
    def _placeholders(cls, value: dict[str, str]) -> dict[str, str]:
        for key, template in value.items():
            _fields(template, INPUT_FIELDS, f"inputs.{key}")
        return value


# The build kinds by name, as `kind` says them: loop/builders/api.py maps the same names to
# the builders, and its contract test keeps the two in step.
BUILD_KINDS: dict[str, type[_BuildKind]] = {"command": CommandBuild, "github-actions": ActionsBuild}
_INFERRED = {"command": "command", "workflow": "github-actions"}  # a config without `kind`: its key says it
_ONE_BUILDER = "give exactly one of build.command or build.workflow"


def _known_kind(value: Any) -> Any:
    """One sentence, located, for a `build` table no kind fits (before the union tries any)."""
    if isinstance(value, dict):
        kind = value.get("kind")
        if kind is None and len(_INFERRED.keys() & value.keys()) != 1:
            raise ValueError(_ONE_BUILDER)
        if kind is not None and (not isinstance(kind, str) or kind not in BUILD_KINDS):
            raise ValueError(f"kind: {kind!r} is not a build kind ({', '.join(BUILD_KINDS)})")
    return value


def _build_kind(value: Any) -> str | None:
    """The kind of a `build` table: its `kind`, else the one its `command` or `workflow` key implies."""
    if isinstance(value, _BuildKind):
        return value.kind
    if not isinstance(value, dict):
        return None
    if "kind" in value:
        return str(value["kind"])
    return next((kind for key, kind in _INFERRED.items() if key in value), None)


Build = Annotated[
    Annotated[CommandBuild, Tag("command")] | Annotated[ActionsBuild, Tag("github-actions")],
    Discriminator(_build_kind, custom_error_type="build_kind", custom_error_message=_ONE_BUILDER),
    BeforeValidator(_known_kind),
]


def _fields(template: str, allowed: frozenset[str], where: str) -> list[str]:
    try:
        return check_fields(template, allowed)
    except TemplateError as exc:
        raise ValueError(f"{where}: {exc}") from None


class Image(_Model):
    repository: str = Field(description="host/path, or oci:/folder for an OCI layout folder")
    tag: str = Field(description="template of {sha} {sha8} {version} {version_base} {component}")
    prune_after_days: Annotated[int, Field(ge=1, le=3650)] | None = Field(
        default=None,
        description="delete this component's image tags (those its tag template gives) "
        "that no pin file on any branch of the downstream names, this many days after wheelpin first "
        "saw them unpinned; off when unset",
    )

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        if value.startswith("oci:"):
            if len(value) == 4:
                raise ValueError("oci: needs a folder (oci:/path/to/layout)")
            return value
        try:
            parse_repository(value)
        except ImageRefError as exc:
            raise ValueError(str(exc)) from None
        return value

    @property
    def is_layout(self) -> bool:
        return self.repository.startswith("oci:")


def pin_path(value: str) -> str:
    """The one spelling of a pin file: relative to the repository root, `/`-separated, with
    no `.`, empty or trailing parts (`./docker//Dockerfile` is `docker/Dockerfile`), so two
    spellings of one file are one key everywhere (reading, planning, writing a branch).
    `..` is refused rather than folded: `a/../b` is `b` only when `a` is no symlink."""
    path = PurePosixPath(value)
    if (
        not value
        or path.is_absolute()
        or ".." in path.parts
        or "\\" in value
        or _CONTROL.search(value)
        or path == PurePosixPath(".")
    ):
        raise ValueError(f"{value!r} must be a path inside the repository, from its root (no '..', no absolute path)")
    return path.as_posix()


def escape_problem(root: Path, file: str) -> str | None:
    """Why the pin path `file` must not be edited in the checkout `root`: a symlinked file
    or folder on its way leads out of the repository (or loops); None when it stays inside.
    Symlinks that stay inside are followed: the file they reach is the one edited."""
    real_root = root.resolve()
    try:
        target = (real_root / file).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return f"{file}: its path loops through symlinks in {root}"
    if target.is_relative_to(real_root):
        return None
    return f"{file} resolves to {target}, outside the repository {real_root}: wheelpin edits only files inside it"


def arg_site(name: str) -> str:
    """An ARG as pin sites are compared: two pins (or a pin and a reference the file names)
    at one site move the same characters."""
    return f"ARG {name}"


def stage_site(name: str) -> str:
    """A stage's FROM as pin sites are compared: BuildKit compares stage names regardless
    of case (`AS Wheels` is `--from=wheels`), and a file's stage names are unique."""
    return f"FROM AS {name.lower()}"


class _PinKind(_Model):
    """What every pin format's table carries besides the key that says where it pins."""

    kind: str  # each format's model narrows it to its name (a Literal): the union's tag
    file: Annotated[str, Field(description="The Dockerfile, relative to the repository root.")]
    sha256_arg: Annotated[
        Annotated[str, Field(pattern=_ARG)] | None, Field(description="The ARG whose default is the wheel's sha256.")
    ] = None
    python_tag: str | None = Field(default=None, description="which wheel sha256_arg names")

    @field_validator("file")
    @classmethod
    def _file(cls, value: str) -> str:
        return pin_path(value)

    def sites(self) -> tuple[tuple[str, str, str], ...]:
        """What the pin moves in its file, each as (its config key, the site as compared,
        the site as a sentence says it): two pins of one file claiming one site would both
        move it. Each format's model adds the site of its own key."""
        return (("sha256_arg", arg_site(self.sha256_arg), f"ARG {self.sha256_arg}"),) if self.sha256_arg else ()

    @model_validator(mode="after")
    def _tag_of_a_sha256(self) -> Self:
        if self.python_tag is not None and self.sha256_arg is None:
            raise ValueError(
                "python_tag: it names the wheel whose sha256 sha256_arg takes, and this pin has no "
                "sha256_arg: give one, or leave python_tag out"
            )
        return self


class DockerfileArgPin(_PinKind):
    """`kind = "dockerfile-arg"`: the default of an ARG holds the reference (+ its sha256 ARG)."""

    kind: Annotated[
        Literal["dockerfile-arg"],
        Field(
            description="The pin format: an ARG's default (may be left out when `image_arg` is given).",
        ),
    ] = "dockerfile-arg"
    image_arg: Annotated[
        str,
        Field(
            pattern=_ARG,
            description="The ARG whose default is the wheel image reference (repository:tag@sha256:digest).",
        ),
    ]

    def sites(self) -> tuple[tuple[str, str, str], ...]:
        return (("image_arg", arg_site(self.image_arg), f"ARG {self.image_arg}"), *super().sites())


class DockerfileFromPin(_PinKind):
    """`kind = "dockerfile-from"`: the FROM line of a stage holds the reference (+ a sha256 ARG)."""

    kind: Annotated[
        Literal["dockerfile-from"],
        Field(
            description="The pin format: a stage's FROM line (may be left out when `from_stage` is given).",
        ),
    ] = "dockerfile-from"
    from_stage: str = Field(description="pin the FROM line `AS <stage>`")

    def sites(self) -> tuple[tuple[str, str, str], ...]:
        stage = ("from_stage", stage_site(self.from_stage), f"FROM … AS {self.from_stage}")
        return (stage, *super().sites())


# The pin formats by name, as `kind` says them: core/pins/formats/api.py maps the same names to
# the formats that read and move them, and its contract test keeps the two in step.
PIN_KINDS: dict[str, type[_PinKind]] = {"dockerfile-arg": DockerfileArgPin, "dockerfile-from": DockerfileFromPin}
_PIN_KEYS = {"image_arg": "dockerfile-arg", "from_stage": "dockerfile-from"}  # no `kind`: its key says it
_ONE_SITE = f"give exactly one of {' or '.join(_PIN_KEYS)}"


def _misspelt_key(value: dict[str, Any]) -> str | None:
    """The format whose key a key no format knows misspells (`imag_arg`), so the pin is read
    as that format and the misspelling is said as an unknown key with the closest one."""
    known = {"kind", *(name for model in PIN_KINDS.values() for name in model.model_fields)}
    for key in value.keys() - known:
        close = difflib.get_close_matches(str(key), list(_PIN_KEYS), n=1)
        if close:
            return _PIN_KEYS[close[0]]
    return None


def _known_pin_kind(value: Any) -> Any:
    """One sentence, located, for a pin table no format fits (before the union tries any)."""
    if isinstance(value, dict):
        kind = value.get("kind")
        given = _PIN_KEYS.keys() & value.keys()
        if kind is None and (len(given) > 1 or (not given and _misspelt_key(value) is None)):
            raise ValueError(_ONE_SITE)
        if kind is not None and (not isinstance(kind, str) or kind not in PIN_KINDS):
            raise ValueError(f"kind: {kind!r} is not a pin format ({', '.join(PIN_KINDS)})")
    return value


def _pin_kind(value: Any) -> str | None:
    """The format of a pin table: its `kind`, else the one its `image_arg` or `from_stage` implies."""
    if isinstance(value, _PinKind):
        return value.kind
    if not isinstance(value, dict):
        return None
    if "kind" in value:
        return str(value["kind"])
    return next((kind for key, kind in _PIN_KEYS.items() if key in value), None) or _misspelt_key(value)


Pin = Annotated[
    Annotated[DockerfileArgPin, Tag("dockerfile-arg")] | Annotated[DockerfileFromPin, Tag("dockerfile-from")],
    Discriminator(_pin_kind, custom_error_type="pin_kind", custom_error_message=_ONE_SITE),
    BeforeValidator(_known_pin_kind),
]
"""One place a Dockerfile pins the component, in one of the formats of core/pins/formats/."""


class Consumer(_Model):
    """The image the wheel is installed into, read by digest from its layers: named, or taken
    from the downstream Dockerfile's own `FROM … AS stage` or `ARG` (so it moves with the base)."""

    image: str | None = Field(default=None, description="repository@sha256:digest of the consuming image")
    from_stage: str | None = Field(default=None, description="the stage whose FROM names the consuming image")
    from_arg: str | None = Field(default=None, description="the ARG whose default names the consuming image")
    file: str | None = Field(
        default=None, description="the Dockerfile of from_stage or from_arg (default: the first pin's file)"
    )

    @model_validator(mode="after")
    def _one(self) -> Self:
        given = [key for key in ("image", "from_stage", "from_arg") if getattr(self, key)]
        if len(given) != 1:
            raise ValueError("give exactly one of image, from_stage, from_arg")
        if self.image is not None:
            try:
                ref = ImageRef.parse(self.image)
            except ImageRefError as exc:
                raise ValueError(f"image: {exc}") from None
            if ref.digest is None:
                raise ValueError("image: name it by digest (…@sha256:<64 hex>): a tag can move")
        if self.file is not None:
            self.file = pin_path(self.file)
        return self


class Component(_Model):
    name: Annotated[
        str,
        Field(
            pattern=COMPONENT_NAME,
            max_length=64,
            description="The component's name: its branch, image tag and dashboard row.",
        ),
    ]
    upstream: Annotated[Upstream, Field(description="Where the wheel's source comes from.")]
    wheel: Annotated[Wheel, Field(description="What the built wheel must be: checked before it is published.")]
    build: Annotated[Build, Field(description="How a wheel is built for an upstream commit.")]
    image: Annotated[Image, Field(description="Where the wheel image is published, by digest.")]
    constraints: Annotated[
        list[str],
        Field(
            description="Pins of the consuming image the wheel's Requires-Dist must agree with, such as numpy==2.3.5."
        ),
    ] = []
    constraints_file: Annotated[
        str | None, Field(description="A constraints file in the repository, read as `constraints`.")
    ] = None
    pins: Annotated[
        Annotated[list[Pin], Field(min_length=1)],
        Field(description="The places in the repository's Dockerfiles that pin the wheel image."),
    ]
    labels: Annotated[
        list[str] | None, Field(description="Labels for this component's pull requests (default: `defaults.labels`).")
    ] = None
    schedule: Annotated[str | None, Field(description="This component's schedule (default: `defaults.schedule`).")] = (
        None
    )
    quiet_minutes: Annotated[
        Annotated[int, Field(ge=0)] | None,
        Field(description="This component's quiet period (default: `defaults.quiet_minutes`)."),
    ] = None
    consumer: Annotated[
        Consumer | None,
        Field(description="The image the wheel is installed into, checked against the wheel before it is published."),
    ] = None
    trust: Annotated[
        Trust,
        Field(
            description="Whether the wheels must carry a GitHub attestation by a given workflow, checked before a bump."
        ),
    ] = Trust()

    @field_validator("constraints")
    @classmethod
    def _constraints(cls, value: list[str]) -> list[str]:
        from ..proposal.requirements import (
            parse_requirement,
        )  # packaging's markers: loaded when a config has constraints

        for index, text in enumerate(value):
            parse_requirement(text, source=f"constraints[{index}]")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        return None if value is None else check_schedule(value)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        try:
            validate_tag_template(self.image.tag, component=self.name)
        except TemplateError as exc:
            raise ValueError(f"image.tag: {exc}") from None
        names = set(fields_of(self.image.tag))
        if not names & COMMIT_FIELDS and not ("version" in names and self.wheel.version_carries_commit):
            raise ValueError(
                "image.tag: must carry the commit ({sha} or {sha8}), or {version} when the "
                "version carries g<sha8>: an image must be found from its commit alone"
            )
        tags = self.wheel.python_tags
        for index, pin in enumerate(self.pins):
            if pin.python_tag is not None and tags and pin.python_tag not in tags:
                raise ValueError(f"pins[{index}].python_tag: {pin.python_tag!r} is not in wheel.python_tags")
            if pin.sha256_arg and len(tags) > 1 and pin.python_tag is None:
                raise ValueError(
                    f"pins[{index}].sha256_arg: the image holds {len(tags)} wheels, so it needs "
                    "a python_tag naming its wheel"
                )
            variants = self.wheel.variants
            if pin.sha256_arg and len(variants) > 1:
                labels = ", ".join(label or '"" (the non-variant wheel)' for label in variants)
                raise ValueError(
                    f"pins[{index}].sha256_arg: wheel.variants gives each python tag {len(variants)} wheels "
                    f"({labels}), and a sha256 ARG names its wheel by python tag, never by variant label: "
                    "drop the pin's sha256_arg (its image pin alone moves), or list one variant"
                )
        return self


class Config(_Model):
    """A repository's `wheelpin.toml`."""

    version: Annotated[Literal[1], Field(description="The config format's version.")] = 1
    defaults: Annotated[Defaults, Field(description="Settings for every component.")] = Defaults()
    component: Annotated[
        Annotated[list[Component], Field(min_length=1)],
        Field(description="The components: each an upstream whose wheel is pinned here."),
    ]
    # Unique component names are checked by `configfile`, which can name the line.

    @property
    def components(self) -> list[Component]:
        return self.component

    def get(self, name: str) -> Component | None:
        return next((c for c in self.component if c.name == name), None)

    def unknown_components(self, names: list[str]) -> str | None:
        """The sentence every command gives for component names (`--component`) the config
        has none of, with the closest name it has for a misspelt one; None when it has each."""
        missing = [name for name in names if self.get(name) is None]
        if not missing:
            return None
        have = [component.name for component in self.component]
        close = [found[0] for name in missing if (found := difflib.get_close_matches(name, have, n=1))]
        return f"no component {', '.join(map(repr, missing))} (its components: {', '.join(have)}" + (
            f"; did you mean {', '.join(dict.fromkeys(close))}?)" if close else ")"
        )


# Where the schema is published (config/wheelpin.schema.json, kept equal to
# `wheelpin config schema` by tests/test_config_schema.py), for editors and SchemaStore.
SCHEMA_ID = SCHEMA_URL
SCHEMA_EXAMPLES: dict[tuple[str, str], list[Any]] = {  # (model, field) → examples an editor offers
    ("Defaults", "schedule"): ["30m", "6h", "1d", "0 6 * * 1-5"],
    ("Defaults", "timezone"): ["UTC", "Europe/Berlin", "America/Los_Angeles"],
    ("Component", "schedule"): ["2h", "*/15 * * * *"],
    ("Component", "name"): ["lmcache", "mooncake"],
    ("Upstream", "repo"): ["https://github.com/LMCache/LMCache", "https://github.com/kvcache-ai/Mooncake"],
    ("Upstream", "branch"): ["dev", "main"],
    ("Upstream", "tags"): ["v*"],
    ("Wheel", "distribution"): ["lmcache", "mooncake-transfer-engine"],
    ("Wheel", "archs"): [["gfx942", "gfx950"]],
    ("Wheel", "forbid_needed"): [["libcudart.so.*", "libcuda.so.*"]],
    ("Wheel", "size_growth_warn"): [0.2, 0.5, 0],
    ("ActionsBuild", "workflow"): ["build-lmcache.yml"],
    ("ActionsBuild", "inputs"): [{"commit": "{sha}"}],
    ("Image", "repository"): ["ghcr.io/your-org/lmcache-wheel", "oci:../images"],
    ("Image", "tag"): ["{component}-{version}", "v{version_base}-g{sha8}"],
    ("DockerfileArgPin", "file"): ["docker/Dockerfile.rocm"],
    ("DockerfileArgPin", "image_arg"): ["LMCACHE_WHEEL_IMAGE"],
    ("DockerfileArgPin", "sha256_arg"): ["LMCACHE_WHEEL_SHA256"],
    ("DockerfileFromPin", "file"): ["docker/Dockerfile.rocm"],
    ("DockerfileFromPin", "from_stage"): ["wheels"],
    ("DockerfileFromPin", "sha256_arg"): ["LMCACHE_WHEEL_SHA256"],
    ("Component", "constraints"): [["numpy==2.3.5", "torch==2.9.0"]],
}


def json_schema() -> dict[str, Any]:
    """The config's JSON Schema (draft 2020-12) as published: every property described,
    examples where a value is not obvious, an `$id` where it lives."""
    schema = Config.model_json_schema()
    definitions = schema.get("$defs", {})
    for (model, field_name), examples in SCHEMA_EXAMPLES.items():
        holder = schema if model == "Config" else definitions[model]
        holder["properties"][field_name]["examples"] = examples
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "wheelpin config",
        "description": "wheelpin.toml (or .github/wheelpin.toml): which upstreams feed which ROCm wheels into "
        "which pins of this repository's Dockerfiles. " + PROJECT_URL,
    }

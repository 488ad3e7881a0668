"""The model of a repository's components: which upstream feeds which wheel into which pins.

Read from `.github/wheelpin.toml` (or `wheelpin.toml`, or `--config`). The key names of
docs/design.md §3 are a contract; everything is checked here, before any pass runs, and
`loader` reports each error with the file, the key path and the line.
"""

from __future__ import annotations

import datetime
import functools
import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .amdgpu import TargetId
from .imageref import ImageRefError, parse_repository
from .localversion import normalized_segment
from .requirements import parse_requirement
from .templates import (
    COMMAND_FIELDS,
    COMMIT_FIELDS,
    INPUT_FIELDS,
    TemplateError,
    check_fields,
    fields_of,
    validate_tag_template,
)

_NAME = r"^[a-z0-9][a-z0-9._-]*$"
_ARG = r"^[A-Za-z_][A-Za-z0-9_]*$"
_DISTRIBUTION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_PYTHON_TAG = re.compile(r"^(?:cp|pp|py)[0-9]{1,3}t?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # NUL ends a path for the OS; others only confuse
_INTERVAL = re.compile(r"^([0-9]+)\s*(m|h|d)$")
MIN_INTERVAL = 5  # minutes
MAX_INTERVAL = 366 * 1440  # minutes: a year, a leap one too



CONFIG_FILES = (".github/wheelpin.toml", "wheelpin.toml")  # looked for in this order

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_schedule(value: str) -> str:
    """A 5-field crontab line (`*/30 * * * 1-5`, `@daily`; read as cron reads it, see
    `crontab_fields`) or an interval (`30m`, `6h`, `1d`) of at least `MIN_INTERVAL`
    minutes (a poll is a `git ls-remote` and GitHub requests) and at most a year."""
    match = _INTERVAL.match(value.strip())
    if match:
        # a digit count first: int() of thousands of digits is slow, then refused
        if len(match.group(1).lstrip("0")) > 9 or (interval_minutes(value) or 0) > MAX_INTERVAL:
            raise ValueError(f"schedule {_shown(value)} is longer than {MAX_INTERVAL // 1440} days")
        if (interval_minutes(value) or 0) < MIN_INTERVAL:
            raise ValueError(f"schedule {_shown(value)} is shorter than {MIN_INTERVAL} minutes")
        return value
    from cronsim import CronSim

    fields = crontab_fields(value)
    try:
        cron = CronSim(fields, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
        next(cron)
    except StopIteration:
        raise ValueError(f"schedule {_shown(value)} never fires") from None
    times = sorted(hour * 60 + minute for hour in cron.hours for minute in cron.minutes)
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    if min(gaps, default=1440) < MIN_INTERVAL or (
            times[0] + 1440 - times[-1] < MIN_INTERVAL and _two_days_running(cron)):
        raise ValueError(f"schedule {_shown(value)} fires more often than every {MIN_INTERVAL} minutes")
    return value


# crontab(5) (https://man7.org/linux/man-pages/man5/crontab.5.html): these shortcuts stand
# for these lines; `@reboot` means nothing to a loop that is already running.
_SHORTCUTS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
              "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
              "@hourly": "0 * * * *"}


def crontab_fields(schedule: str) -> str:
    """The five fields of a crontab line, a shortcut (`@daily`) spelled out; a ValueError
    (one sentence) when it is not one. The line is read by cronsim as cron reads it
    (crontab(5)): day of week 0 and 7 are Sunday, names (`MON-FRI`, `JAN`) work, and when
    both day of month and day of week are restricted either one matching is enough.
    APScheduler 3's own `CronTrigger.from_crontab` counts Monday as 0 and refuses 7, which
    its maintainers say 3.x keeps (agronholm/apscheduler#286, #1102)."""
    from cronsim import CronSim, CronSimError

    fields = _SHORTCUTS.get(schedule.strip().lower(), schedule.strip())
    if fields.startswith("@"):
        raise ValueError(f"schedule {_shown(schedule)} is not a crontab shortcut (use one of {', '.join(_SHORTCUTS)})")
    if len(fields.split()) != 5:
        raise ValueError(f"schedule {_shown(schedule)} is neither an interval (30m, 6h) nor a crontab line "
                         "of five fields (minute hour day-of-month month day-of-week)")
    try:
        CronSim(fields, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    except (CronSimError, ValueError) as exc:  # ValueError: int() of thousands of digits
        problem = (f"its {str(exc).removeprefix('Bad ')} field is wrong" if isinstance(exc, CronSimError)
                   else "a number in it is far too long")
        raise ValueError(f"schedule {_shown(schedule)} is neither an interval (30m, 6h) nor a crontab line: "
                         f"{problem}") from None
    return " ".join(fields.split())


def _two_days_running(cron: Any) -> bool:
    """Whether a crontab line fires on two days in a row (over 28 years: the calendar's
    weekdays repeat then), so that its last time of a day and first of the next both come."""
    day = datetime.date(2026, 1, 1)
    matched = False
    for _ in range(28 * 366):
        matches = day.month in cron.months and cron.match_day(day)
        if matched and matches:
            return True
        matched, day = matches, day + datetime.timedelta(days=1)
    return False


def _shown(schedule: str) -> str:
    """A schedule as an error names it: quoted, and cut when absurdly long."""
    return repr(schedule if len(schedule) <= 60 else schedule[:57] + "...")


def interval_minutes(schedule: str) -> int | None:
    """The minutes of an interval schedule (`30m`, `6h`, `1d`); None for a crontab line."""
    match = _INTERVAL.match(schedule.strip())
    if not match:
        return None
    return int(match.group(1)) * {"m": 1, "h": 60, "d": 1440}[match.group(2)]


def check_timezone(value: str) -> str:
    """An IANA time zone name (`Europe/Berlin`, `UTC`) that zoneinfo knows."""
    import zoneinfo

    try:
        if value in _zone_names():
            zoneinfo.ZoneInfo(value)
            return value
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        pass
    raise ValueError(f"timezone {_shown(value)} is not an IANA time zone name such as Europe/Berlin or UTC")


@functools.cache
def _zone_names() -> frozenset[str]:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones()) | {"UTC"}


class Author(_Model):
    name: str = "wheelpin[bot]"
    email: str = "wheelpin@users.noreply.github.com"


class Defaults(_Model):
    """Repository-wide settings; a component may override labels, schedule, quiet period."""

    base_branch: str = "main"
    branch_prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+/$")] = "wheelpin/"
    labels: list[str] = ["wheelpin"]
    schedule: str = "30m"
    timezone: str = Field(default="UTC", description="the IANA time zone crontab lines are read in, "
                          "such as Europe/Berlin (intervals do not care)")
    quiet_minutes: Annotated[int, Field(ge=0)] = 0
    author: Author = Author()
    signoff: bool = False

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        return check_schedule(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        return check_timezone(value)


class Upstream(_Model):
    """Any git URL (https, ssh, file://, a local path) and a branch or a tag pattern."""

    repo: Annotated[str, Field(min_length=1)]
    branch: str | None = None
    tags: str | None = Field(default=None, description="the newest release tag by version: a glob such as "
                             "v* , or a pattern naming the version part, such as v{version}-rocm")

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: str | None) -> str | None:
        if value is not None:
            from .tagversions import TagPattern

            TagPattern.parse(value)
        return value

    @model_validator(mode="after")
    def _one_ref(self) -> Upstream:
        if (self.branch is None) == (self.tags is None):
            raise ValueError("give exactly one of upstream.branch or upstream.tags")
        return self


class Wheel(_Model):
    distribution: str
    archs: list[str] = []
    require_needed: list[str] = []
    forbid_needed: list[str] = []
    rocm: bool = Field(default=True, description="refuse CUDA libraries and CUDA device code")
    python_tags: list[str] = Field(default=[], description="one wheel per tag, e.g. cp310…cp313")
    version_carries_commit: bool = Field(
        default=True, description="the version's local part holds g<sha8> (LMCache yes, Mooncake no)"
    )
    local_segments: list[str] = Field(
        default=[], description="segments the wheel's local version must carry, e.g. torch2.10 and "
        "cxx11abi1: the ABI its image tag promises"
    )

    @field_validator("distribution")
    @classmethod
    def _distribution(cls, value: str) -> str:
        if not _DISTRIBUTION.match(value):
            raise ValueError(f"{value!r} is not a distribution name")
        return value

    @field_validator("archs")
    @classmethod
    def _archs(cls, value: list[str]) -> list[str]:
        for arch in value:
            TargetId.parse_known(arch)
        return value

    @field_validator("local_segments")
    @classmethod
    def _local_segments(cls, value: list[str]) -> list[str]:
        return [normalized_segment(segment) for segment in value]

    @field_validator("python_tags")
    @classmethod
    def _python_tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not _PYTHON_TAG.match(tag):
                raise ValueError(f"{tag!r} is not a python tag such as cp312")
        if len(set(value)) != len(value):
            raise ValueError("python_tags lists a tag twice")
        return value


class Build(_Model):
    """A local `command`, or a GitHub Actions `workflow` dispatched with `inputs`."""

    command: str | list[str] | None = None
    workflow: str | None = None
    inputs: dict[str, str] = {}
    ref: str | None = Field(default=None, description="the downstream ref to dispatch on")
    publishes_image: bool = Field(default=False, description="the workflow pushes the image itself "
                                  "(as ATOM's does): wheelpin adopts it, verified, and never re-pushes")
    timeout_minutes: Annotated[int, Field(gt=0)] = 180

    @model_validator(mode="after")
    def _one_builder(self) -> Build:
        if (self.command is None) == (self.workflow is None):
            raise ValueError("give exactly one of build.command or build.workflow")
        if (self.inputs or self.publishes_image) and self.workflow is None:
            raise ValueError("build.inputs and build.publishes_image go with build.workflow")
        parts = [self.command] if isinstance(self.command, str) else list(self.command or [])
        for part in parts:
            _fields(part, COMMAND_FIELDS, "command")
        for key, value in self.inputs.items():
            _fields(value, INPUT_FIELDS, f"inputs.{key}")
        return self


def _fields(template: str, allowed: frozenset[str], where: str) -> list[str]:
    try:
        return check_fields(template, allowed)
    except TemplateError as exc:
        raise ValueError(f"{where}: {exc}") from None


class Image(_Model):
    repository: str = Field(description="host/path, or oci:/folder for an OCI layout folder")
    tag: str = Field(description="template of {sha} {sha8} {version} {version_base} {component}")

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
    if (not value or path.is_absolute() or ".." in path.parts or "\\" in value
            or _CONTROL.search(value) or path == PurePosixPath(".")):
        raise ValueError(f"{value!r} must be a path inside the repository, from its root "
                         "(no '..', no absolute path)")
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
    return (f"{file} resolves to {target}, outside the repository {real_root}: wheelpin edits "
            "only files inside it")


class Pin(_Model):
    """One place a Dockerfile pins the component: an ARG (+ its sha256 ARG) or a FROM."""

    file: str
    image_arg: Annotated[str, Field(pattern=_ARG)] | None = None
    sha256_arg: Annotated[str, Field(pattern=_ARG)] | None = None
    from_stage: str | None = Field(default=None, description="pin the FROM line `AS <stage>`")
    python_tag: str | None = Field(default=None, description="which wheel sha256_arg names")

    @field_validator("file")
    @classmethod
    def _file(cls, value: str) -> str:
        return pin_path(value)

    @model_validator(mode="after")
    def _one_site(self) -> Pin:
        if (self.image_arg is None) == (self.from_stage is None):
            raise ValueError("give exactly one of image_arg or from_stage")
        if self.python_tag is not None and self.sha256_arg is None:
            raise ValueError("python_tag names the wheel of sha256_arg: give sha256_arg too")
        return self


class Component(_Model):
    name: Annotated[str, Field(pattern=_NAME, max_length=64)]
    upstream: Upstream
    wheel: Wheel
    build: Build
    image: Image
    constraints: list[str] = []
    constraints_file: str | None = None
    pins: Annotated[list[Pin], Field(min_length=1)]
    labels: list[str] | None = None
    schedule: str | None = None
    quiet_minutes: Annotated[int, Field(ge=0)] | None = None

    @field_validator("constraints")
    @classmethod
    def _constraints(cls, value: list[str]) -> list[str]:
        for index, text in enumerate(value):
            parse_requirement(text, source=f"constraints[{index}]")
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        return None if value is None else check_schedule(value)

    @model_validator(mode="after")
    def _consistent(self) -> Component:
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
                raise ValueError(
                    f"pins[{index}].python_tag: {pin.python_tag!r} is not in wheel.python_tags"
                )
            if pin.sha256_arg and len(tags) > 1 and pin.python_tag is None:
                raise ValueError(
                    f"pins[{index}].sha256_arg: the image holds {len(tags)} wheels, so it needs "
                    "a python_tag naming its wheel"
                )
        return self


class Config(_Model):
    """A repository's `wheelpin.toml`."""

    version: Literal[1] = 1
    defaults: Defaults = Defaults()
    component: Annotated[list[Component], Field(min_length=1)]
    # Unique component names are checked by `configfile`, which can name the line.

    @property
    def components(self) -> list[Component]:
        return self.component

    def get(self, name: str) -> Component | None:
        return next((c for c in self.component if c.name == name), None)

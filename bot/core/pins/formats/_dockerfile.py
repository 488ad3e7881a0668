"""What the Dockerfile formats share: the files they look in, the file read by the BuildKit
parser (`core/pins/locate.py`, once per text) and the defaults of an ARG, which both
formats' wheel sha256s are."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from ...config.model import DockerfileArgPin, DockerfileFromPin
from ..locate import DockerfileError, ParsedDockerfile, ValueSite, parse
from .base import PinError, PinProblem, PinSites, closest


def is_dockerfile(file: str) -> bool:
    """Dockerfile, Dockerfile.rocm, atom_release.dockerfile, Containerfile and the like."""
    lower = PurePosixPath(file).name.lower()
    return (
        lower in ("dockerfile", "containerfile")
        or lower.startswith(("dockerfile.", "containerfile."))
        or lower.endswith((".dockerfile", ".containerfile"))
    )


def parsed(text: str, file: str) -> ParsedDockerfile:
    try:
        return parse(text, where=file)
    except DockerfileError as exc:
        raise PinError(str(exc), key="file") from None


def arg_sites(dockerfile: ParsedDockerfile, name: str, file: str) -> tuple[ValueSite, ...]:
    """Every default of ARG `name`, all equal (an ARG redeclared per stage moves as one)."""
    declarations = dockerfile.declarations(name)
    if not declarations:
        raise PinError(f"{file}: ARG {name} is not declared" + closest("ARGs", name, (a.name for a in dockerfile.args)))
    sites = tuple(d.default for d in declarations if d.default is not None)
    if not sites:
        raise PinError(f"{file}:{declarations[0].line}: ARG {name} has no default value to pin")
    values = {site.value for site in sites}
    if len(values) > 1:
        lines = ", ".join(str(site.line) for site in sites)
        raise PinError(f"{file}: ARG {name} has defaults that disagree (lines {lines})")
    return sites


def with_sha256(
    pin: DockerfileArgPin | DockerfileFromPin,
    dockerfile: ParsedDockerfile,
    image: Callable[[], tuple[ValueSite, ...]],
) -> PinSites:
    """The sites `image` finds, and the defaults of the pin's `sha256_arg` when it has one;
    a problem of each is found, so a PinError says both (the sha256 ARG's at its key)."""
    problems: list[PinProblem] = []
    sites: tuple[ValueSite, ...] = ()
    sha256: tuple[ValueSite, ...] = ()
    try:
        sites = image()
    except PinError as exc:
        problems += exc.problems
    if pin.sha256_arg:
        try:
            sha256 = arg_sites(dockerfile, pin.sha256_arg, pin.file)
        except PinError as exc:
            problems += (PinProblem(problem.sentence, "sha256_arg") for problem in exc.problems)
    if problems:
        raise PinError.every(problems)
    return PinSites(sites, sha256)

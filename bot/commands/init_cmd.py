"""`wheelpin init`: a first `.github/wheelpin.toml` for a downstream repository, from the
wheel pins its files already hold.

It finds the digest-pinned wheel images in every file a pin format looks in (its
Dockerfiles; core/pins/scan.py), reads each one as `image show`
does (adapters/imageread.py: wheelpin's annotations, else the wheels in its layers, so an
image another tool pushed reads the same), proposes the component from them
(core/config/initconfig.py), asks for what it cannot infer — the upstream, its branch or tag
pattern, the build — or takes it from options, and writes the config: checked before it is
written, atomically (a temporary file renamed). Where a config exists, the component's
tables are added to it, the rest of its text kept (core/config/addcomponent.py); a
component it has already is replaced only with `--force`. Then it runs `config validate`
on it and says what to run next.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..adapters.configdisk import load_text_at
from ..adapters.git import git
from ..adapters.github.workflowfile import WORKFLOWS, workflow_build, workflow_of
from ..adapters.imageread import read_image
from ..adapters.imagestore import layout_folder
from ..adapters.upstream import default_branch, upstream_url
from ..app.settings import Settings
from ..app.wiring import Registries, target_of
from ..core.config.addcomponent import NotAddable, components_of, with_component
from ..core.config.initconfig import (
    Build,
    Draft,
    PinnedImage,
    Upstream,
    component_tables,
    distributions,
    group,
    propose,
    render,
)
from ..core.config.load import ConfigInvalid
from ..core.config.model import CONFIG_FILES
from ..core.errors import ConfigError, TransientError, UsageError, WheelpinError
from ..core.image.reference import ImageRef, LayoutTarget
from ..core.pins.formats.base import FoundPin, PinError, Skipped
from ..core.pins.scan import looked_in, scan
from . import config_cmd
from .output import emit_json, emit_text

TARGET = CONFIG_FILES[0]  # .github/wheelpin.toml
MAX_PIN_FILE = 1 << 20  # a file larger than this is no file of pins wheelpin edits
NEXT_STEPS = ("wheelpin config validate --online", "wheelpin reconcile --once --dry-run")


@dataclass(frozen=True, kw_only=True)
class InitOptions:
    repo: Path | None = None
    upstream: str | None = None
    branch: str | None = None
    tags: str | None = None
    build_command: str | None = None
    build_workflow: str | None = None
    inputs: tuple[str, ...] = ()
    component: str | None = None
    image_repository: str | None = None  # where the pinned images are read, when not where the pins say
    yes: bool = False
    force: bool = False
    json: bool = False


def repository_root(repo: Path | None) -> Path:
    """The repository init works on: `--repo` or the current folder, or the top of the git
    working tree either is in (init run from `docker/` writes at the top)."""
    start = repo if repo is not None else Path.cwd()
    if not start.is_dir():
        raise UsageError(f"{start}: no such repository folder")
    top = git(["rev-parse", "--show-toplevel"], cwd=start, check=False).strip()
    return Path(top) if top else start.resolve()


def pin_files(root: Path) -> list[str]:
    """The repository's files some pin format looks in (its Dockerfiles), relative to
    `root`: those git tracks (so nothing ignored or vendored by a build), else every one
    under it."""
    listed = git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root, check=False)
    names = (
        [n for n in listed.split("\0") if n]
        if listed
        else [path.relative_to(root).as_posix() for path in root.rglob("*") if ".git" not in path.parts]
    )
    return sorted(n for n in set(names) if looked_in(n) and (root / n).is_file())


def find_pins(root: Path) -> tuple[list[FoundPin], list[Skipped], int]:
    """Every wheel pin of the repository, what was skipped and why, and how many files were read."""
    found: list[FoundPin] = []
    skipped: list[Skipped] = []
    files = pin_files(root)
    for file in files:
        try:
            data = (root / file).read_bytes()[: MAX_PIN_FILE + 1]
            if len(data) > MAX_PIN_FILE:
                raise PinError(f"{file}: over {MAX_PIN_FILE} bytes")
            pins, passed = scan(data.decode("utf-8"), file)
        except (OSError, UnicodeDecodeError, PinError) as exc:
            skipped.append(Skipped(file, 1, "the file", f"not read ({exc})"))
            continue
        found += pins
        skipped += passed
    return found, skipped, len(files)


def read_pinned(
    pins: list[FoundPin], settings: Settings, *, repository: str | None = None, root: Path = Path()
) -> tuple[list[PinnedImage], list[Skipped]]:
    """What each pinned image holds; an image that cannot be read, or holds no wheel of one
    distribution, is skipped with why. A transient failure (a registry down) stops init:
    what it would infer without the image is guesswork. `repository` (`--image-repository`)
    is where the images are read by digest when the pins name another place: a mirror, or
    the `localhost/…` name a Dockerfile gives images kept in an OCI layout folder."""
    registries = Registries(settings)
    images: list[PinnedImage] = []
    skipped: list[Skipped] = []
    for pin in pins:
        what = pin.what
        ref = pin.ref
        assert ref.digest is not None  # pinscan keeps digest pins alone
        target = ref if repository is None else _read_from(repository, ref.digest, root)
        try:
            info = read_image(registries.store(target), ref.digest)
        except TransientError as exc:
            where = ref.repository if repository is None else repository
            raise TransientError(f"reading the image pinned at {pin.where} ({where}): {exc.message}") from None
        except WheelpinError as exc:
            skipped.append(Skipped(pin.file, pin.line, what, f"its image cannot be read: {exc.message}"))
            continue
        image = PinnedImage(pin, info.wheels, info.annotations, info.labels, info.metadata_from)
        if not info.wheels:
            skipped.append(Skipped(pin.file, pin.line, what, "its image holds no wheel"))
        elif len(distributions(image)) > 1:
            skipped.append(
                Skipped(
                    pin.file,
                    pin.line,
                    what,
                    "its image holds wheels of several distributions ("
                    + ", ".join(sorted(distributions(image)))
                    + "): one component has one",
                )
            )
        else:
            images.append(image)
    return images, skipped


def _read_from(repository: str, digest: str, root: Path) -> ImageRef | LayoutTarget:
    """The image of `digest` in `repository`, an `oci:FOLDER` one relative to the repository
    root as the pass reads it (`image.repository` in the config init writes)."""
    target = target_of(f"{repository}@{digest}")
    if isinstance(target, LayoutTarget):
        folder = layout_folder(repository, root)
        if not (folder / "oci-layout").is_file():
            raise UsageError(
                f"--image-repository {repository}: {folder} is not an OCI image layout folder (no oci-layout file)"
            )
        return LayoutTarget(str(folder), digest=digest)
    return target


class Asker:
    """What init cannot infer: from an option, else asked on a terminal, else (`--yes`,
    `--json`, no terminal) a default, else one sentence naming the option."""

    def __init__(self, *, interactive: bool) -> None:
        self.interactive = interactive

    def value(self, question: str, given: str | None, default: str | None, option: str) -> str:
        if given:
            return given
        if self.interactive:
            sys.stderr.write(f"{question}" + (f" [{default}]" if default else "") + ": ")
            sys.stderr.flush()
            answer = sys.stdin.readline().strip()
            if answer or default:
                return answer or str(default)
        elif default:
            return default
        raise UsageError(f"{option} is needed: {question[:1].lower() + question[1:]}")


@dataclass(frozen=True)
class Existing:
    """The config init adds to: its file, its text as written, its components' names."""

    path: Path
    text: str
    components: list[str]

    def has_already(self, name: str) -> UsageError:
        return UsageError(
            f"{self.path} has a component {name} already: wheelpin init leaves it as it is "
            "(pass --force to replace that component's tables, and only those)"
        )


def read_existing(path: Path) -> Existing:
    """The config as its maintainer wrote it, byte for byte (its line endings kept)."""
    try:
        text = path.read_bytes().decode("utf-8")
        return Existing(path, text, components_of(text))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} exists but cannot be read ({exc}): wheelpin init adds to a config it reads") from None
    except NotAddable as exc:
        raise UsageError(f"{path} exists, but {exc}: wheelpin init adds a component to a config it reads") from None


def choose_component(
    groups: dict[str, list[PinnedImage]], wanted: str | None, asker: Asker, existing: Existing | None = None
) -> str:
    """The component `--component` names, else the one pinned here (or the one the existing
    config lacks), else asked, the question naming where each is pinned."""
    names = list(groups)
    if wanted is not None:
        if wanted not in groups:
            raise UsageError(f"no wheel pin of component {wanted!r} was found (found: {', '.join(names)})")
        return wanted
    if len(names) == 1:
        return names[0]
    configured = existing.components if existing is not None else []
    new = [name for name in names if name not in configured]
    if existing is not None and len(new) == 1:
        return new[0]
    if existing is not None and not new:
        raise UsageError(
            f"{existing.path} has a component of every wheel image pinned here ({', '.join(names)}): "
            "pass --component NAME --force to replace one's tables"
        )
    where = "; ".join(f"{name} at {', '.join(image.pin.where for image in groups[name])}" for name in new)
    question = (
        f"Several wheel images are pinned here ({where}); which one is this config's"
        if existing is None
        else f"Several wheel images pinned here have no component in {existing.path} ({where}); which one to add"
    )
    answer = asker.value(question, None, None, "--component NAME")
    return choose_component(groups, answer, asker, existing)


def upstream_of(options: InitOptions, draft: Draft, root: Path, asker: Asker) -> Upstream:
    repo = asker.value(
        "The upstream git repository the wheel is built from", options.upstream, draft.source, "--upstream URL"
    )
    said = (
        "from --upstream"
        if options.upstream
        else "from the image's org.opencontainers.image.source"
        if repo == draft.source
        else "as answered"
    )
    if options.branch and options.tags:
        raise UsageError("give --branch or --tags, not both")
    if options.tags:
        return Upstream(repo, tags=options.tags, said=said)
    branch = asker.value(
        f"The branch of {repo} to follow (or pass --tags PATTERN for releases)",
        options.branch,
        default_branch(upstream_url(repo, root)),
        "--branch B (or --tags PATTERN)",
    )
    return Upstream(repo, branch=branch, said=said + ("" if options.branch else "; its HEAD branch"))


def build_of(options: InitOptions, root: Path, name: str, asker: Asker) -> Build:
    """The build from the options, else the repository's own workflow named after the
    component (offered, or taken with --yes), else asked: a command, or a workflow file."""
    inputs = {}
    for item in options.inputs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--input {item!r}: give NAME=VALUE, such as commit={{sha}}")
        inputs[key] = value
    if inputs and not options.build_workflow:
        raise UsageError("--input goes with --build-workflow FILE")
    if options.build_workflow:
        return Build(workflow=options.build_workflow, inputs=inputs)
    if options.build_command:
        return Build(command=options.build_command)
    workflows = read_workflows(root)
    found = workflow_build(workflows, name)
    answer = asker.value(
        "The build: a shell command run in a checkout of the upstream (it writes the wheels "
        f"to {{out}}), or a workflow of {WORKFLOWS}",
        None,
        found.workflow if found else None,
        "--build-command '…' or --build-workflow FILE",
    )
    if found is not None and answer == found.workflow:
        return found
    if answer in workflows:
        return workflow_of(answer, workflows[answer])
    return Build(command=answer)


def read_workflows(root: Path) -> dict[str, str]:
    """The workflow files of the repository (.github/workflows/*.yml, *.yaml) and their text."""
    folder = root / WORKFLOWS
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.y*ml")) if folder.is_dir() else []:
        try:
            text = config_cmd.read_bounded(root, f"{WORKFLOWS}/{path.name}")
        except (OSError, UnicodeDecodeError):
            continue
        if text is not None and path.suffix in (".yml", ".yaml"):
            found[path.name] = text
    return found


def write_new(path: Path, text: str, *, force: bool, mode: int | None = None) -> None:
    """Write `path` whole or not at all: a temporary file beside it, renamed over it (with
    `force`) or linked to its name, which fails if a file took that name meanwhile. `mode`:
    the permissions of the file it replaces, else those the umask gives."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask if mode is None else mode)
        if force:
            os.replace(temporary, path)
        else:
            try:
                os.link(temporary, path)
            except FileExistsError:
                raise UsageError(f"{path} was written meanwhile: run wheelpin init again to add to it") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    finally:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def existing_config(root: Path) -> Path | None:
    return next((root / name for name in CONFIG_FILES if (root / name).exists()), None)


def init_command(options: InitOptions, settings: Settings) -> int:
    root = repository_root(options.repo)
    found_config = existing_config(root)
    existing = read_existing(found_config) if found_config is not None else None
    if existing is not None and options.component in existing.components and not options.force:
        raise existing.has_already(options.component)  # said before any image is read
    interactive = not (options.yes or options.json) and sys.stdin.isatty()
    asker = Asker(interactive=interactive)
    say: Callable[[str], None] = (lambda text: None) if options.json else emit_text
    pins, skipped, files = find_pins(root)
    images, unread = read_pinned(pins, settings, repository=options.image_repository, root=root)
    skipped += unread
    if not images:
        for item in skipped:
            sys.stderr.write(f"  skipped {item}\n")
        if pins:
            raise ConfigError(
                f"{root}: none of the {len(pins)} wheel pin(s) found names an image holding "
                "wheels that could be read (said above); wheelpin init starts from one"
            )
        raise ConfigError(
            f"{root}: no wheel image pinned by digest in its {files} Dockerfile(s)"
            + (f" ({len(skipped)} reference(s) skipped, said above)" if skipped else "")
            + '; wheelpin init starts from one (ARG X_IMAGE="repo:tag@sha256:…" or '
            'FROM repo:tag@sha256:… AS stage; docs/init.md, "Your first pin", says how to get one)'
        )
    groups = group(images)
    name = choose_component(groups, options.component, asker, existing)
    if existing is not None and name in existing.components and not options.force:
        raise existing.has_already(name)
    draft = propose(name, groups[name])
    if options.image_repository is not None:
        draft.repository = options.image_repository
        draft.said["image.repository"] = "from --image-repository, where the pinned images were read"
    _say_found(say, root, groups, name, draft, skipped, existing.components if existing else [])
    upstream = upstream_of(options, draft, root, asker)
    build = build_of(options, root, name, asker)
    if existing is None:
        target, done, how = root / TARGET, "Wrote", "new"
        text = render(draft, upstream, build, written_by="wheelpin init")
    else:
        target = existing.path
        done, how = ("Replaced in", "replaced") if name in existing.components else ("Added to", "added")
        try:
            text = with_component(existing.text, component_tables(draft, upstream, build), name)
        except NotAddable as exc:
            raise UsageError(f"component {name} cannot be put in {target}: {exc}") from None
    check_before_writing(text, target, root)
    if existing is not None and read_existing(existing.path).text != existing.text:  # edited while init asked
        raise UsageError(f"{existing.path} changed while init ran, so nothing was written: run wheelpin init again")
    write_new(
        target, text, force=existing is not None, mode=None if existing is None else target.stat().st_mode & 0o7777
    )
    follows = f"branch {upstream.branch}" if upstream.branch else f"tags {upstream.tags}"
    builds = (
        f"command `{build.command}`"  # quoted: a command may end in `.`, which the sentence's period would double
        if build.command is not None
        else f"workflow {build.workflow}"
        + (f" with {', '.join(f'{k}={v}' for k, v in build.inputs.items())}" if build.inputs else "")
    )
    say(
        f"{done} {target}: component {name} ({draft.distribution}, tag {draft.tag}),\n"
        f"  following {upstream.repo} {follows}, built by {builds}."
    )
    if options.json:
        validated, code = _validate_json(target, root)
        emit_json(
            {
                "file": str(target),
                "root": str(root),
                "written": True,
                "config": how,  # new | added | replaced
                "component": draft.to_json(),
                "upstream": vars(upstream),
                "build": {
                    "command": build.command,
                    "workflow": build.workflow,
                    "inputs": dict(build.inputs),
                    "said": build.said,
                },
                "found": [i.pin.where for i in images],
                "skipped": [vars(s) for s in skipped],
                "validate": validated,
                "next": list(NEXT_STEPS),
            }
        )
        return code
    code = config_cmd.validate_command(file=target, repo=root, as_json=False)
    say("Next:\n" + "\n".join(f"  {step}" for step in NEXT_STEPS))
    return code


def _say_found(
    say: Callable[[str], None],
    root: Path,
    groups: dict[str, list[PinnedImage]],
    name: str,
    draft: Draft,
    skipped: list[Skipped],
    configured: list[str],
) -> None:
    say(f"Found in {root}:")
    for image in groups[name]:
        wheel = image.wheels[0]
        say(
            f"  {image.pin.where}  {image.pin.what}  {image.pin.reference}\n"
            f"    {len(image.wheels)} wheel(s) of {wheel.name} {wheel.version}, read from its {image.metadata_from}"
            + (f"; commit {draft.commit}" if draft.commit else "")
        )
    for other, more in groups.items():
        if other != name:
            has = "in the config already" if other in configured else "not in this config"
            say(f"  (also {other}, at {', '.join(i.pin.where for i in more)}: {has})")
    for item in skipped:
        say(f"  skipped {item}")


def check_before_writing(text: str, target: Path, root: Path) -> None:
    """The config as the pass would load it and read its pins, before a byte is written:
    ConfigError naming every problem when it would not load (nothing is written then)."""
    try:
        loaded = load_text_at(text, path=target, root=root)
        refused, _said = config_cmd.pin_problems(loaded)
        if refused:
            raise ConfigInvalid(target, refused)
    except ConfigInvalid as exc:
        raise ConfigError(
            "the config init would write is not valid, so nothing was written: " + "; ".join(exc.problems)
        ) from None


def _validate_json(target: Path, root: Path) -> tuple[object, int]:
    """`config validate --json` on the written file, its document kept to be part of init's own."""
    from . import output

    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = config_cmd.validate_command(file=target, repo=root, as_json=True)
    output.emitted = False  # that document is inside init's, which is still to be printed
    return json.loads(captured.getvalue()), code

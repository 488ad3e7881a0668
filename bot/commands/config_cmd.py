"""`wheelpin config validate [FILE]` and `wheelpin config schema`."""

from __future__ import annotations

import errno
import itertools
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..adapters.github.workflowfile import MAX_WORKFLOW_BYTES, components_warnings
from ..adapters.upstream import folder_problem, host_folder
from ..core.config.load import ConfigInvalid, LoadedConfig
from ..core.config.model import CommandBuild, Component
from ..core.errors import UsageError
from ..core.pins.bump import pin_findings
from .output import emit_json, emit_text
from .repo import load

if TYPE_CHECKING:
    from ..app.settings import Settings


def validate_command(
    *,
    file: Path | None,
    repo: Path | None,
    as_json: bool,
    online: bool = False,
    settings: Settings | None = None,
    github_repo: str | None = None,
) -> int:
    """Check the config offline; with `online` (and the process's `settings`), then ask the
    outside world what the first pass will ask it (commands/preflight.py), and GitHub, for
    `github_repo`, whether each build workflow is on the base branch. Exit 2 for a
    problem, 4 when only some outside system did not answer, else 0."""
    if github_repo is not None and not online:
        raise UsageError("--github-repo goes with --online (GitHub is asked only then)")
    try:
        loaded = load(config=file, repo=repo)
        refused, said = pin_problems(loaded)
        refused += upstream_problems(loaded)
        if refused:
            raise ConfigInvalid(loaded.path, refused)
    except ConfigInvalid as exc:
        if as_json:
            emit_json(
                {
                    "file": str(exc.path),
                    "valid": False,
                    "problems": exc.problems,
                    "warnings": [],
                    **({"online": None} if online else {}),
                }
            )  # not asked: the config comes first
        else:
            for problem in exc.problems:
                sys.stderr.write(f"{problem}\n")
            sys.stderr.write(f"wheelpin: {exc.path}: {len(exc.problems)} problem(s)\n")
        return 2
    names = [component.name for component in loaded.config.components]
    warnings = said + command_warnings(loaded) + workflow_warnings(loaded)
    if online:
        assert settings is not None, "--online needs the settings (registries, cache folder)"
        return _online(loaded, names, warnings, as_json=as_json, settings=settings, github_repo=github_repo)
    if as_json:
        emit_json(
            {
                "file": str(loaded.path),
                "valid": True,
                "root": str(loaded.root),
                "components": names,
                "problems": [],
                "warnings": warnings,
            }
        )
    else:
        for warning in warnings:
            sys.stderr.write(f"warning: {warning}\n")
        emit_text(f"{loaded.path}: valid, {len(names)} component(s): {', '.join(names)}")
    return 0


def _online(
    loaded: LoadedConfig,
    names: list[str],
    warnings: list[str],
    *,
    as_json: bool,
    settings: Settings,
    github_repo: str | None,
) -> int:
    from ..app.wiring import Registries
    from .preflight import OK, PROBLEM, UNANSWERED, WARNING, online_checks, workflow_checks

    platform = None
    if github_repo is not None:  # its settings are checked before anything is asked
        from ..adapters.github.forge import github_platform
        from ..app.forges import github_access

        platform = github_platform(github_access(settings), github_repo)
    checks = online_checks(loaded, Registries(settings), cache=settings.cache_dir)
    if platform is not None and github_repo is not None:
        checks += workflow_checks(loaded, platform, github_repo)
    problems = [check.sentence for check in checks if check.outcome == PROBLEM]
    unanswered = [check.sentence for check in checks if check.outcome == UNANSWERED]
    warned = [check.sentence for check in checks if check.outcome == WARNING]  # said in their order below
    if as_json:
        emit_json(
            {
                "file": str(loaded.path),
                "valid": not problems,
                "root": str(loaded.root),
                "components": names,
                "problems": problems,
                "warnings": warnings + warned,
                "online": {
                    "checks": [check.to_json() for check in checks],
                    "answered": not unanswered,
                    "unanswered": unanswered,
                },
            }
        )
    else:
        for warning in warnings:
            sys.stderr.write(f"warning: {warning}\n")
        for check in checks:
            if check.outcome == OK:
                emit_text(check.sentence)
            elif check.outcome == WARNING:
                sys.stderr.write(f"warning: {check.sentence}\n")
            else:
                sys.stderr.write(f"{check.sentence}\n")
        if problems:
            sys.stderr.write(f"wheelpin: {loaded.path}: {len(problems)} problem(s) online\n")
        elif unanswered:
            sys.stderr.write(f"wheelpin: {loaded.path}: {len(unanswered)} check(s) got no answer; try again\n")
        else:
            emit_text(
                f"{loaded.path}: valid, {len(names)} component(s): {', '.join(names)}; "
                f"{len(checks)} online check(s) answered"
            )
    return 2 if problems else 4 if unanswered else 0


def pin_problems(loaded: LoadedConfig) -> tuple[list[str], list[str]]:
    """What the first pass would find in the pins, read from the config's repository as
    the pass reads them (core/pins/bump.py pin_findings): the problems it would stop at, and
    what it would only replace; each located at its pin in the config."""
    refused: list[str] = []
    said: list[str] = []
    for number, component in enumerate(loaded.config.components):
        texts: dict[str, str] = {}
        for index, pin in enumerate(component.pins):
            if pin.file in texts:
                continue
            try:
                texts[pin.file] = (loaded.root / pin.file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:  # the loader saw it exist; it may not read
                refused.append(
                    loaded.located(("component", number, "pins", index, "file"), f"{pin.file} cannot be read ({exc})")
                )
        if len(texts) < len({pin.file for pin in component.pins}):
            continue
        for finding in pin_findings(component, texts, loaded.config.components):
            where = ("component", number, "pins", finding.index, finding.key)
            (refused if finding.refused else said).append(loaded.located(where, finding.sentence))
    return refused, said


def upstream_problems(loaded: LoadedConfig) -> list[str]:
    """An `upstream.repo` naming a folder of this host that the pass could not fetch from
    (none, or no git repository in it), located at the key; the config is read from this
    host, where its paths lead (adapters/upstream.py folder_problem)."""
    problems: list[str] = []
    for number, component in enumerate(loaded.config.components):
        problem = folder_problem(component.upstream.repo, loaded.root)
        if problem:
            problems.append(loaded.located(("component", number, "upstream", "repo"), problem))
    return problems


def command_warnings(loaded: LoadedConfig) -> list[str]:
    """A `build.command` whose program is a relative path (`./build.sh`) absent from the
    upstream. It runs in a checkout of the upstream commit, which validate does not
    make: only an upstream that is a folder here is looked at, in its working tree
    (the commit built may differ), so this warns and never refuses; a remote upstream
    is not fetched for it."""
    warnings: list[str] = []
    for number, component in enumerate(loaded.config.components):
        program = _relative_program(component)
        if program is None:
            continue
        folder = host_folder(component.upstream.repo, loaded.root)
        if folder is None or not folder.is_dir() or (folder / program).exists():
            continue
        warnings.append(
            loaded.located(
                ("component", number, "build", "command"),
                f"{program} does not exist in {folder} (the build runs it in a checkout of the upstream commit)",
            )
        )
    return warnings


def _relative_program(component: Component) -> str | None:
    """The program of `build.command` when it is a relative path (`./build.sh`,
    `scripts/build`); None for one looked up on PATH, an absolute one, or a template
    or variable (its value is known only at the build)."""
    if not isinstance(component.build, CommandBuild):
        return None
    command = component.build.command
    try:
        words = command if isinstance(command, list) else shlex.split(command)
    except ValueError:  # unbalanced quotes: the shell says so at the build
        return None
    if isinstance(command, str):  # `NAME=value ./build.sh`: the shell's assignments come first
        words = list(itertools.dropwhile(lambda word: "=" in word.split("/", 1)[0], words))
    program = words[0] if words else ""
    if "/" not in program or program.startswith(("/", "~", "$")) or "{" in program:
        return None
    return program


def workflow_warnings(loaded: LoadedConfig) -> list[str]:
    """What the workflows the components dispatch lack (a run-name carrying the commit, the
    inputs given), read from `.github/workflows/` of the config's repository; each
    sentence names its component."""
    found = components_warnings(
        loaded.config.components, lambda path: read_bounded(loaded.root, path), where=str(loaded.root)
    )
    return [
        f"component {names[0]}: {warning}" if len(names) == 1 else f"components {warning}" for names, warning in found
    ]


def read_bounded(root: Path, path: str) -> str | None:
    """A file of the checkout at `root`, None if there is none. Past MAX_WORKFLOW_BYTES
    only that much is read (enough for the workflow check to refuse it)."""
    target = root / path
    if not target.exists():
        return None
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    if not target.is_file():  # a FIFO or a device would block or never end
        raise OSError(errno.EINVAL, "not a regular file", str(target))
    with target.open("rb") as stream:
        data = stream.read(MAX_WORKFLOW_BYTES + 1)
    if len(data) > MAX_WORKFLOW_BYTES:
        return data.decode("utf-8", errors="replace")  # only its size matters now
    return data.decode("utf-8")


def schema_command() -> int:
    from ..core.config.model import json_schema

    emit_text(json.dumps(json_schema(), indent=2))
    return 0

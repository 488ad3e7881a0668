"""Checking a GitHub Actions workflow that `build.workflow` dispatches, before it is dispatched.

Pure: the caller reads the workflow file (from a checkout, or from a repository on GitHub)
and gets back one sentence per problem. None of them stops wheelpin, so they are warnings:

- Finding the run a `workflow_dispatch` started relies, on servers that do not return its
  id (GitHub Enterprise Server), on the run's title carrying the full commit. A run's
  title is the workflow's `run-name:`, which may use the `github` and `inputs` contexts;
  without it (or with only whitespace) a dispatched run is titled with the workflow's name,
  which carries no commit. https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#run-name
  (now at https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#run-name)
- GitHub refuses a dispatch (422) of a workflow with no `workflow_dispatch` trigger, one
  that is given an input it does not declare ("Unexpected inputs provided"), or one not
  given an input it requires; and "the maximum number of top-level properties for
  `inputs` is 25". https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#onworkflow_dispatchinputs

`wheelpin init` also finds here the build a repository's own workflow makes (one named
after the component that can be dispatched, its commit inputs given the commit).

The YAML is read with PyYAML's `safe_load`, which reads YAML 1.1: an unquoted key `on`
becomes the boolean True, so the triggers are looked up under both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...core.config.model import ActionsBuild, Build, Component
from ...core.config.templates import TemplateError, fields_of

if TYPE_CHECKING:  # init's drafts: loaded by `wheelpin init` alone, not by `config validate`
    from ...core.config.initconfig import Build as DraftBuild

MAX_WORKFLOW_BYTES = 1 << 20  # a workflow file larger than this is not parsed
MAX_INPUTS = 25  # GitHub's limit on workflow_dispatch inputs
WORKFLOWS = ".github/workflows"

# What `safe_load` raises besides YAMLError: a bad date (`2020-13-45`) or an integer of
# too many digits is a ValueError, deep nesting a RecursionError.
_PARSE_ERRORS = (ValueError, RecursionError, OverflowError, TypeError)  # and yaml's own errors
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_FILE_NAME = re.compile(r"^[A-Za-z0-9._-]+\.ya?ml$")


def workflow_path(workflow: str) -> str | None:
    """Where the file of `build.workflow` lives in its repository, or None when it names no
    file there (a numeric workflow id, or a path that would leave `.github/workflows`)."""
    if not _FILE_NAME.match(workflow):  # no `/`: never a path out of the folder
        return None
    return f"{WORKFLOWS}/{workflow}"


def build_warnings(build: Build, read: Callable[[str], str | None], *, where: str) -> list[str]:
    """The warnings about the workflow `build` dispatches (none for a `build.command`).
    `read(path)` gives the text of a file of the repository (a path from its root), or
    None when there is none; an OSError or UnicodeDecodeError it raises is a warning too.
    `where` names the repository (and branch) read, for the sentence of a missing file."""
    return _check_build(build, read, where=where)[0]


def components_warnings(
    components: Sequence[Component], read: Callable[[str], str | None], *, where: str
) -> list[tuple[tuple[str, ...], str]]:
    """`build_warnings` of every component, with the names of the components each is
    about; and one more for a workflow that several components dispatch while its runs'
    titles do not carry the commit. A dispatch's run is then found, where GitHub does not
    say which run it started, as the bot's oldest run since the dispatch not yet claimed:
    with two components' dispatches close together, a pass stopped between a dispatch
    and its run's claim may follow the other component's run (a build then refused, as
    its wheel is not that component's). Each workflow file is read once."""
    said: list[tuple[tuple[str, ...], str]] = []
    untitled: dict[str, list[str]] = {}  # workflow → the components whose runs' titles lack the commit
    checked: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[str], bool | None]] = {}
    texts: dict[str, str | None] = {}

    def read_once(path: str) -> str | None:
        if path not in texts:
            texts[path] = read(path)
        return texts[path]

    for component in components:
        build = component.build
        if not isinstance(build, ActionsBuild):
            continue
        key = (build.workflow, tuple(sorted(build.inputs.items())))
        if key not in checked:
            checked[key] = _check_build(build, read_once, where=where)
        warnings, titled = checked[key]
        said += [((component.name,), warning) for warning in warnings]
        if titled is False:
            untitled.setdefault(build.workflow, []).append(component.name)
    for workflow, names in untitled.items():
        if len(names) > 1:
            said.append(
                (
                    tuple(names),
                    f"{', '.join(names)} dispatch the same workflow {workflow}, whose runs' "
                    "titles do not carry the commit: on GitHub Enterprise Server a pass stopped right "
                    "after a dispatch may follow another component's run; give the workflow a run-name "
                    "carrying the commit input, or each component a workflow of its own",
                )
            )
    return said


def _check_build(build: Build, read: Callable[[str], str | None], *, where: str) -> tuple[list[str], bool | None]:
    """The warnings of `build_warnings`, and whether the runs' titles carry the commit
    (None when the workflow could not be read or parsed)."""
    if not isinstance(build, ActionsBuild):
        return [], None
    path = workflow_path(build.workflow)
    if path is None:
        return [
            f"build.workflow {build.workflow!r} is not a file name in {WORKFLOWS}/ "
            "(a .yml or .yaml name), so its run-name and inputs were not checked"
        ], None
    try:
        text = read(path)
    except UnicodeDecodeError as exc:
        return [f"{path}: is not UTF-8 text (byte {exc.start}), so its run-name and inputs were not checked"], None
    except OSError as exc:
        return [f"{path}: cannot be read ({exc.strerror or exc}), so its run-name and inputs were not checked"], None
    if text is None:
        return [
            f"{path} does not exist in {where}, so its run-name and inputs were not checked "
            "(it may live on the branch wheelpin dispatches it on)"
        ], None
    document = _parsed(text, path)
    if isinstance(document, list):
        return document, None
    titles = _title_warnings(document, build.inputs, path)
    return _dispatch_warnings(document, build.inputs, path) + titles, not titles


def run_name_warnings(workflow_text: str, inputs: Mapping[str, str], *, path: str) -> list[str]:
    """One sentence per problem of the workflow at `path` (its text `workflow_text`) for a
    dispatch with `inputs` (the component's `build.inputs`, templates unfilled): it must
    have a `workflow_dispatch` trigger declaring every input given and a `run-name` that
    references the input given `{sha}`. Never raises on any text."""
    document = _parsed(workflow_text, path)
    if isinstance(document, list):
        return document
    return _dispatch_warnings(document, inputs, path) + _title_warnings(document, inputs, path)


def dispatch_inputs(workflow_text: str) -> dict[str, object] | None:
    """The inputs a workflow's `workflow_dispatch` trigger declares (name: settings); None
    when it cannot be dispatched, or read. Never raises on any text."""
    document = _parsed(workflow_text, "")
    if isinstance(document, list):
        return None
    dispatchable, settings = _dispatch_trigger(document)
    declared = _declared_inputs(settings) if dispatchable else None
    return declared if isinstance(declared, dict) else None


def _parsed(workflow_text: str, path: str) -> dict[Any, Any] | list[str]:
    """The workflow's document, or the one sentence saying why there is none to check."""
    if _over_limit(workflow_text):
        return [
            f"{path}: the workflow file is larger than wheelpin's limit of 1 MiB "
            f"({MAX_WORKFLOW_BYTES} bytes), so it was not checked"
        ]
    import yaml  # type: ignore[import-untyped]  # no stubs (types-PyYAML); loaded when a workflow is read

    try:
        document = yaml.safe_load(workflow_text)
    except (yaml.YAMLError, *_PARSE_ERRORS) as exc:
        return [f"{path}: is not valid YAML ({_one_line(exc)}), so GitHub cannot run it either"]
    if not isinstance(document, dict):
        kind = "empty" if document is None else f"a YAML {_kind(document)}, not a mapping"
        return [f"{path}: the workflow is {kind}, so GitHub cannot run it"]
    return document


def _over_limit(text: str) -> bool:
    if len(text) * 4 <= MAX_WORKFLOW_BYTES:  # no UTF-8 character is longer than 4 bytes
        return False
    return len(text) > MAX_WORKFLOW_BYTES or len(text.encode("utf-8", errors="replace")) > MAX_WORKFLOW_BYTES


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _kind(value: object) -> str:
    return {list: "list", dict: "mapping", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )


def _triggers(document: dict[Any, Any]) -> object:
    """`on:`, which YAML 1.1 reads as the key True unless it is quoted."""
    if "on" in document:
        return document["on"]
    return document.get(True)


def _dispatch_trigger(document: dict[Any, Any]) -> tuple[bool, object]:
    """(has a workflow_dispatch trigger, its settings) from `on:` as a string, a list or a
    mapping."""
    triggers = _triggers(document)
    if isinstance(triggers, str):
        return triggers.strip() == "workflow_dispatch", None
    if isinstance(triggers, list):
        return "workflow_dispatch" in triggers, None
    if isinstance(triggers, dict) and "workflow_dispatch" in triggers:
        return True, triggers["workflow_dispatch"]
    return False, None


def _declared_inputs(settings: object) -> dict[str, object] | str:
    """The inputs `workflow_dispatch:` declares (name: settings), or why they cannot be read."""
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        return f"workflow_dispatch is a YAML {_kind(settings)}, not a mapping"
    declared = settings.get("inputs")
    if declared is None:
        return {}
    if not isinstance(declared, dict):
        return f"workflow_dispatch.inputs is a YAML {_kind(declared)}, not a mapping"
    return {_key(name): value for name, value in declared.items()}


def _key(name: object) -> str:
    # YAML 1.1 reads the keys yes/no/on/off/true/false as booleans: give back the usual name
    if isinstance(name, bool):
        return "true" if name else "false"
    return str(name)


def _dispatch_warnings(document: dict[Any, Any], inputs: Mapping[str, str], path: str) -> list[str]:
    dispatchable, settings = _dispatch_trigger(document)
    if not dispatchable:
        return [
            f"{path}: the workflow has no workflow_dispatch trigger under on:, so GitHub refuses to dispatch it (422)"
        ]
    declared = _declared_inputs(settings)
    if isinstance(declared, str):
        return [f"{path}: {declared}, so its inputs were not checked"]
    warnings: list[str] = []
    if len(declared) > MAX_INPUTS:
        warnings.append(
            f"{path}: workflow_dispatch declares {len(declared)} inputs, but GitHub allows at most {MAX_INPUTS}"
        )
    elif len(inputs) > MAX_INPUTS:
        warnings.append(f"{path}: build.inputs gives {len(inputs)} inputs, but a dispatch takes at most {MAX_INPUTS}")
    for name in inputs:
        if name not in declared:
            warnings.append(
                f"{path}: build.inputs gives {name!r}, which workflow_dispatch.inputs "
                'does not declare, so GitHub refuses the dispatch (422 "Unexpected '
                'inputs provided")'
            )
    for name, spec in declared.items():
        if (
            isinstance(spec, dict)
            and spec.get("required") is True
            and spec.get("default") is None
            and name not in inputs
        ):
            warnings.append(
                f"{path}: workflow_dispatch.inputs.{name} is required and has no "
                "default, but build.inputs does not give it, so GitHub refuses the dispatch"
            )
    return warnings


def _commit_inputs(inputs: Mapping[str, str]) -> list[str]:
    """The inputs whose template holds the full commit, `{sha}`."""
    found = []
    for name, template in inputs.items():
        try:
            if "sha" in fields_of(template):
                found.append(name)
        except TemplateError:
            continue
    return found


def references_input(run_name: str, name: str) -> bool:
    """Whether an expression (`${{ … }}`) of `run_name` reads input `name`, as
    `inputs.NAME`, `inputs['NAME']` or `github.event.inputs.NAME` (contexts and their
    properties are not case-sensitive)."""
    escaped = re.escape(name)
    reference = re.compile(
        rf"(?<![\w.-])(?:github\s*\.\s*event\s*\.\s*)?inputs\s*"
        rf"(?:\.\s*{escaped}(?![\w-])|\[\s*'{escaped}'\s*\]|\[\s*\"{escaped}\"\s*\])",
        re.IGNORECASE,
    )
    return any(reference.search(expression) for expression in _EXPRESSION.findall(run_name))


def _title_warnings(document: dict[Any, Any], inputs: Mapping[str, str], path: str) -> list[str]:
    carriers = _commit_inputs(inputs)
    example = carriers[0] if carriers else "NAME"
    consequence = (
        "so on GitHub Enterprise Server, which does not say which run a dispatch started, wheelpin cannot find its run"
    )
    run_name = document.get("run-name")
    if run_name is None or (isinstance(run_name, str) and not run_name.strip()):
        return [
            f"{path}: the workflow has no run-name, so a dispatched run is titled with the "
            f"workflow's name, which carries no commit, {consequence}; add e.g. "
            f"`run-name: build ${{{{ inputs.{example} }}}}`"
        ]
    if not isinstance(run_name, str):
        return [f"{path}: run-name is a YAML {_kind(run_name)}, not a string, {consequence}"]
    if not carriers:
        return [
            f"{path}: no value of build.inputs carries the full commit {{sha}}, so the "
            f"run-name cannot put it in the run's title, {consequence}"
        ]
    if not any(references_input(run_name, name) for name in carriers):
        wanted = " or ".join(f"inputs.{name}" for name in carriers)
        return [
            f"{path}: run-name {run_name.strip()!r} does not reference {wanted} (the input "
            f"given {{sha}}), so the run's title does not carry the commit, {consequence}"
        ]
    return []


def workflow_build(workflows: Mapping[str, str], name: str) -> DraftBuild | None:
    """The build a repository's own workflow makes, when one alone is named after the
    component (`lmcache-rocm-wheel.yaml` for lmcache) and can be dispatched. `workflows`
    maps each file name of .github/workflows/ to its text."""
    from ...core.config.initconfig import Build as DraftBuild

    stem = name.split("-")[0]
    found = [
        file for file, text in sorted(workflows.items()) if stem in file.lower() and dispatch_inputs(text) is not None
    ]
    if len(found) != 1:
        return None
    build = workflow_of(found[0], workflows[found[0]])
    return DraftBuild(
        workflow=build.workflow,
        inputs=build.inputs,
        said=f"from .github/workflows/{found[0]}, dispatchable and named after {stem}"
        + (build.said and "; " + build.said),
    )


def workflow_of(file: str, text: str) -> DraftBuild:
    """A dispatch of the workflow `file`: its inputs that name a commit (`lmcache_commit`,
    `sha`) are given the full commit."""
    from ...core.config.initconfig import Build as DraftBuild

    declared = dispatch_inputs(text) or {}
    inputs = {key: "{sha}" for key in declared if "commit" in key.lower() or key.lower() in ("sha", "git_sha")}
    return DraftBuild(
        workflow=file, inputs=inputs, said=f"its input {', '.join(inputs)} given the commit" if inputs else ""
    )

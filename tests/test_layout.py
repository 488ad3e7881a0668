"""The layout docs/design.md §2 promises, checked on the source: imports point down
(core ← adapters ← loop ← app, commands) and never in a circle, github3 is imported in one
module, the loop dispatches actions by type and not by kind strings, modules stay small and
each says its place, and comments carry no tracker history nor timing anecdotes."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"
MODULES = sorted(BOT.rglob("*.py"))
LAYERS = ["core", "adapters", "loop", "app", "commands"]  # each may import only those before it
# The contracts: the loop's with a platform (adapters/platform.py), and the service's with a
# forge: its unit of work, its conversation with a repository's people, and the forge itself
# (its watch list, door and platforms). A forge's package (adapters/github/) is both the
# loop's platform and the service's forge, so it names them; each imports core and the
# other contracts alone, so any layer may name it.
CONTRACTS = {"bot.adapters.platform", "bot.app.jobs", "bot.app.conversation", "bot.app.forge"}


def in_contract(module: str) -> bool:
    """`module` is a contract module, or a name imported from one (`from a import b` names a.b)."""
    return module in CONTRACTS or module.rsplit(".", 1)[0] in CONTRACTS


def module_name(path: Path) -> str:
    """`bot/adapters/imageread.py` → `bot.adapters.imageread`; a package's `__init__.py` is the package."""
    parts = path.relative_to(BOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES = {module_name(path): path for path in MODULES}


def _run_time(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` but those under `if TYPE_CHECKING:`, which never run: an
    annotation-only import is how a module names a type without depending on its module
    at run time (and is the one way to name it from above without an import cycle)."""
    for node in ast.iter_child_nodes(tree):
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name | ast.Attribute)
            and ast.unparse(node.test).endswith("TYPE_CHECKING")
        ):
            for child in node.orelse:
                yield child
                yield from _run_time(child)
            continue
        yield node
        yield from _run_time(node)


def imported(path: Path, *, at_run_time: bool = False) -> set[str]:
    """The absolute `bot.…` modules `path` imports, at its top or inside a function (an
    import deferred to a call is still a dependency); `from a import b` names `a` and `a.b`,
    which may be a module. `at_run_time`: not those under `if TYPE_CHECKING:`."""
    package = ".".join(path.relative_to(BOT.parent).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text())
    found = set()
    for node in _run_time(tree) if at_run_time else ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def dependencies(path: Path) -> set[str]:
    """The other modules under bot/ that running `path` imports."""
    return {name for name in imported(path, at_run_time=True) if name in NAMES} - {module_name(path)}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm): each
    is a set of modules that import each other, directly or through the others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while (member := stack.pop()) != module:
                component.append(member)
            if component:
                found.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_cycles_finds_a_circle_and_only_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["d", "e"]]


def test_no_import_cycle() -> None:
    graph = {name: dependencies(path) for name, path in NAMES.items()}
    assert sum(map(len, graph.values())) > 200  # the graph was read, not empty
    found = [" ↔ ".join(component) for component in cycles(graph)]
    assert not found, "modules that import each other: " + "; ".join(found)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(BOT)))
def test_every_module_says_its_place(path: Path) -> None:
    """Each module starts with a docstring saying its place in the loop, so the tree reads
    without a table elsewhere to keep in step; an empty `__init__.py` holds nothing to say."""
    tree = ast.parse(path.read_text())
    docstring = ast.get_docstring(tree)
    assert not tree.body or (docstring and docstring.strip()), f"{path.relative_to(BOT)} has no docstring"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(BOT)))
def test_imports_point_down(path: Path) -> None:
    layer = path.relative_to(BOT).parts[0]
    if layer not in LAYERS:
        return
    allowed = LAYERS[: LAYERS.index(layer) + 1] if module_name(path) not in CONTRACTS else ["core"]
    for module in imported(path):
        parts = module.split(".")
        if parts[0] == "bot" and len(parts) > 1 and parts[1] in LAYERS and not in_contract(module):
            assert parts[1] in allowed, f"{path.relative_to(BOT)} imports {module}"


def test_the_service_contract_is_what_a_forge_names_of_the_service() -> None:
    """A forge's modules name the service's contract and nothing else of it."""
    named = {
        module
        for path in MODULES
        if path.relative_to(BOT).parts[:2] == ("adapters", "github")
        for module in imported(path)
        if module.startswith("bot.app.")
    }
    assert named and all(in_contract(module) for module in named), sorted(named)


# The service's modules that may name GitHub's package: the forge registry, which makes the
# forge the settings ask for, and the settings, which hold GitHub's (its address is
# normalized as adapters/github/host.py tells a server's from github.com's).
NAMES_A_FORGE = {"bot.app.forges", "bot.app.settings"}
GITHUB_WIRE = re.compile(r"^(x-github-|x-hub-signature)", re.IGNORECASE)  # GitHub's delivery headers


def test_the_service_knows_no_forge_but_through_its_registry() -> None:
    """app/ speaks to a forge through app/forge.py alone: no module of it imports a forge's
    package or its client libraries, nor reads a GitHub delivery's headers itself (the door
    does), but the registry that chooses the forge."""
    service = [path for path in MODULES if path.relative_to(BOT).parts[0] == "app"]
    assert {"bot.app.forge", "bot.app.forges", "bot.app.watchlist", "bot.app.service"} <= set(map(module_name, service))
    naming = {
        module_name(path): module
        for path in service
        for module in imported(path)
        if module.startswith("bot.adapters.github") or module.split(".")[0] in ("github3", "jwt")
    }
    assert "bot.app.forges" in naming  # the registry's own (deferred) import is seen
    assert {name: module for name, module in naming.items() if name not in NAMES_A_FORGE} == {}
    wire = sorted(
        f"{module_name(path)}: {node.value!r}"
        for path in service
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and GITHUB_WIRE.match(node.value)
    )
    assert wire == []


def test_github3_is_imported_in_one_module() -> None:
    importers = [
        p.relative_to(BOT).as_posix()
        for p in MODULES
        if any(m == "github3" or m.startswith("github3.") for m in imported(p))
    ]
    assert importers == ["adapters/github/client.py"]


IO_LIBRARIES = ("requests", "github3", "socket", "urllib3")


def test_githubs_rules_import_nothing_that_does_io() -> None:
    """adapters/github/sansio.py decides on bytes, statuses and headers only: neither it nor
    any module of wheelpin's it runs on imports a library that speaks to the network."""
    sansio = "bot.adapters.github.sansio"
    reached, todo = set(), [sansio]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(dependencies(NAMES[module]))
    assert {"bot.app.jobs", "bot.core.errors"} <= reached  # the closure was walked
    offenders = sorted(
        f"{module} imports {name}"
        for module in reached
        for name in imported(NAMES[module], at_run_time=True)
        if name.split(".")[0] in IO_LIBRARIES
    )
    assert offenders == []


def test_no_module_reaches_into_github3_privates() -> None:
    private = re.compile(r"\._(build_url|api|json|iter|get|post|patch|put|delete)\b")
    offenders = [
        p.relative_to(BOT).as_posix() for p in MODULES if p.name != "client.py" and private.search(p.read_text())
    ]
    assert offenders == []


def test_the_loop_dispatches_by_type_not_by_kind() -> None:
    looped = [p for p in MODULES if p.parts[-2] == "loop" or p.name == "plan.py"]
    offenders = [p.relative_to(BOT).as_posix() for p in looped if re.search(r"\bkind ==", p.read_text())]
    assert looped and offenders == []


def test_no_module_carries_tracker_history() -> None:
    """A comment (in the code, the tests, the benchmarks or the docs) says why the code is so;
    which of this project's issues asked for it is
    history, kept in CHANGELOG.md and git log. An upstream tracker cited as `owner/repo#N`
    (docker/buildx#3047) is a fact about the world and stays."""
    history = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    root = BOT.parent
    said = [
        *MODULES,
        *(root / "tests").rglob("*.py"),
        *(root / "bench").glob("*.py"),
        *(root / "docs").glob("*.md"),
        root / "README.md",
        root / "CONTRIBUTING.md",
    ]
    offenders = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in said
        if "node_modules" not in path.parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if history.search(line)
    ]
    assert offenders == []


def test_no_comment_in_the_code_or_tests_carries_a_timing_anecdote() -> None:
    """How long something took once, or how much memory a reported input reached, is a
    measurement: it belongs in bench/ (whose docstrings keep the numbers they measured) and
    docs/benchmarks.md, where it is measured again, not in a comment that stays while the
    code moves under it."""
    anecdote = re.compile(
        r"\b(took|ran for|reached) (about |over |up to )?[0-9~]|\breported case\b|\blast session\b", re.IGNORECASE
    )
    root = BOT.parent
    said = [*MODULES, *(p for p in (root / "tests").rglob("*.py") if "node_modules" not in p.parts)]
    offenders = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in said
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if anecdote.search(line)
    ]
    assert offenders == []

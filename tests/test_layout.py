"""The layout docs/design.md §2 promises, checked on the source: imports point down
(core ← adapters ← loop ← app, commands), github3 is imported in one module, the loop
dispatches actions by type and not by kind strings, modules stay small."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"
MODULES = sorted(BOT.rglob("*.py"))
LAYERS = ["core", "adapters", "loop", "app", "commands"]  # each may import only those before it


def imported(path: Path) -> set[str]:
    """The absolute `bot.…` modules `path` imports."""
    package = ".".join(path.relative_to(BOT.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(BOT)))
def test_imports_point_down(path: Path) -> None:
    layer = path.relative_to(BOT).parts[0]
    if layer not in LAYERS:
        return
    allowed = LAYERS[: LAYERS.index(layer) + 1]
    for module in imported(path):
        parts = module.split(".")
        if parts[0] == "bot" and len(parts) > 1 and parts[1] in LAYERS:
            assert parts[1] in allowed, f"{path.relative_to(BOT)} imports {module}"


def test_github3_is_imported_in_one_module() -> None:
    importers = [p.relative_to(BOT).as_posix() for p in MODULES
                 if any(m == "github3" or m.startswith("github3.") for m in imported(p))]
    assert importers == ["adapters/github/client.py"]


def test_no_module_reaches_into_github3_privates() -> None:
    private = re.compile(r"\._(build_url|api|json|iter|get|post|patch|put|delete)\b")
    offenders = [p.relative_to(BOT).as_posix() for p in MODULES if p.name != "client.py"
                 and private.search(p.read_text())]
    assert offenders == []


def test_the_loop_dispatches_by_type_not_by_kind() -> None:
    looped = [p for p in MODULES if p.parts[-2] == "loop" or p.name == "plan.py"]
    offenders = [p.relative_to(BOT).as_posix() for p in looped if re.search(r"\bkind ==", p.read_text())]
    assert looped and offenders == []

"""The config's JSON Schema as editors and SchemaStore take it (issue 18): published in the
repository (config/wheelpin.schema.json) equal to `wheelpin config schema`, a valid draft
2020-12 schema with an `$id`, a title and a description on every property, whose examples
are valid, and which the example configs of config/ pass (and a misspelt key fails)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli import wheelpin

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "config" / "wheelpin.schema.json"


def schema() -> dict[str, Any]:
    return json.loads(PUBLISHED.read_text())


def test_the_published_schema_is_the_command_s() -> None:
    printed = wheelpin("config", "schema")
    assert printed.code == 0
    assert json.loads(printed.stdout) == schema(), "run: wheelpin config schema > config/wheelpin.schema.json"


def properties(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        for name, child in (node.get("properties") or {}).items():
            found += [(f"{path}.{name}", child), *properties(child, f"{path}.{name}")]
        for name, child in (node.get("$defs") or {}).items():
            found += properties(child, f"{name}")
    return found


def test_a_valid_schema_that_describes_every_property() -> None:
    document = schema()
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$id"].endswith("/config/wheelpin.schema.json") and document["title"] and document["description"]
    described = properties(document)
    assert len(described) >= 55  # every field of every model (core/config.py)
    assert [path for path, node in described if not node.get("description")] == []
    with_examples = [(path, node) for path, node in described if "examples" in node]
    assert len(with_examples) >= 15
    for path, node in with_examples:
        for example in node["examples"]:  # an example is a value its property takes
            sub = {**node, "$defs": document["$defs"]}
            errors = list(jsonschema.Draft202012Validator(sub).iter_errors(example))
            assert not errors, (path, example, errors[0].message)


@pytest.mark.parametrize("config", sorted(p.relative_to(ROOT) for p in (ROOT / "config").rglob("*.toml")), ids=str)
def test_the_example_configs_pass_and_a_misspelt_key_fails(config: Path) -> None:
    validator = jsonschema.Draft202012Validator(schema())
    document = tomllib.loads((ROOT / config).read_text())
    assert [error.message for error in validator.iter_errors(document)] == []
    misspelt = {**document, "component": [{**document["component"][0], "schedul": "1h"}]}
    assert any("schedul" in error.message for error in validator.iter_errors(misspelt))


def test_the_project_s_address_is_said_the_same_everywhere() -> None:
    """The schema's `$id` is where editors fetch it: it is the raw file of this repository's
    main branch, and pyproject, the App manifest and the image label name the same home."""
    import tomllib as toml

    from bot import PROJECT_URL, SCHEMA_URL

    owner_name = PROJECT_URL.removeprefix("https://github.com/")
    assert SCHEMA_URL == f"https://raw.githubusercontent.com/{owner_name}/main/config/wheelpin.schema.json"
    assert schema()["$id"] == SCHEMA_URL and PROJECT_URL in schema()["description"]
    urls = toml.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls == {"Homepage": PROJECT_URL, "Schema": SCHEMA_URL}
    assert json.loads((ROOT / "deploy" / "github-app.json").read_text())["url"] == PROJECT_URL
    assert f'org.opencontainers.image.source="{PROJECT_URL}"' in (ROOT / "Dockerfile").read_text()
    for path in [ROOT / "README.md", *(ROOT / "deploy").rglob("*"), *(ROOT / "config").rglob("*")]:
        if path.is_file():
            assert "your-org/wheelpin" not in path.read_text(encoding="utf-8", errors="replace"), path

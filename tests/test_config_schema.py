"""The config's JSON Schema as editors and SchemaStore take it: published in the
repository (config/wheelpin.schema.json) equal to `wheelpin config schema`, a valid draft
2020-12 schema with an `$id`, a title and a description on every property, whose examples
are valid, and which the example configs of config/ pass (and a misspelt key fails)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.cli import environment, wheelpin

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
    assert len(described) >= 55  # every field of every model (core/config/model.py)
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
    uses = [
        line.split("uses:")[1].split("@")[0].strip()
        for path in [ROOT / "deploy/github-action.yml", ROOT / "docs/github-action.md"]
        for line in path.read_text().splitlines()
        if "/wheelpin@" in line
    ]
    assert uses and set(uses) == {owner_name}  # the Action is this repository's action.yml
    for path in [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *(ROOT / "docs").rglob("*"),
        *(ROOT / "deploy").rglob("*"),
        *(ROOT / "config").rglob("*"),
    ]:
        if path.is_file():
            assert "your-org/wheelpin" not in path.read_text(encoding="utf-8", errors="replace"), path


SHIPPED = sorted([*(ROOT / "config").glob("*/wheelpin.toml"), *(ROOT / "config").glob("*/.github/wheelpin.toml")])
TAPLO = ROOT / "tests" / "node_modules" / ".bin" / "taplo"


def test_every_shipped_config_names_the_schema_on_its_first_line() -> None:
    """Taplo and VS Code's Even Better TOML read a `#:schema` header directive (taplo's
    docs, configuration/directives): a config copied from here is checked as it is typed."""
    from bot import SCHEMA_URL

    assert len(SHIPPED) >= 3
    assert [p.relative_to(ROOT) for p in SHIPPED if p.read_text().splitlines()[0] != f"#:schema {SCHEMA_URL}"] == []


def taplo_check(config: Path) -> subprocess.CompletedProcess[str]:
    """`taplo check` (npm @taplo/cli: taplo's wasm build, what the editor extension runs)
    on a copy of `config` whose `#:schema` directive names the published schema file: the
    directive wins over `--schema`, and a test never fetches the https URL."""
    assert TAPLO.exists(), "taplo is missing: run `npm install --no-audit --no-fund` in tests/ (.ci/run does)"
    lines = config.read_text().splitlines(keepends=True)
    assert lines[0].startswith("#:schema ")
    local = config.parent / f"local-{config.name}"
    local.write_text(f"#:schema {PUBLISHED.as_uri()}\n" + "".join(lines[1:]))
    try:
        return subprocess.run(
            [str(TAPLO), "check", "--no-auto-config", "--colors", "never", str(local)],
            capture_output=True,
            text=True,
            env=environment(),
            timeout=120,
        )
    finally:
        local.unlink()


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_taplo_passes_every_shipped_config(config: Path, tmp_path: Path) -> None:
    copy = tmp_path / "wheelpin.toml"
    copy.write_text(config.read_text())
    done = taplo_check(copy)
    assert done.returncode == 0, done.stderr


def test_taplo_names_a_misspelt_key_and_a_wrong_type(tmp_path: Path) -> None:
    """What an editor underlines as the user types: `lables` for `labels`, a number written
    as a string."""
    good = (ROOT / "config/atom-lmcache/.github/wheelpin.toml").read_text()
    broken = good.replace("\nlabels = ", "\nlables = ").replace("quiet_minutes = 30", 'quiet_minutes = "30"')
    assert broken.count("lables") == 1 and '"30"' in broken
    (tmp_path / "wheelpin.toml").write_text(broken)
    done = taplo_check(tmp_path / "wheelpin.toml")
    assert done.returncode == 1
    assert "'lables' was unexpected" in done.stderr
    assert '"30" is not of type "integer"' in done.stderr
    assert "wheelpin.toml:10:1" in done.stderr  # the misspelt key's own line

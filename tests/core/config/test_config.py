"""The config model: the contract's key names, the examples, and every mistake located."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.adapters.configdisk import find_config, load_config
from bot.adapters.git import git
from bot.core.config.load import ConfigInvalid
from tests.cli import wheelpin

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = [
    ROOT / "config/atom-lmcache/.github/wheelpin.toml",
    ROOT / "config/mooncake/.github/wheelpin.toml",
    ROOT / "config/demo/wheelpin.toml",
]

GOOD = """\
[[component]]
name = "lmcache"
upstream = { repo = "https://github.com/LMCache/LMCache", branch = "dev" }
wheel = { distribution = "lmcache", archs = ["gfx942", "gfx950"],
          forbid_needed = ["libcudart*", "libcuda.so*"], require_needed = ["libamdhip64*"] }
build = { workflow = "lmcache-rocm-wheel.yaml", inputs = { lmcache_commit = "{sha}" } }
image = { repository = "docker.io/rocm/atom-dev", tag = "lmcache-v{version_base}-g{sha8}-rocm-torch210" }
constraints = ["numpy==2.3.5"]
pins = [
  { file = "docker/Dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg = "LMCACHE_WHEEL_SHA256" },
  { file = "docker/atom_release.dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg = "LMCACHE_WHEEL_SHA256" },
]
"""


PINNED = (
    'ARG LMCACHE_WHEEL_IMAGE="docker.io/rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210'
    "@sha256:" + "a" * 64 + '"\nARG LMCACHE_WHEEL_SHA256=' + "b" * 64 + "\nFROM a\n"
)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A repository holding GOOD's pin files, pinned as GOOD says (so validate passes)."""
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker/Dockerfile").write_text(PINNED)
    (tmp_path / "docker/atom_release.dockerfile").write_text(PINNED)
    return tmp_path


def problems_of(repo: Path, text: str) -> list[str]:
    path = repo / "wheelpin.toml"
    path.write_text(text)
    with pytest.raises(ConfigInvalid) as caught:
        load_config(path, root=repo)
    return caught.value.problems


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=lambda p: p.parent.name if p.parent.name != ".github" else p.parent.parent.name
)
def test_examples_validate(example: Path, tmp_path: Path) -> None:
    if example.parent.name == "demo":  # its upstream is `../upstream`, a repository `wheelpin demo` makes beside it
        shutil.copytree(example.parent, tmp_path / "downstream")
        git(["init", "--quiet", str(tmp_path / "upstream")])
        example = tmp_path / "downstream/wheelpin.toml"
    result = wheelpin("config", "validate", str(example), "--json")
    assert result.code == 0, result.stdout + result.stderr
    assert result.json()["valid"] is True


def toml_blocks(path: Path) -> list[str]:
    """The ```toml blocks of a Markdown file."""
    import re

    return re.findall(r"```toml\n(.*?)```", path.read_text(), flags=re.S)


def test_every_example_a_user_copies_is_toml_1_0(repo: Path, tmp_path: Path) -> None:
    """tomllib (TOML 1.0, as taplo and check-jsonschema read it) parses every example: the
    blocks of the README and of docs/ (the config reference, the design…), `config/`, and
    the config `demo` writes; each block then loads as a config."""
    import tomllib

    from bot.app.settings import Settings
    from bot.commands.demo import make_downstream, make_upstream

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks = [block for page in pages for block in toml_blocks(page)]
    assert len(toml_blocks(ROOT / "docs/config.md")) >= 1 and len(blocks) >= 3
    for block in blocks:
        tomllib.loads(block)
        (repo / "wheelpin.toml").write_text(block)
        load_config(repo / "wheelpin.toml", root=repo)
    for example in EXAMPLES:
        tomllib.loads(example.read_text())
    _, first = make_upstream(tmp_path / "demo")
    downstream = make_downstream(tmp_path / "demo", first, Settings(cache_dir=tmp_path / "cache"))
    tomllib.loads((downstream / "wheelpin.toml").read_text())


def test_toml_1_1_inline_tables_over_lines_still_load(repo: Path) -> None:
    (repo / "wheelpin.toml").write_text(GOOD)
    loaded = load_config(repo / "wheelpin.toml", root=repo)
    component = loaded.config.components[0]
    assert component.wheel.archs == ["gfx942", "gfx950"]
    assert component.build.inputs == {"lmcache_commit": "{sha}"}
    assert [pin.file for pin in component.pins] == ["docker/Dockerfile", "docker/atom_release.dockerfile"]
    assert loaded.config.defaults.branch_prefix == "wheelpin/"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('name = "lmcache"', 'name = "lmcache"\ncolour = "red"', ":3: lmcache.colour: unknown key"),
        ('"gfx950"]', '"gfx9500"]', ":4: lmcache.wheel.archs: 'gfx9500' is not an AMDGPU processor"),
        ('branch = "dev"', 'branch = "dev", tags = "v*"', ":3: lmcache.upstream: give exactly one of"),
        (
            '{ lmcache_commit = "{sha}" }',
            '{ lmcache_commit = "{version}" }',
            ":6: lmcache.build.inputs.lmcache_commit: placeholder {version} cannot be filled",
        ),
        ('{ lmcache_commit = "{sha}" }', '{ c = "{nope}" }', ":6: lmcache.build.inputs.c: placeholder {nope}"),
        ("-g{sha8}-rocm", "+g{sha8}-rocm", ":7: lmcache.image.tag: tag template"),
        ("-g{sha8}-rocm-torch210", "-rocm-torch210", ":7: lmcache.image.tag: must carry the commit"),
        ('"lmcache-v{version_base}', '"{sha}{sha}{sha}{version_base}', ":7: lmcache.image.tag: tag template"),
        ('"docker.io/rocm/atom-dev"', '"docker.io/ROCm/atom-dev:latest"', ":7: lmcache.image.repository"),
        ('["numpy==2.3.5"]', '["numpy >>= 2"]', ":8: lmcache.constraints[0]: requirement 'numpy >>= 2' is malformed"),
        (
            "docker/atom_release.dockerfile",
            "docker/missing.dockerfile",
            ":11: lmcache.pins[1].file: pin file docker/missing.dockerfile does not exist",
        ),
        (
            "docker/atom_release.dockerfile",
            "../outside",
            ":11: lmcache.pins[1].file: '../outside' must be a path inside",
        ),
        (
            'image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg = "LMCACHE_WHEEL_SHA256" },\n]',
            'sha256_arg = "LMCACHE_WHEEL_SHA256" },\n]',
            ":11: lmcache.pins[1]: give exactly one of image_arg or from_stage",
        ),
        (
            'image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg',
            'image_arg = "1BAD", sha256_arg',
            ":10: lmcache.pins[0].image_arg",
        ),
        ('name = "lmcache"', 'name = "LMCache Wheel"', ":2: component[0].name"),
    ],
)
def test_mistakes_are_located(repo: Path, old: str, new: str, expected: str) -> None:
    assert old in GOOD
    problems = problems_of(repo, GOOD.replace(old, new, 1))
    assert any(expected in problem for problem in problems), problems
    assert all(problem.startswith(str(repo / "wheelpin.toml") + ":") for problem in problems)


def test_every_problem_is_listed(repo: Path) -> None:
    text = GOOD.replace('"gfx950"]', '"gfx9500"]').replace('name = "lmcache"', 'name = "lmcache"\nx = 1')
    text += "\n" + GOOD.replace("docker/Dockerfile", "docker/nope")
    problems = problems_of(repo, '[defaults]\nschedule = "every now and then"\n\n' + text)
    joined = "\n".join(problems)
    for fragment in (
        "defaults.schedule",
        "wheel.archs",
        "component[0].x: unknown key",
        "component[1].name: component name 'lmcache' is used twice",
        "component[1].pins[0].file: pin file docker/nope",
    ):
        assert fragment in joined
    lines = [int(problem.split(":")[1]) for problem in problems]
    assert lines == sorted(lines)


def test_multi_wheel_images_need_python_tags(repo: Path) -> None:
    text = GOOD.replace('distribution = "lmcache",', 'distribution = "lmcache", python_tags = ["cp310", "cp312"],')
    problems = problems_of(repo, text)
    assert any("pins[0].sha256_arg: the image holds 2 wheels" in p for p in problems)


def test_a_sha256_pin_over_several_variants_is_refused_saying_how_to_write_it(repo: Path) -> None:
    """wheel.variants of two labels makes two wheels of each python tag, and a sha256 ARG
    names one by its python tag alone: every pass would refuse to write it."""
    two = GOOD.replace('distribution = "lmcache",', 'distribution = "lmcache", variants = ["amd_gfx942", ""],')
    assert any(
        'pins[0].sha256_arg: wheel.variants gives each python tag 2 wheels (amd_gfx942, "" (the non-variant '
        "wheel)), and a sha256 ARG names its wheel by python tag, never by variant label: drop the pin's "
        "sha256_arg (its image pin alone moves), or list one variant" in problem
        for problem in problems_of(repo, two)
    )
    one = GOOD.replace('distribution = "lmcache",', 'distribution = "lmcache", variants = ["amd_gfx942"],')
    (repo / "wheelpin.toml").write_text(one)
    (lmcache,) = load_config(repo / "wheelpin.toml", root=repo).config.components
    assert lmcache.wheel.variants == ["amd_gfx942"]


def test_not_toml(repo: Path) -> None:
    (problem,) = problems_of(repo, "[[component]\nname = ")
    assert "not valid TOML" in problem


def test_a_toml_syntax_error_shows_its_line_and_a_caret_under_the_column(repo: Path) -> None:
    (problem,) = problems_of(repo, 'version = 1\n\tname = = "x"\n')
    first, source, caret = problem.split("\n")
    assert first == f"{repo / 'wheelpin.toml'}:2:9: not valid TOML: Invalid value"
    assert source == '    \tname = = "x"'
    assert caret == "    \t       ^"  # the tab kept: the caret sits under the second `=`


def validate(repo: Path, text: str, dockerfile: str) -> tuple[int, list[str], list[str]]:
    """`config validate --json` of `text`, its first pin file holding `dockerfile`."""
    (repo / "wheelpin.toml").write_text(text)
    (repo / "docker/Dockerfile").write_text(dockerfile)
    result = wheelpin("config", "validate", str(repo / "wheelpin.toml"), "--json")
    return result.code, result.json()["problems"], result.json()["warnings"]


@pytest.mark.parametrize(
    ("dockerfile", "expected"),
    [
        (
            PINNED.replace("LMCACHE_WHEEL_IMAGE", "LMCACHE_IMAGE"),
            "lmcache.pins[0].image_arg: docker/Dockerfile: ARG LMCACHE_WHEEL_IMAGE is not declared (ARGs here: "
            "LMCACHE_IMAGE, LMCACHE_WHEEL_SHA256; did you mean LMCACHE_IMAGE?)",
        ),
        (
            PINNED.replace("ARG LMCACHE_WHEEL_SHA256", "ARG LMCACHE_SHA"),
            "docker/Dockerfile: ARG LMCACHE_WHEEL_SHA256 is not declared (ARGs here: LMCACHE_SHA, "
            "LMCACHE_WHEEL_IMAGE; did you mean LMCACHE_WHEEL_IMAGE?)",
        ),
        (
            PINNED.replace("docker.io/rocm/atom-dev", "ghcr.io/someone/atom-dev"),
            "lmcache.pins[0].image_arg: docker/Dockerfile:1: ghcr.io/someone/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0"
            "-rocm-torch210@sha256:" + "a" * 64 + " is not in the component's repository docker.io/rocm/atom-dev",
        ),
        (PINNED.replace('"docker.io', '"not a reference at all docker.io'), "is not an image reference"),
    ],
)
def test_validate_refuses_a_pin_the_pass_would_refuse(repo: Path, dockerfile: str, expected: str) -> None:
    code, problems, _ = validate(repo, GOOD, dockerfile)
    assert code == 2 and any(problem.endswith(expected) for problem in problems), problems


# GOOD with its first pin as a table of its own, a key a line (as `wheelpin init` writes pins)
PIN_TABLE = GOOD.replace(
    "pins = [\n"
    '  { file = "docker/Dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg = "LMCACHE_WHEEL_SHA256" },\n'
    '  { file = "docker/atom_release.dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE", '
    'sha256_arg = "LMCACHE_WHEEL_SHA256" },\n]\n',
    "\n[[component.pins]]\n"
    'file = "docker/Dockerfile"\n'
    'image_arg = "LMCACHE_WHEEL_IMAGE"\n'
    'sha256_arg = "LMCACHE_WHEEL_SHA256"\n'
    'python_tag = "cp312"\n',
)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            'sha256_arg = "LMCACHE_WHEEL_SHA256"',
            'sha256_arg = "LMCACHE_WHEEL_SHA"',
            [
                ":13: lmcache.pins[0].sha256_arg: docker/Dockerfile: ARG LMCACHE_WHEEL_SHA is not declared "
                "(ARGs here: LMCACHE_WHEEL_IMAGE, LMCACHE_WHEEL_SHA256; did you mean LMCACHE_WHEEL_SHA256?)"
            ],
        ),
        (
            'image_arg = "LMCACHE_WHEEL_IMAGE"\nsha256_arg = "LMCACHE_WHEEL_SHA256"',
            'image_arg = "LMCACHE_WHEEL_IMG"\nsha256_arg = "LMCACHE_WHEEL_SHA"',
            [
                ":12: lmcache.pins[0].image_arg: docker/Dockerfile: ARG LMCACHE_WHEEL_IMG is not declared "
                "(ARGs here: LMCACHE_WHEEL_IMAGE, LMCACHE_WHEEL_SHA256; did you mean LMCACHE_WHEEL_IMAGE?)",
                ":13: lmcache.pins[0].sha256_arg: docker/Dockerfile: ARG LMCACHE_WHEEL_SHA is not declared "
                "(ARGs here: LMCACHE_WHEEL_IMAGE, LMCACHE_WHEEL_SHA256; did you mean LMCACHE_WHEEL_SHA256?)",
            ],
        ),
        (
            'image_arg = "LMCACHE_WHEEL_IMAGE"\nsha256_arg = "LMCACHE_WHEEL_SHA256"',
            'from_stage = "wheels"\nsha256_arg = "LMCACHE_WHEEL_SHA"',
            [
                ":12: lmcache.pins[0].from_stage: docker/Dockerfile: no FROM … AS wheels stage (it declares no stages)",
                ":13: lmcache.pins[0].sha256_arg: docker/Dockerfile: ARG LMCACHE_WHEEL_SHA is not declared "
                "(ARGs here: LMCACHE_WHEEL_IMAGE, LMCACHE_WHEEL_SHA256; did you mean LMCACHE_WHEEL_SHA256?)",
            ],
        ),
    ],
)
def test_validate_says_each_problem_of_a_pin_at_its_own_key(
    repo: Path, old: str, new: str, expected: list[str]
) -> None:
    assert old in PIN_TABLE
    code, problems, _ = validate(repo, PIN_TABLE.replace(old, new), PINNED)
    assert code == 2
    assert problems == [str(repo / "wheelpin.toml") + problem for problem in expected]


def test_a_python_tag_without_a_sha256_arg_is_said_at_python_tag(repo: Path) -> None:
    problems = problems_of(repo, PIN_TABLE.replace('sha256_arg = "LMCACHE_WHEEL_SHA256"\n', ""))
    assert problems == [
        f"{repo / 'wheelpin.toml'}:13: lmcache.pins[0].python_tag: it names the wheel whose sha256 sha256_arg "
        "takes, and this pin has no sha256_arg: give one, or leave python_tag out"
    ]


def test_validate_names_the_stages_a_from_stage_pin_could_mean(repo: Path) -> None:
    text = GOOD.replace(
        'image_arg = "LMCACHE_WHEEL_IMAGE", sha256_arg = "LMCACHE_WHEEL_SHA256" },\n]', 'from_stage = "wheels" },\n]'
    )
    (repo / "docker/atom_release.dockerfile").write_text(
        "FROM docker.io/rocm/atom-dev:x@sha256:" + "a" * 64 + " AS wheel\nFROM base AS final\n"
    )
    code, problems, _ = validate(repo, text, PINNED)
    assert code == 2
    assert problems == [
        f"{repo / 'wheelpin.toml'}:11: lmcache.pins[1].from_stage: docker/atom_release.dockerfile: "
        "no FROM … AS wheels stage (stages here: final, wheel; did you mean wheel?)"
    ]


def test_a_pinned_tag_the_template_does_not_give_is_said_not_refused(repo: Path) -> None:
    """The first bump replaces it (a bootstrap pin `:latest@sha256:…` is usual): a warning."""
    code, problems, warnings = validate(
        repo, GOOD, PINNED.replace("lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210", "latest")
    )
    assert code == 0 and not problems
    assert any(
        warning.endswith(
            "docker/Dockerfile:1: tag 'latest' does not fit the tag template "
            "'lmcache-v{version_base}-g{sha8}-rocm-torch210' of component lmcache: "
            "the first bump replaces it"
        )
        for warning in warnings
    ), warnings


@pytest.mark.parametrize("case", sorted(p.name for p in (ROOT / "tests/golden/pins").iterdir()))
def test_every_golden_pins_config_validates(case: str) -> None:
    """What the pass bumps (tests/test_pins.py) validate accepts: no check refuses more."""
    result = wheelpin("config", "validate", str(ROOT / "tests/golden/pins" / case / "original/wheelpin.toml"), "--json")
    assert result.code == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('name = "lmcache"', 'name = "lmcache"\nlabel = ["x"]', "lmcache.label: unknown key, did you mean `labels`?"),
        ('branch = "dev"', 'brnch = "dev"', "lmcache.upstream.brnch: unknown key, did you mean `branch`?"),
        ("image_arg", "imag_arg", "lmcache.pins[0].imag_arg: unknown key, did you mean `image_arg`?"),
        ('name = "lmcache"', 'name = "lmcache"\nzzz = 1', "lmcache.zzz: unknown key"),
    ],
)
def test_an_unknown_key_suggests_the_closest_allowed_one(repo: Path, old: str, new: str, expected: str) -> None:
    problems = problems_of(repo, GOOD.replace(old, new, 1))
    assert any(problem.endswith(expected) for problem in problems), problems


def test_problems_name_the_component_by_its_name_unless_it_has_none_of_its_own(repo: Path) -> None:
    second = GOOD.replace('name = "lmcache"', 'name = "mooncake"').replace('"gfx950"]', '"gfx9500"]')
    assert any(": mooncake.wheel.archs: " in problem for problem in problems_of(repo, GOOD + "\n" + second))
    twice = problems_of(repo, GOOD + "\n" + GOOD.replace('"gfx950"]', '"gfx9500"]'))
    assert any(": component[1].wheel.archs: " in problem for problem in twice)  # which lmcache? the index says


def test_discovery(repo: Path) -> None:
    (repo / ".github").mkdir()
    (repo / "wheelpin.toml").write_text(GOOD)
    assert find_config(repo) == repo / "wheelpin.toml"
    (repo / ".github/wheelpin.toml").write_text(GOOD)
    assert find_config(repo) == repo / ".github/wheelpin.toml"


def test_validate_command(repo: Path) -> None:
    (repo / ".github").mkdir()
    (repo / ".github/wheelpin.toml").write_text(GOOD.replace('"gfx950"]', '"gfx9500"]'))
    result = wheelpin("config", "validate", "--repo", str(repo))
    assert result.code == 2 and ".github/wheelpin.toml:4: lmcache.wheel.archs" in result.stderr
    (repo / ".github/wheelpin.toml").write_text(GOOD)
    assert wheelpin("config", "validate", "--repo", str(repo)).code == 0
    # a file given by path finds its repository above .github/
    assert wheelpin("config", "validate", str(repo / ".github/wheelpin.toml")).code == 0
    missing = wheelpin("config", "validate", "--repo", str(repo / "nowhere"))
    assert missing.code == 2 and "no such repository folder" in missing.stderr


def test_schema_names_the_contract_keys() -> None:
    result = wheelpin("config", "schema")
    assert result.code == 0
    schema = json.loads(result.stdout)
    component = schema["$defs"]["Component"]["properties"]
    for key in ("name", "upstream", "wheel", "build", "image", "constraints", "pins"):
        assert key in component
    assert {"kind", "file", "image_arg", "sha256_arg"} <= set(schema["$defs"]["DockerfileArgPin"]["properties"])
    assert {"kind", "file", "from_stage", "sha256_arg"} <= set(schema["$defs"]["DockerfileFromPin"]["properties"])
    assert component["pins"]["items"]["oneOf"] == [
        {"$ref": "#/$defs/DockerfileArgPin"},
        {"$ref": "#/$defs/DockerfileFromPin"},
    ]
    assert {"distribution", "archs", "require_needed", "forbid_needed"} <= set(schema["$defs"]["Wheel"]["properties"])
    assert {"repo", "branch", "tags"} <= set(schema["$defs"]["Upstream"]["properties"])
    assert {"kind", "command"} <= set(schema["$defs"]["CommandBuild"]["properties"])
    assert {"kind", "workflow", "inputs"} <= set(schema["$defs"]["ActionsBuild"]["properties"])
    assert component["build"]["oneOf"] == [{"$ref": "#/$defs/CommandBuild"}, {"$ref": "#/$defs/ActionsBuild"}]


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("0m", "shorter than 5 minutes"),
        ("2m", "shorter than 5 minutes"),
        ("5m", None),
        ("6h", None),
        ("*/15 * * * *", None),
        ("* * * * *", "more often than every 5 minutes"),
        ("0,1 * * * 1", "more often than every 5 minutes"),
        ("every hour", "neither an interval"),
        # read as cron reads it (crontab(5)): 7 is Sunday too, names and shortcuts work
        ("0 0 * * 7", None),
        ("0 0 * * 1,7", None),
        ("0 0 * * MON-FRI", None),
        ("@daily", None),
        ("0 0 * * 8", "day-of-week field is wrong"),
        ("@reboot", "not a crontab shortcut"),
        ("0 0 * * * *", "five fields"),
        ("0 0 31 2 *", "day-of-month field is wrong"),
        # every minute of one day a month (APScheduler's week from a Monday never saw the 1st)
        ("* * 1 * *", "more often than every 5 minutes"),
        # 23:58 then 00:00 the next day; but on Mondays only, never two days running
        ("0,58 0,23 * * *", "more often than every 5 minutes"),
        ("0,58 0,23 * * 1", None),
        # an interval is at most a year (a leap one): the loop cannot sleep longer
        ("366d", None),
        ("367d", "longer than 366 days"),
        ("99999999999999999999m", "longer than 366 days"),
        ("9" * 5000 + "m", "longer than 366 days"),
    ],
)
def test_schedules(repo: Path, schedule: str, problem: str | None) -> None:
    text = f'[defaults]\nschedule = "{schedule}"\n\n' + GOOD
    if problem is None:
        (repo / "wheelpin.toml").write_text(text)
        assert load_config(repo / "wheelpin.toml", root=repo).config.defaults.schedule == schedule
    else:
        problems = problems_of(repo, text)
        assert any("defaults.schedule" in p and problem in p for p in problems), problems


@pytest.mark.parametrize(
    ("timezone", "problem"),
    [
        ("Europe/Berlin", None),
        ("UTC", None),
        ("America/Argentina/Buenos_Aires", None),
        ("Mars/Olympus_Mons", "not an IANA time zone name"),
        ("Europe", "not an IANA time zone name"),
        ("europe/berlin", "not an IANA time zone name"),
        ("../../etc/passwd", "not an IANA time zone name"),
        ("", "not an IANA time zone name"),
        ("Europe/Berlin\\u0000", "not an IANA time zone name"),
    ],
)  # a NUL, escaped in TOML
def test_the_timezone_crontab_lines_are_read_in(repo: Path, timezone: str, problem: str | None) -> None:
    text = f'[defaults]\ntimezone = "{timezone}"\nschedule = "0 9 * * 1-5"\n\n' + GOOD
    if problem is None:
        (repo / "wheelpin.toml").write_text(text)
        assert load_config(repo / "wheelpin.toml", root=repo).config.defaults.timezone == timezone
    else:
        problems = problems_of(repo, text)
        assert any("defaults.timezone" in p and problem in p for p in problems), problems


def test_the_timezone_is_utc_when_absent(repo: Path) -> None:
    (repo / "wheelpin.toml").write_text(GOOD)
    assert load_config(repo / "wheelpin.toml", root=repo).config.defaults.timezone == "UTC"


@pytest.mark.parametrize("defaults", ['schedule = "99999999999999999999m"', 'timezone = "Mars/Olympus_Mons"'])
def test_validate_refuses_an_absurd_schedule_or_timezone_in_one_sentence(repo: Path, defaults: str) -> None:
    (repo / "wheelpin.toml").write_text(f"[defaults]\n{defaults}\n\n" + GOOD)
    result = wheelpin("config", "validate", "--repo", str(repo))
    assert result.code == 2, result.stdout + result.stderr
    (said,) = [line for line in result.stderr.splitlines() if "defaults." in line]
    assert "wheelpin.toml:2: defaults." in said and "Traceback" not in result.stderr
    assert ("longer than 366 days" in said) or ("not an IANA time zone name" in said), said


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        (b"x = " + b"[" * 1000 + b"]" * 1000 + b"\n", "nest more than 32 levels deep"),
        (b"x = " + b"{a = " * 300 + b"1" + b"}" * 300 + b"\n", "nest more than 32 levels deep"),
        (b"# padding\n" * 600_000, "the config is over 1048576 bytes"),
        (b'[defaults]\nlabels = ["\xff"]\n', "the config is not UTF-8 text"),
    ],
)
def test_hostile_configs_are_one_sentence_and_exit_2(tmp_path: Path, text: bytes, sentence: str) -> None:
    """Nested 1,000 deep (tomli raises RecursionError), 6 MB (parsed TOML takes many times
    its size in memory), not UTF-8: one sentence, exit 2, memory bounded by the size cap."""
    path = tmp_path / "wheelpin.toml"
    path.write_bytes(text)
    result = wheelpin("config", "validate", str(path))
    assert result.code == 2 and sentence in result.stderr, result.stderr
    assert "internal error" not in result.stderr and len(result.stderr.splitlines()) <= 2


def test_allow_vendored_rocm_is_a_rule_and_its_change_verifies_again(repo: Path) -> None:
    from bot.core.checks.component import component_rules
    from bot.core.checks.digest import rules_digest

    path = repo / "wheelpin.toml"
    path.write_text(GOOD)
    (default,) = load_config(path, root=repo).config.components
    path.write_text(
        GOOD.replace(
            'require_needed = ["libamdhip64*"] }', 'require_needed = ["libamdhip64*"], allow_vendored_rocm = true }'
        )
    )
    (allowed,) = load_config(path, root=repo).config.components
    assert not component_rules(default, commit=None).allow_vendored_rocm
    assert component_rules(allowed, commit=None).allow_vendored_rocm
    assert rules_digest(default) != rules_digest(allowed)  # an image verified under the other rule is not taken


@pytest.mark.parametrize(
    ("command", "warned"),
    [
        ('"./build.sh {out}"', "./build.sh"),
        ('"CC=clang scripts/build --out {out}"', "scripts/build"),
        ('["tools/wheel.sh", "{out}"]', "tools/wheel.sh"),
        ('"./present.sh"', None),
        ('"python -m build"', None),  # on PATH: not a file of the checkout
    ],
)
def test_a_build_command_whose_relative_program_the_local_upstream_lacks_is_a_warning(
    repo: Path, command: str, warned: str | None
) -> None:
    """Only a warning: the build runs in a checkout of the commit, and validate looks at the
    upstream folder's working tree (a remote upstream is not looked at)."""
    git(["init", "--quiet", str(repo / "upstream")])
    (repo / "upstream/present.sh").write_text("#!/bin/sh\n")
    text = GOOD.replace('"https://github.com/LMCache/LMCache"', '"upstream"').replace(
        'build = { workflow = "lmcache-rocm-wheel.yaml", inputs = { lmcache_commit = "{sha}" } }',
        f"build = {{ command = {command} }}",
    )
    code, problems, warnings = validate(repo, text, PINNED)
    assert code == 0 and not problems, problems
    said = [warning for warning in warnings if "does not exist in" in warning]
    assert said == (
        [
            f"{repo / 'wheelpin.toml'}:6: lmcache.build.command: {warned} does not exist in {repo / 'upstream'} "
            "(the build runs it in a checkout of the upstream commit)"
        ]
        if warned
        else []
    ), warnings
    remote = validate(repo, text.replace('"upstream"', '"https://github.com/LMCache/LMCache"'), PINNED)
    assert not [warning for warning in remote[2] if "does not exist in" in warning]


UPSTREAM_FIX = (
    "give the path of the upstream's git repository (a relative one starts at the config's repository) or its URL"
)


def test_an_upstream_folder_the_pass_cannot_fetch_from_is_a_problem(repo: Path) -> None:
    """An `upstream.repo` naming a folder of this host: one that does not exist, or holds no
    git repository (a folder inside another repository's checkout is none either: `git
    ls-remote` looks in the folder itself), is where the pass stops, so validate says it,
    located at the key; the config read here names this host's folders."""
    git(["init", "--quiet", str(repo / "checkout")])
    (repo / "checkout/sub").mkdir()
    (repo / "plain").mkdir()
    git(["init", "--quiet", "--bare", str(repo / "bare.git")])
    config = repo / "wheelpin.toml"
    said = {
        "upstrem": f"the folder {repo / 'upstrem'} does not exist: {UPSTREAM_FIX}",
        f"file://{repo}/upstrem": f"the folder {repo / 'upstrem'} does not exist: {UPSTREAM_FIX}",
        "plain": f"the folder {repo / 'plain'} is not a git repository: {UPSTREAM_FIX}",
        "checkout/sub": f"the folder {repo / 'checkout/sub'} is not a git repository: {UPSTREAM_FIX}",
        "wheelpin.toml": f"{repo / 'wheelpin.toml'} is not a folder: {UPSTREAM_FIX}",
    }
    for upstream, sentence in said.items():
        code, problems, _ = validate(repo, GOOD.replace("https://github.com/LMCache/LMCache", upstream), PINNED)
        assert (code, problems) == (2, [f"{config}:3: lmcache.upstream.repo: {sentence}"]), upstream
    for upstream in (
        "checkout",
        str(repo / "bare.git"),
        f"file://{repo}/checkout",
        "git@github.com:LMCache/LMCache",
        "github.com:LMCache/LMCache.git",  # scp-like without a user: ssh, no folder here
    ):
        code, problems, _ = validate(repo, GOOD.replace("https://github.com/LMCache/LMCache", upstream), PINNED)
        assert (code, problems) == (0, []), upstream


def test_two_components_pinning_one_site_are_refused_by_validate_and_by_the_pass(repo: Path) -> None:
    """A component's table copied under a new name (another ROCm, another repository) still
    pins the same ARGs and stage: two passes would each move them, in two proposals that
    undo each other. The loader refuses it, so validate and the pass say the same sentence."""
    (repo / "docker/Dockerfile").write_text(
        PINNED.replace("FROM a\n", f"FROM docker.io/rocm/atom-dev:wheels@sha256:{'c' * 64} AS Wheels\nFROM a\n")
    )
    copy = GOOD.replace('name = "lmcache"', 'name = "lmcache-rocm7"').replace(
        "docker.io/rocm/atom-dev", "docker.io/rocm/atom-dev-rocm7"
    )
    copy = copy.replace(
        '  { file = "docker/atom_release.dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE", '
        'sha256_arg = "LMCACHE_WHEEL_SHA256" },\n',
        '  { file = "./docker//atom_release.dockerfile", image_arg = "LMCACHE_WHEEL_IMAGE" },\n'
        '  { file = "docker/Dockerfile", from_stage = "wheels" },\n',
    )
    extra = '\n[[component]]\nname = "wheels"' + GOOD.split('name = "lmcache"', 1)[1].replace(
        "docker.io/rocm/atom-dev", "docker.io/rocm/other"
    )
    extra = extra.split("pins = [", 1)[0] + 'pins = [{ file = "docker/Dockerfile", from_stage = "Wheels" }]\n'
    text = GOOD + "\n" + copy + extra
    problems = problems_of(repo, text)
    path = repo / "wheelpin.toml"
    assert problems == [
        f"{path}:23: lmcache-rocm7.pins[0].image_arg: docker/Dockerfile: ARG LMCACHE_WHEEL_IMAGE and ARG "
        "LMCACHE_WHEEL_SHA256 are pinned by both lmcache and lmcache-rocm7: each would move them to its own image, "
        "in two proposals that undo each other; keep the pin in one component",
        f"{path}:24: lmcache-rocm7.pins[1].image_arg: docker/atom_release.dockerfile: ARG LMCACHE_WHEEL_IMAGE is "
        "pinned by both lmcache and lmcache-rocm7: each would move it to its own image, in two proposals that undo "
        "each other; keep the pin in one component",
        f"{path}:36: wheels.pins[0].from_stage: docker/Dockerfile: FROM … AS Wheels is pinned by both lmcache-rocm7 "
        "and wheels: each would move it to its own image, in two proposals that undo each other; keep the pin in "
        "one component",
    ]
    validated = wheelpin("config", "validate", str(path))
    assert validated.code == 2 and validated.stderr.splitlines()[:3] == problems, validated.stderr
    assert "is not in the component's repository" not in validated.stderr  # the sharing is said, not a symptom
    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(repo))
    passed = wheelpin("reconcile", "--once", "--repo", str(repo))
    for result in (dry, passed):
        assert result.code == 2 and problems[0] in result.stderr, result.stderr

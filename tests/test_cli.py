"""The command-line contract: exit codes, one clean JSON document, one-sentence errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli import wheelpin
from tests.fixtures.wheels import build_wheel


@pytest.fixture()
def wheels(tmp_path: Path) -> tuple[Path, Path]:
    old = build_wheel(
        tmp_path,
        name="demo",
        version="1.0+g05fc77a0",
        files={"demo/__init__.py": b""},
        requires_dist=["numpy>=2.3", "msgspec"],
    )
    new = build_wheel(
        tmp_path,
        name="demo",
        version="1.1+g3d3aa833",
        files={"demo/__init__.py": b""},
        requires_dist=["numpy<=2.2.6", "redis; extra == 'redis'"],
    )
    return old, new


def test_inspect_json_is_one_clean_document(wheels: tuple[Path, Path]) -> None:
    result = wheelpin("wheel", "inspect", str(wheels[1]), "--json", env={"WHEELPIN_LOG_LEVEL": "info"})
    assert result.code == 0
    report = result.json()
    for key in ("name", "version", "tags", "sha256", "size", "requires_dist", "elf", "archs", "problems"):
        assert key in report
    assert report["requires_dist"] == ["numpy<=2.2.6", "redis; extra == 'redis'"]
    # logs go to stderr, as JSON since stderr is not a terminal
    events = [json.loads(line) for line in result.stderr.splitlines()]
    assert any(event["event"] == "wheel.inspected" for event in events)


def test_inspect_human_text(wheels: tuple[Path, Path]) -> None:
    result = wheelpin("wheel", "inspect", str(wheels[1]), "--expect-commit", "3d3aa833")
    assert result.code == 0
    assert "problems  none" in result.stdout and "1.1+g3d3aa833" in result.stdout


def test_inspect_problem_exits_1(wheels: tuple[Path, Path]) -> None:
    result = wheelpin("wheel", "inspect", str(wheels[1]), "--json", "--expect-commit", "05fc77a0")
    assert result.code == 1
    assert result.json()["problems"] == ["version 1.1+g3d3aa833 does not carry commit g05fc77a0"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--require-arch", "sm_90"], "is not an AMDGPU processor name"),
        (["--expect-commit", "xyz"], "is not 8 to 40 hex digits"),
    ],
)
def test_bad_options_exit_2(wheels: tuple[Path, Path], args: list[str], message: str) -> None:
    result = wheelpin("wheel", "inspect", str(wheels[1]), *args)
    assert result.code == 2 and message in result.stderr and result.stdout == ""


def test_unreadable_wheel_exits_2_with_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "demo-1.0-py3-none-any.whl"
    bad.write_bytes(b"PK\x03\x04 not really")
    result = wheelpin("wheel", "inspect", str(bad), "--json")
    assert result.code == 2 and result.json() == {
        "error": result.stderr.split("wheelpin: ", 1)[1].strip(),
        "kind": "input",
        "exit": 2,
    }
    lines = [line for line in result.stderr.splitlines() if line.startswith("wheelpin:")]
    assert len(lines) == 1 and str(bad) in lines[0]
    assert "Traceback" not in result.stderr


def test_diff_json_and_conflict_exit(wheels: tuple[Path, Path], tmp_path: Path) -> None:
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("# the image's pins\nnumpy==2.3.5  # ships with torch\n\n")
    result = wheelpin("wheel", "diff", str(wheels[0]), str(wheels[1]), "--json", "--constraints", str(constraints))
    assert result.code == 1
    diff = result.json()
    assert [c["name"] for c in diff["added"]] == ["redis"]
    assert [c["name"] for c in diff["removed"]] == ["msgspec"]
    assert diff["changed"] == [
        {
            "name": "numpy",
            "old": "numpy>=2.3",
            "new": "numpy<=2.2.6",
            "old_entries": ["numpy>=2.3"],
            "new_entries": ["numpy<=2.2.6"],
        }
    ]
    assert diff["conflicts"] == [{"requirement": "numpy<=2.2.6", "constraint": "numpy==2.3.5"}]


def test_diff_without_conflict_exits_0(wheels: tuple[Path, Path]) -> None:
    result = wheelpin("wheel", "diff", str(wheels[0]), str(wheels[1]), "--constraint", "numpy==2.2.0")
    assert result.code == 0 and "~ numpy>=2.3  →  numpy<=2.2.6" in result.stdout


def test_diff_of_a_wheel_with_itself(wheels: tuple[Path, Path]) -> None:
    result = wheelpin("wheel", "diff", str(wheels[0]), str(wheels[0]), "--json")
    assert result.code == 0
    assert result.json() | {"old": None, "new": None} == {
        "old": None,
        "new": None,
        "added": [],
        "removed": [],
        "changed": [],
        "conflicts": [],
    }


def test_diff_bad_constraints_file(wheels: tuple[Path, Path], tmp_path: Path) -> None:
    constraints = tmp_path / "c.txt"
    constraints.write_text("-r other.txt\n")
    result = wheelpin("wheel", "diff", str(wheels[0]), str(wheels[1]), "--constraints", str(constraints))
    assert result.code == 2 and f"{constraints}:1" in result.stderr
    missing = wheelpin("wheel", "diff", str(wheels[0]), str(tmp_path / "nope-1.0-py3-none-any.whl"))
    assert missing.code == 2 and "no such wheel file" in missing.stderr


def test_usage_errors_exit_2() -> None:
    assert wheelpin("wheel", "frobnicate").code == 2


def test_bare_wheelpin_prints_its_help_on_stderr_and_exits_2() -> None:
    """No command is a usage error (argparse's 2), but says more than argparse's "arguments
    are required": the whole help, commands and all, on stderr; stdout stays empty."""
    result = wheelpin()
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith("usage: wheelpin") and "one pass (or a loop) over the components" in result.stderr
    assert "exit codes:" in result.stderr


@pytest.mark.parametrize("args", [("config", "schema"), ("completion", "bash"), ("pins", "list", "--json")])
def test_a_closed_pipe_ends_quietly_with_1(tmp_path: Path, args: tuple[str, ...]) -> None:
    """`wheelpin … | head -c 10`: stdout's reader gone (here, before wheelpin writes), it
    exits 1 as Python's signal docs advise ("Note on SIGPIPE"), no traceback, no
    "Exception ignored" from the interpreter's last flush."""
    import os
    import sys

    from tests.cli import environment

    (tmp_path / "wheelpin.toml").write_text("""
[[component]]
name = "demo"
upstream = { repo = "../upstream", branch = "main" }
wheel = { distribution = "demo" }
build = { command = "true" }
image = { repository = "example.org/demo", tag = "v{version}" }
pins = [{ file = "wheelpin.toml", image_arg = "X" }]
""")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before wheelpin writes: every write meets EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bot.cli", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr and "Exception" not in done.stderr


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (("reconcile", "--once", "--config", "{tmp}/wheelpin.toml", "--repo", "{tmp}", "--json"), "config"),
        (("pins", "list", "--config", "{tmp}/wheelpin.toml", "--json"), "config"),
        (("config", "validate", "{tmp}/wheelpin.toml", "--json"), "config"),
        (("image", "show", "oci:{tmp}/nothing", "--json"), "usage"),
        (("wheel", "inspect", "{tmp}/nope-1.0-py3-none-any.whl", "--json"), "input"),
    ],
)
def test_json_commands_stopped_by_an_error_print_a_json_error(tmp_path: Path, args: tuple[str, ...], kind: str) -> None:
    """With --json, an error that stops a command before its report is a JSON document on
    stdout too (bot/cli.py's _failed), the same sentence as stderr's, its kind and exit code."""
    (tmp_path / "wheelpin.toml").write_text("[[component]]\nname = 3\n")
    result = wheelpin(*(arg.format(tmp=tmp_path) for arg in args))
    assert result.code == 2, result.stderr
    document = result.json()
    if args[0] == "config":  # validate's own report of an invalid config
        assert document["valid"] is False and document["problems"]
        return
    assert document == {"error": document["error"], "kind": kind, "exit": 2}
    assert f"wheelpin: {document['error']}" in result.stderr


def test_bad_setting_exits_2(wheels: tuple[Path, Path]) -> None:
    result = wheelpin("wheel", "inspect", str(wheels[0]), env={"WHEELPIN_LOG_LEVEL": "loud"})
    assert result.code == 2 and "WHEELPIN_" in result.stderr


def test_demo_tells_the_whole_story(tmp_path: Path) -> None:
    result = wheelpin("demo", "--workdir", str(tmp_path), "--json", env={"HOME": str(tmp_path / "home")})
    assert result.code == 0, result.stderr
    demo = result.json()
    first, second, third = (p["components"][0] for p in demo["passes"])
    assert [a["kind"] for a in first["actions"]] == ["build", "publish", "propose"]
    assert [a["kind"] for a in second["actions"]] == ["build", "publish", "propose"]
    assert "updated wheelpin/demo-cache" in second["messages"][-1]
    assert third["status"] == "nothing" and third["actions"] == []
    proposal = demo["proposal"]
    assert demo["commits"][2][:8] in proposal.splitlines()[0]
    assert "changed `numpy>=2.3` → `numpy<=2.2.6`" in proposal and "added `msgspec>=0.18`" in proposal
    assert "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5`" in proposal
    # nothing written outside the scratch folder (HOME points inside it, and stays empty)
    assert not (tmp_path / "home").exists()


def test_the_demo_runs_on_a_machine_without_bubblewrap(tmp_path: Path) -> None:
    """The README's first command on a fresh machine: no bwrap there, so the demo's own
    build (a script it wrote) runs unsandboxed and the demo says so; it does not fail."""
    import shutil

    bin_folder = tmp_path / "bin"  # git alone on PATH: no bwrap
    bin_folder.mkdir()
    (bin_folder / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    result = wheelpin(
        "demo", "--workdir", str(tmp_path / "work"), env={"HOME": str(tmp_path / "home"), "PATH": str(bin_folder)}
    )
    assert result.code == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "bwrap cannot run here: no bwrap on PATH. The demo's own build script runs unsandboxed" in result.stdout


def test_every_option_has_help_and_every_command_examples_and_exit_codes() -> None:
    """As skopeo's and crane's commands do: `wheelpin X --help` says what each option does,
    shows how the command is used, and what its exit codes mean."""
    import argparse

    from bot.cli import build_parser

    def leaves(
        parser: argparse.ArgumentParser, path: tuple[str, ...]
    ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += leaves(sub, (*path, name))
        return found or [(path, parser)]

    commands = leaves(build_parser(), ())
    assert len(commands) == 16, [path for path, _ in commands]
    for path, parser in commands:  # the parser built for the command being run is the whole one's part
        alone = dict(leaves(build_parser(only=path[0]), ()))[path]
        assert alone.format_help() == parser.format_help(), path
    for path, parser in commands:
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"wheelpin {' '.join(path)}: {action.option_strings or action.dest} has no help"
        text = parser.format_help()
        assert "examples:\n  wheelpin" in text or "examples:\n  WHEELPIN_" in text, path
        assert "exit codes:" in text, path


def test_each_command_lists_the_exit_codes_it_can_return() -> None:
    """Each command's help lists the codes of bot/cli.py's EXIT_CODES_OF alone, and the table
    follows the code paths: 4 only where a command reaches out (a registry: its --plain-http;
    GitHub; the database), 3 only where a guard can refuse (the publisher's tag, a pass's branch)."""
    import argparse
    import re

    from bot.cli import EXIT_CODES_OF, build_parser

    parser = build_parser()
    helps: dict[str, str] = {}
    for path in EXIT_CODES_OF:
        sub = parser
        for word in path.split():
            chooser = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction))
            sub = chooser.choices[word]
        helps[path] = sub.format_help()
    listed = {
        path: tuple(int(code) for code in re.findall(r"^  (\d)  ", text.split("exit codes:\n", 1)[1], re.MULTILINE))
        for path, text in helps.items()
    }
    assert listed == EXIT_CODES_OF
    reach_out = {path for path, text in helps.items() if "--plain-http" in text} | {"serve", "app create"}
    assert {path for path, codes in EXIT_CODES_OF.items() if 4 in codes} == reach_out
    assert {path for path, codes in EXIT_CODES_OF.items() if 3 in codes} == {"image publish", "reconcile"}
    assert all(2 in codes and 0 in codes for codes in EXIT_CODES_OF.values())


def test_shell_completion_completes_commands_and_options(tmp_path: Path) -> None:
    """`wheelpin completion bash` is sourced into a real bash and asked as bash asks it (the
    words typed so far in COMP_WORDS); fish's lines name every command; zsh's is shtab's."""
    script = wheelpin("completion", "bash")
    assert script.code == 0
    (tmp_path / "wheelpin.bash").write_text(script.stdout)

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        asked = subprocess.run(
            [
                "bash",
                "-c",
                f"source {tmp_path / 'wheelpin.bash'}; COMP_WORDS=({line}); "
                f"COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; "
                "_shtab_wheelpin; printf '%s\\n' \"${COMPREPLY[@]}\"",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert asked.returncode == 0, asked.stderr
        return asked.stdout.split()

    assert complete("wheelpin", "rec") == ["reconcile"]
    assert set(complete("wheelpin", "image", "")) == {"publish", "show", "check", "verify"}
    assert set(complete("wheelpin", "reconcile", "--pl")) == {"--platform", "--plain-http"}
    fish = wheelpin("completion", "fish")
    assert fish.code == 0 and "complete -c wheelpin" in fish.stdout
    for command in ("reconcile", "serve", "demo", "completion"):
        assert f"-a {command} " in fish.stdout
    assert "-l tls-verify -r" in fish.stdout and "__fish_seen_subcommand_from image" in fish.stdout
    zsh = wheelpin("completion", "zsh")
    assert zsh.code == 0 and zsh.stdout.startswith("#compdef wheelpin")
    assert wheelpin("completion", "tcsh").code == 2


def test_image_publish_with_a_component_smoke_tests_the_exact_wheel(tmp_path: Path) -> None:
    """`wheel.smoke` runs before `image publish --component` publishes, as in a pass: in a
    fresh venv holding only the wheel. A failure publishes nothing, in one sentence."""
    (tmp_path / "wheelpin.toml").write_text("""
[[component]]
name = "demo"
upstream = { repo = "../upstream", branch = "main" }
wheel = { distribution = "demo", version_carries_commit = false, smoke = "python -c 'import demo; assert demo.WORKS'" }
build = { command = "true" }
image = { repository = "example.org/demo", tag = "v{version_base}-g{sha8}" }
pins = [{ file = "wheelpin.toml", image_arg = "X" }]
""")
    env = {"WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    broken = build_wheel(
        tmp_path / "broken", name="demo", version="1.0", files={"demo/__init__.py": b"WORKS = False\n"}
    )
    layout = tmp_path / "images"
    refused = wheelpin(
        "image",
        "publish",
        str(broken),
        "--to",
        f"oci:{layout}:v1.0",
        "--component",
        "demo",
        "--repo",
        str(tmp_path),
        env=env,
    )
    (said,) = [line for line in refused.stderr.splitlines() if line.startswith("wheelpin:")]
    assert refused.code == 1 and said.startswith("wheelpin: smoke test failed, nothing published: py3: `python -c")
    assert "AssertionError" in said and not (layout / "index.json").exists()
    good = build_wheel(tmp_path / "good", name="demo", version="1.0", files={"demo/__init__.py": b"WORKS = True\n"})
    published = wheelpin(
        "image",
        "publish",
        str(good),
        "--to",
        f"oci:{layout}:v1.0",
        "--component",
        "demo",
        "--repo",
        str(tmp_path),
        env=env,
    )
    assert published.code == 0, published.stderr
    assert published.stdout.splitlines()[-1] == "smoke test `python -c 'import demo; assert demo.WORKS'` passed for py3"
    again = wheelpin(
        "image",
        "publish",
        str(good),
        "--to",
        f"oci:{layout}:v1.0",
        "--component",
        "demo",
        "--repo",
        str(tmp_path),
        "--json",
        env=env,
    )
    assert again.code == 0 and again.json()["smoke"] == [
        "smoke test `python -c 'import demo; assert demo.WORKS'` passed for py3"
    ]

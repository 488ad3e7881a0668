"""wheelpin starts fast: a command imports only what it uses. Checked in a fresh
interpreter, as a user runs it; the times themselves are bench/startup.py's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "github3",
    "requests",
    "pydantic_settings",
    "structlog",
    "waitress",
    "procrastinate",
    "psycopg",
    "apscheduler",
    "prometheus_client",
    "cryptography",
    "elftools",
    "zstandard",
)


def modules_after(code: str, cwd: Path | None = None) -> set[str]:
    script = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 0, done.stderr
    return {name.split(".")[0] for name in json.loads(done.stdout.strip().splitlines()[-1])}


def test_importing_the_command_and_asking_for_help_import_no_library_behind_a_command() -> None:
    assert not set(HEAVY) & modules_after("import bot.cli")
    helped = modules_after(
        "import bot.cli\ntry:\n    bot.cli.main(['reconcile', '--help'])\nexcept SystemExit:\n    pass"
    )
    assert not set(HEAVY) & helped


def test_the_local_loop_loads_no_github_library() -> None:
    """A reconcile on the local platform (the README's first command) never speaks to GitHub:
    github3 and the App's JWT code load only for a repository on GitHub."""
    loaded = modules_after("import bot.commands.reconcile_cmd, bot.loop.runner, bot.loop.builders.api")
    assert not {"github3", "jwt", "procrastinate", "waitress", "psycopg"} & loaded
    # nor what only a pass with something to do needs: reading ELF and GPU code, publishing
    assert not {"elftools", "zstandard"} & loaded
    # nor requests, when no registry is spoken to (an OCI layout folder): it loads with the client
    assert "requests" not in modules_after("import bot.adapters.imagestore, bot.app.wiring, bot.core.wheel.metadata")


def test_githubs_package_loads_a_module_when_a_name_of_it_is_asked_for() -> None:
    """Importing the GitHub package, or its pure rules (host, sansio, workflowfile), loads
    no HTTP stack; a name of the package loads its module then, and only it."""
    pure = modules_after(
        "import bot.adapters.github, bot.adapters.github.host, bot.adapters.github.sansio, "
        "bot.adapters.github.workflowfile"
    )
    assert not {"github3", "requests", "jwt", "structlog", "yaml"} & pure
    asked = modules_after("from bot.adapters.github import GitHubPlatform")
    assert {"github3", "requests"} <= asked


def test_validating_a_config_imports_no_network_library(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker/Dockerfile").write_text(
        'ARG LMCACHE_IMAGE="ghcr.io/o/lmcache-wheel:v1@sha256:' + "a" * 64 + '"\nFROM scratch\n'
    )
    (tmp_path / "wheelpin.toml").write_text(
        '[[component]]\nname = "lmcache"\nupstream = { repo = "https://github.com/LMCache/LMCache", branch = "dev" }\n'
        'wheel = { distribution = "lmcache" }\nbuild = { workflow = "build.yml" }\n'
        'image = { repository = "ghcr.io/o/lmcache-wheel", tag = "v{version}" }\n'
        'pins = [{ file = "docker/Dockerfile", image_arg = "LMCACHE_IMAGE" }]\n'
    )
    loaded = modules_after(
        "import bot.cli\ncode = bot.cli.main(['config', 'validate'])\nassert code == 0, code", cwd=tmp_path
    )
    assert not {"github3", "requests", "pydantic_settings", "structlog", "waitress", "procrastinate"} & loaded


def test_python_dash_m_bot_is_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    from bot import __version__

    assert done.returncode == 0 and done.stdout.strip() == f"wheelpin {__version__}"


def test_a_pass_with_nothing_to_do_loads_none_of_the_acting_modules(tmp_path: Path) -> None:
    """A no-op pass (the demo's downstream once its pin is current) verifies, publishes and
    proposes nothing: those modules load at a pass's first action (bot/loop/runner.executor)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "WHEELPIN_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    made = subprocess.run(
        [sys.executable, "-m", "bot", "demo", "--workdir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert made.returncode == 0, made.stderr
    script = (
        "import sys, json\nsys.argv = ['wheelpin', 'reconcile', '--once', '--dry-run']\nimport bot.cli\n"
        "code = bot.cli.main()\nprint(json.dumps([code, sorted(sys.modules)]))"
    )
    env["WHEELPIN_CACHE_DIR"] = str(tmp_path / "demo" / "cache")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path / "demo" / "downstream",
    )
    code, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0 and "demo-cache: nothing to do\n" in done.stdout, done.stdout + done.stderr
    assert not {
        "bot.loop.execute",
        "bot.loop.consumers",
        "bot.adapters.publisher",
        "bot.core.wheel.report",
        "bot.adapters.inspectpool",
        "bot.core.image.consumer",
        "bot.app.schedule",
        "elftools",
        "zstandard",
    } & set(modules)
    # nor the wheel checks, a proposal's wording or the trust decisions: it checks, writes
    # and trusts nothing (the state marker and the rules digest have modules of their own)
    assert not {
        "bot.core.checks.api",
        "bot.core.checks.rules",
        "bot.core.checks.component",
        "bot.core.proposal.text",
        "bot.core.trust.decide",
        "ctypes.util",  # prctl is found without running ldconfig -p
    } & set(modules)
    # nor the service, nor GitHub's modules, nor pydantic-settings: the settings are a plain model
    assert {m for m in modules if m.startswith("bot.app.")} <= {
        "bot.app.settings",
        "bot.app.wiring",
    }
    assert not {m for m in modules if m.startswith("bot.adapters.github.")}
    assert not {"pydantic_settings", "dotenv", "github3", "requests", "jwt"} & {m.split(".")[0] for m in modules}
    # nor structlog (with asyncio and rich) when no line is written, nor cryptography without a signing key
    assert not {"structlog", "asyncio", "rich", "cryptography"} & {m.split(".")[0] for m in modules}


def test_start_up_runs_without_the_collector_only_when_wheelpin_is_the_process() -> None:
    """As the process's entry, `main` turns the cyclic collector off for start-up and, the
    command's modules loaded, freezes what they made and turns it on again; called by
    another program (argv given), it leaves that program's collector alone."""
    script = (
        "import gc, sys, json\nsys.argv = ['wheelpin', 'config', 'schema']\nimport bot.cli\n"
        "seen = []\nreal = bot.cli._collect_from_here\n"
        "def spy():\n    seen.append(gc.isenabled())\n    real()\n    seen.append(gc.isenabled())\n"
        "bot.cli._collect_from_here = spy\n"
        "code = bot.cli.main()\nfrozen = gc.get_freeze_count()\ngc.unfreeze()\n"
        "bot.cli.main(['config', 'schema'])\n"
        "print(json.dumps([code, seen, frozen, gc.get_freeze_count(), gc.isenabled()]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    code, seen, frozen, frozen_after_call, enabled = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0 and frozen > 10_000, (code, frozen)
    # the program: off during start-up, on after; the caller's call: on before and after, nothing frozen
    assert seen == [False, True, True, True] and frozen_after_call == 0 and enabled


def test_wheelpins_process_lists_no_entry_points_for_pydantic_plugins() -> None:
    """As the process, wheelpin loads no pydantic plugin, so its first model does not list
    every installed package's entry points; a caller's process, or an environment that says
    otherwise, keeps pydantic's own behaviour."""
    script = (
        "import importlib.metadata, json, os, sys\nasked = []\nreal = importlib.metadata.entry_points\n"
        "def spy(**kwargs):\n    asked.append(kwargs.get('group'))\n    return real(**kwargs)\n"
        "importlib.metadata.entry_points = spy\nimport bot.cli\n"
        "as_caller = sys.argv[1:] == ['as-caller']\nsys.argv = ['wheelpin', 'config', 'schema']\n"
        "code = bot.cli.main(['config', 'schema']) if as_caller else bot.cli.main()\n"
        "print(json.dumps([code, asked, os.environ.get('PYDANTIC_DISABLE_PLUGINS')]))"
    )

    def run(*args: str, **env: str) -> list[object]:
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **env},
        )
        assert done.returncode == 0, done.stderr
        result: list[object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    assert run() == [0, [], "__all__"]
    assert run("as-caller") == [0, ["pydantic"], None]
    assert run(PYDANTIC_DISABLE_PLUGINS="logfire") == [0, ["pydantic"], "logfire"]

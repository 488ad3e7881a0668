"""The `wheelpin` command: parses arguments, sets up logging, maps errors to exit codes.

Exit codes (docs/design.md §3): 0 ok · 1 a check failed · 2 usage, config or credentials
error · 3 refused by a guard · 4 transient outside failure. Errors are one sentence on
stderr; logs go to stderr too, so `--json` output on stdout stays one clean document.

It starts fast: a command's modules (and github3, requests, pydantic-settings, structlog
behind them) are imported only when that command runs, so `--help` imports argparse alone.
Run as the process's entry, start-up runs with the cyclic garbage collector off: see
`_collect_from_here`.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .commands.platforms.api import DEFAULT_PLATFORM, PLATFORMS, config_on_this_host
from .core.errors import UsageError, VerificationError, WheelpinError, kind_of

if TYPE_CHECKING:
    from .app.settings import Settings

EXIT_CODES = """exit codes:
  0  done, nothing wrong
  1  a check failed (a wheel refused, a conflict, a component's pass failed)
  2  usage, config, input or credentials error
  3  refused by a guard (a branch someone else wrote to, a tag that would be overwritten)
  4  a transient outside failure (a registry, GitHub or the network): try again"""

# Each code's line in a command's help, as EXIT_CODES says it.
_MEANING = dict((int(line.split()[0]), line) for line in EXIT_CODES.splitlines()[1:])

# The exit codes each command can return, kept here in one place: its help lists these alone
# (a code a command cannot return only misleads a script written against it), and
# tests/test_cli.py checks the help against this table. 2 is every command's (argparse's
# usage errors); 1 where a check can fail (a wheel's problems, a conflict, an image or tag
# that is not there: VerificationError); 3 only where a guard can refuse (the publisher's tag
# that holds other content, a branch a human wrote to); 4 only where the command reaches a
# registry, GitHub, the network or the database. A bug's internal error is 1 too, not listed.
EXIT_CODES_OF: dict[str, tuple[int, ...]] = {
    "wheel inspect": (0, 1, 2),  # a local file: nothing outside to fail
    "wheel diff": (0, 1, 2, 4),  # either side may be an image in a registry
    "image publish": (0, 1, 2, 3, 4),  # a tag holding other content is refused (3)
    "image show": (0, 1, 2, 4),
    "image check": (0, 1, 2, 4),
    "image verify": (0, 1, 2, 4),  # 1: no signed provenance, a wrong key, another subject
    # an invalid config is a config error: 2, and so is what --online finds the pass would stop
    # at (no such branch, a pinned digest the registry lacks, credentials refused); 4 when, with
    # --online, an upstream or registry did not answer (as the pass's outside failures)
    "config validate": (0, 2, 4),
    "config schema": (0, 2),
    "pins list": (0, 2),  # files in the checkout alone
    "pins bump": (0, 1, 2, 4),  # without --sha256, the image is read from its registry
    "reconcile": (0, 1, 2, 3, 4),  # RECONCILE_EXIT_CODES says how a pass ends on each
    "serve": (0, 2, 4),
    "app create": (0, 2, 4),
    "completion": (0, 2),
    "demo": (0, 1, 2),  # all local: a scratch folder, an OCI layout
    "init": (0, 2, 4),  # reads the pinned images from their registries
}


def exit_codes(codes: tuple[int, ...]) -> str:
    """The `exit codes:` section of a command's help: the lines of EXIT_CODES for `codes`."""
    return "\n".join(["exit codes:", *(_MEANING[code] for code in codes)])


# What `reconcile` exits with (commands/reconcile_cmd.exit_code): a pass reports each
# component rather than stopping at the first problem, so its codes say how the pass ended.
RECONCILE_EXIT_CODES = """exit codes:
  0  every component is as it should be, or waits (a build under way, a quiet period);
     without --once: stopped by SIGTERM or Ctrl-C (a second one stops at once: 130)
  1  a component's pass failed (a wheel refused, a build failed, a config problem): each
     failure is in the output, its kind in --json's error_kind; in a dry run, the plan
     meets a refusal the pass would fail at (docs/dry-run.md)
  2  usage, config, input or credentials error: no pass ran
  3  no component failed, but a branch a human wrote to was left alone (status left-alone;
     in a dry run, would be): delete the branch, or drop those commits, to let wheelpin
     propose there again
  4  a transient outside failure (a registry, GitHub, the network or git did not answer),
     before any pass (reading the config from GitHub) or in every component that failed
     (error_kind transient): try again"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"wheelpin: {message}\n")
        raise SystemExit(2)


def _command(
    commands: Any, name: str, text: str, *examples: str, exit_codes_text: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand whose help ends with its examples and its exit codes: those EXIT_CODES_OF
    gives it (its key is the parser's prog without `wheelpin `), or `exit_codes_text` when the
    command says its own."""
    examples_text = "examples:\n" + "\n".join(f"  {example}" for example in examples) + "\n\n" if examples else ""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=text,
        description=text[:1].upper() + text[1:] + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    codes = EXIT_CODES_OF[parser.prog.removeprefix("wheelpin ")]
    parser.epilog = examples_text + (exit_codes_text or exit_codes(codes))
    return parser


def _group(commands: Any, name: str, text: str) -> Any:
    """A command of subcommands (`wheelpin NAME COMMAND`): its subcommands' parsers, the one
    chosen in `NAME_command`."""
    group = commands.add_parser(name, help=text)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def _registry_flags(parser: argparse.ArgumentParser) -> None:
    """How registries are spoken to, as oras and skopeo spell it (also WHEELPIN_PLAIN_HTTP,
    WHEELPIN_TLS_VERIFY, WHEELPIN_INSECURE_REGISTRIES)."""
    parser.add_argument(
        "--plain-http",
        action="store_true",
        default=None,
        help="speak to registries over plain HTTP (loopback ones always are)",
    )
    parser.add_argument(
        "--tls-verify",
        type=_boolean,
        metavar="true|false",
        default=None,
        help="false: HTTPS without checking the registry's certificate",
    )


def _signing_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--signing-key",
        type=Path,
        metavar="FILE",
        help="sign the provenance attached to the images published with this PEM key "
        "(ECDSA P-256 or Ed25519; or WHEELPIN_SIGNING_KEY)",
    )


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"say true or false, not {text!r}")


def _json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of text")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` (the command being run, named first on the command
    line), that command alone: the others' options would be built for nothing (a few ms
    of each start-up), and only the whole parser's help lists them."""
    parser = _Parser(
        prog="wheelpin",
        description="Keeps ROCm wheels in container images current.",
        epilog="`wheelpin COMMAND --help` shows each command's options, examples and exit codes.\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"wheelpin {__version__}", help="print wheelpin's version and exit"
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for name, (text, define) in _COMMANDS.items():
        if only in (None, name):
            define(commands, name, text)
    return parser


def _wheel(commands: Any, name: str, text: str) -> None:
    wheel_commands = _group(commands, name, text)

    inspect = _command(
        wheel_commands,
        "inspect",
        "read and check one wheel",
        "wheelpin wheel inspect cupy_rocm_7_0-13.6.0-cp312-cp312-manylinux2014_x86_64.whl",
        "wheelpin wheel inspect dist/lmcache-*.whl --require-arch gfx942 --expect-commit 1a2b3c4d --json",
    )
    inspect.add_argument("wheel", type=Path, help="the wheel file")
    from .core.checks.api import CHECKS

    for name, check in CHECKS.items():
        if check.flag is not None:
            check.flag.add_to(inspect, dest=name)
    _json(inspect)

    diff = _command(
        wheel_commands,
        "diff",
        "compare the Requires-Dist of two wheels",
        "wheelpin wheel diff old/lmcache-0.3.9-*.whl new/lmcache-0.3.10-*.whl",
        "wheelpin wheel diff ghcr.io/rocm/lmcache-wheel@sha256:… new.whl --constraint numpy==2.3.5",
    )
    diff.add_argument("old", help="a wheel file or an image reference")
    diff.add_argument("new", help="a wheel file or an image reference")
    diff.add_argument(
        "--constraint",
        action="append",
        default=[],
        metavar="SPEC",
        help="a pin of the consuming image, e.g. numpy==2.3.5 (repeatable)",
    )
    diff.add_argument("--constraints", type=Path, metavar="FILE", help="a constraints file")
    diff.add_argument("--python-version", default="3.12", help="target Python (default 3.12)")
    diff.add_argument("--platform", default="linux_x86_64", help="target platform (default linux_x86_64)")
    diff.add_argument("--extra", action="append", default=[], help="extras the image installs (repeatable)")
    _json(diff)
    _registry_flags(diff)


def _image(commands: Any, name: str, text: str) -> None:
    image_commands = _group(commands, name, text)
    publish = _command(
        image_commands,
        "publish",
        "verify wheels and push them as one image",
        "wheelpin image publish dist/*.whl --to ghcr.io/your-org/lmcache-wheel:v0.3.10-g1a2b3c4d",
        "wheelpin image publish dist/*.whl --to oci:./images:lmcache --component lmcache --repo .",
    )
    publish.add_argument("wheels", nargs="+", type=Path, metavar="WHEEL", help="the wheel files (one image)")
    publish.add_argument("--to", required=True, metavar="REF", help="host/repo:tag or oci:FOLDER:tag")
    publish.add_argument("--component", help="verify with this component's rules, smoke and trust (from the config)")
    publish.add_argument("--config", type=Path, metavar="FILE", help="the config file (default: found in --repo)")
    publish.add_argument("--repo", type=Path, metavar="DIR", help="the downstream repository (default: here)")
    publish.add_argument("--revision", metavar="SHA", help="the whole upstream commit the wheels were built from")
    publish.add_argument("--source", metavar="URL", help="the upstream repository")
    publish.add_argument(
        "--require-arch",
        action="append",
        default=[],
        metavar="ARCH",
        help="every ELF with HIP code must carry this GPU target (repeatable)",
    )
    publish.add_argument(
        "--mount-from", metavar="REPO", help="a repository of the same registry that may hold the layer already"
    )
    _signing_flag(publish)
    _json(publish)
    _registry_flags(publish)
    show = _command(
        image_commands,
        "show",
        "what an image holds",
        "wheelpin image show ghcr.io/your-org/lmcache-wheel:v0.3.10-g1a2b3c4d",
        "wheelpin image show oci:./images:lmcache --json",
    )
    show.add_argument("ref", metavar="REF", help="host/repo:tag, host/repo@sha256:… or oci:FOLDER:tag")
    _json(show)
    _registry_flags(show)
    against = _command(
        image_commands,
        "check",
        "check wheels against the image that will consume them",
        "wheelpin image check dist/lmcache-*.whl --consumer docker.io/rocm/vllm:latest",
    )
    against.add_argument("wheels", nargs="+", type=Path, metavar="WHEEL", help="the wheel files")
    against.add_argument(
        "--consumer",
        required=True,
        metavar="REF",
        help="the consuming image, host/repo:tag or host/repo@sha256:…, read from its layers",
    )
    _json(against)
    _registry_flags(against)
    verify = _command(
        image_commands,
        "verify",
        "check the signed provenance attached to an image",
        "wheelpin image verify ghcr.io/your-org/lmcache-wheel:v0.3.10-g1a2b3c4d --key wheelpin.pub",
    )
    verify.add_argument("ref", metavar="REF", help="host/repo:tag, host/repo@sha256:… or oci:FOLDER:tag")
    verify.add_argument(
        "--key", required=True, type=Path, metavar="PUB", help="the PEM public key the provenance must be signed with"
    )
    _json(verify)
    _registry_flags(verify)


def _config(commands: Any, name: str, text: str) -> None:
    config_commands = _group(commands, name, text)
    validate = _command(
        config_commands,
        "validate",
        "check a config file",
        "wheelpin config validate",
        "wheelpin config validate .github/wheelpin.toml --repo . --json",
        "wheelpin config validate --online   # ask the upstreams and registries too",
    )
    validate.add_argument(
        "file", nargs="?", type=Path, help="default: .github/wheelpin.toml or wheelpin.toml in --repo"
    )
    validate.add_argument("--config", type=Path, metavar="FILE", help="the config file, as FILE")
    validate.add_argument("--repo", type=Path, help="the repository pin paths start from")
    validate.add_argument(
        "--online",
        action="store_true",
        help="also ask what the first pass will ask: each upstream's git ls-remote, each "
        "registry's tag list, each pinned image and the consuming image (no build, no write)",
    )
    validate.add_argument(
        "--github-repo",
        metavar="OWNER/NAME",
        help="with --online: also ask GitHub (WHEELPIN_GITHUB_TOKEN or the App's settings) "
        "whether each build.workflow is on this repository's base branch",
    )
    _json(validate)
    _registry_flags(validate)
    _command(
        config_commands, "schema", "print the config's JSON Schema", "wheelpin config schema > wheelpin.schema.json"
    )


def _pins(commands: Any, name: str, text: str) -> None:
    pins_commands = _group(commands, name, text)
    for verb, says, examples in (
        ("list", "list every configured pin", ("wheelpin pins list", "wheelpin pins list --repo ../vllm --json")),
        (
            "bump",
            "move one component's pins",
            (
                "wheelpin pins bump --component lmcache --image ghcr.io/your-org/lmcache-wheel:v0.3.10@sha256:… "
                "--sha256 cp312=3f…",
            ),
        ),
    ):
        sub = _command(pins_commands, verb, says, *examples)
        sub.add_argument("--config", type=Path, metavar="FILE", help="the config file (default: found in --repo)")
        sub.add_argument("--repo", type=Path, metavar="DIR", help="the downstream repository (default: here)")
        _json(sub)
        if verb == "bump":
            _registry_flags(sub)
            sub.add_argument("--component", required=True, help="the component whose pins move")
            sub.add_argument(
                "--image", required=True, metavar="REF@sha256:DIGEST", help="the wheel image to pin, by digest"
            )
            sub.add_argument(
                "--sha256",
                action="append",
                default=[],
                metavar="[PYTAG=]HEX",
                help="the wheel's sha256 (per python tag for multi-wheel images)",
            )


def _reconcile(commands: Any, name: str, text: str) -> None:
    reconcile = _command(
        commands,
        name,
        text,
        "wheelpin reconcile --once --dry-run",
        "wheelpin reconcile --once --platform github --github-repo rocm/vllm --component lmcache",
        "wheelpin reconcile            # a pass whenever a component's schedule says",
        exit_codes_text=RECONCILE_EXIT_CODES,
    )
    reconcile.add_argument("--once", action="store_true", help="one pass, then exit")
    reconcile.add_argument("--dry-run", action="store_true", help="print the plan; change nothing")
    reconcile.add_argument(
        "--platform",
        choices=list(PLATFORMS),
        default=DEFAULT_PLATFORM,
        help="where the downstream repository is: a local checkout (default) or GitHub",
    )
    reconcile.add_argument("--github-repo", metavar="OWNER/NAME", help="with --platform github")
    reconcile.add_argument("--repo", type=Path, metavar="DIR", help="the downstream checkout (default: here)")
    reconcile.add_argument(
        "--component", action="append", default=[], metavar="NAME", help="only this component (again for several)"
    )
    reconcile.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="append the pass in Markdown to FILE (an Actions run's $GITHUB_STEP_SUMMARY)",
    )
    reconcile.add_argument("--retry-failed", action="store_true", help="retry failed builds now")
    reconcile.add_argument(
        "--use-artifacts",
        type=Path,
        metavar="DIR",
        help="take the wheels in DIR as the build of --commit (verified, published, "
        "proposed; not rebuilt); needs --commit, and --component if there are several",
    )
    reconcile.add_argument(
        "--commit", metavar="SHA", help="with --use-artifacts: the upstream head they were built from"
    )
    reconcile.add_argument("--config", type=Path, metavar="FILE", help="the config file (default: found in --repo)")
    _signing_flag(reconcile)
    _json(reconcile)
    _registry_flags(reconcile)


def _serve(commands: Any, name: str, text: str) -> None:
    serve = _command(
        commands,
        name,
        text,
        "WHEELPIN_GITHUB_APP_ID=123456 WHEELPIN_GITHUB_PRIVATE_KEY_FILE=app.pem "
        "WHEELPIN_WEBHOOK_SECRET_FILE=secret wheelpin serve --host 0.0.0.0",
        "WHEELPIN_DATABASE_URL=postgresql://bot@db/wheelpin wheelpin serve   # one of N replicas",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 in a container)"
    )
    serve.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080; 0: any free port)")


def _app(commands: Any, name: str, text: str) -> None:
    app_commands = _group(commands, name, text)
    create = _command(
        app_commands,
        "create",
        "create the GitHub App in one step (GitHub's manifest flow)",
        "wheelpin app create --org your-org --webhook-url https://wheelpin.example.org/webhook",
        "wheelpin app create --out ./secrets   # for your own account",
    )
    create.add_argument("--org", help="the organization that will own the App (default: your account)")
    create.add_argument("--name", default="wheelpin", help="the App's name, unique on GitHub (default wheelpin)")
    create.add_argument(
        "--webhook-url",
        metavar="URL",
        help="where GitHub sends deliveries (your public address + /webhook); none: webhooks off",
    )
    create.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where the private key, webhook secret and settings are written (default: here)",
    )
    create.add_argument("--port", type=int, default=0, help="the loopback port of the page (default: any free one)")


def _init(commands: Any, name: str, text: str) -> None:
    init = _command(
        commands,
        name,
        text,
        "wheelpin init                # asks for what the pins do not say",
        "wheelpin init --yes --upstream https://github.com/LMCache/LMCache --branch dev "
        "--build-workflow lmcache-rocm-wheel.yaml --input lmcache_commit={sha}",
        "wheelpin init --repo ../atom --yes --json --upstream ../lmcache --branch dev "
        "--build-command 'python -m build --wheel --outdir {out}'",
    )
    init.add_argument(
        "--repo", type=Path, metavar="DIR", help="the downstream repository (default: the one the current folder is in)"
    )
    init.add_argument(
        "--upstream",
        metavar="URL",
        help="the upstream git repository (default: the pinned "
        "image's org.opencontainers.image.source, when it names one)",
    )
    follow = init.add_mutually_exclusive_group()
    follow.add_argument("--branch", metavar="B", help="follow this upstream branch (default: its HEAD branch)")
    follow.add_argument("--tags", metavar="PATTERN", help="follow the newest release tag, such as 'v*'")
    build = init.add_mutually_exclusive_group()
    build.add_argument(
        "--build-command",
        metavar="'…'",
        help="build the wheel with this shell command in a checkout of each upstream commit",
    )
    build.add_argument(
        "--build-workflow",
        metavar="FILE",
        help="dispatch this GitHub Actions workflow (.github/workflows/FILE) to build it",
    )
    init.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="K=V",
        help="an input of --build-workflow, such as commit={sha} (repeatable)",
    )
    init.add_argument("--component", metavar="NAME", help="which component, when several wheel images are pinned")
    init.add_argument(
        "--image-repository",
        metavar="REPO",
        help="where the pinned images are read by digest and new ones published, when not where "
        "the pins say (a mirror's source, or oci:FOLDER for images kept in a layout folder)",
    )
    init.add_argument(
        "--yes",
        action="store_true",
        help="ask nothing: take the options and defaults, or stop naming the option missing",
    )
    init.add_argument(
        "--force",
        action="store_true",
        help="replace the component's tables in an existing config that has it (init adds a new one without)",
    )
    _json(init)
    _registry_flags(init)


def _completion(commands: Any, name: str, text: str) -> None:
    completion = _command(
        commands,
        name,
        text,
        "wheelpin completion bash > /etc/bash_completion.d/wheelpin",
        'wheelpin completion zsh > "${fpath[1]}/_wheelpin"',
        "wheelpin completion fish > ~/.config/fish/completions/wheelpin.fish",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell the script is for")


def _demo(commands: Any, name: str, text: str) -> None:
    demo_parser = _command(commands, name, text, "wheelpin demo", "wheelpin demo --workdir /tmp/wheelpin-demo --json")
    demo_parser.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one)")
    _json(demo_parser)


_COMMANDS: dict[str, tuple[str, Callable[[Any, str, str], None]]] = {
    "wheel": ("inspect and compare wheel files", _wheel),
    "image": ("publish wheels as images; read images", _image),
    "config": ("check a config; print its schema", _config),
    "pins": ("read and move the configured pins", _pins),
    "init": ("write a first config from the wheel pins of this repository's Dockerfiles", _init),
    "reconcile": ("one pass (or a loop) over the components", _reconcile),
    "serve": ("the service: GitHub webhooks, the schedule, /healthz, /readyz, /metrics", _serve),
    "app": ("the GitHub App wheelpin runs as", _app),
    "completion": ("print a shell completion script", _completion),
    "demo": ("the whole loop in a scratch folder, all local", _demo),
}


def _no_pydantic_plugins() -> None:
    """wheelpin's own process runs no pydantic plugin (pydantic's docs, "Plugins": the
    `PYDANTIC_DISABLE_PLUGINS` setting, `__all__` for all of them), unless its environment
    says otherwise: else the first model of every start lists every installed package's
    entry points to look for one. A caller's process keeps its own."""
    import os

    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def _collect_from_here() -> None:
    """Start-up (argparse, pydantic's models, structlog, the command's modules) makes some
    40,000 objects that live as long as the process; with the collector on, import walked
    them again and again, and the interpreter's exit once more (a sizeable share of a
    no-op reconcile's time, bench/startup.py measures it). So `main`, as the process's entry, turns the
    collector off; here, the command's modules loaded, those objects go to the permanent
    generation (gc.freeze) and the collector, on again, walks only what the command makes."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def run(args: argparse.Namespace, settings: Settings | None) -> int:
    """The command asked, its module imported now (see the module's docstring); `settings`
    is None for `config`, which needs none (but `config validate --online`)."""
    if args.command == "wheel":
        from .commands import wheel
    elif args.command == "image":
        from .commands import image_cmd
    elif args.command == "config":
        from .commands import config_cmd
    elif args.command == "pins":
        from .commands import pins_cmd
    elif args.command == "reconcile":
        from .commands import reconcile_cmd
    elif args.command == "init":
        from .commands import init_cmd
    elif args.command == "serve":
        from .commands import serve_cmd
    elif args.command == "demo":
        from .commands import demo
    elif args.command == "app":
        from .commands.app_cmd import app_create_command
    _collect_from_here()
    if args.command in ("reconcile", "serve", "demo") or (args.command, getattr(args, "image_command", None)) == (
        "image",
        "publish",
    ):  # they run builds or smoke tests, or hold the service's secrets
        from .adapters.sandbox import undumpable

        undumpable()
    if args.command == "config":
        if args.config_command == "schema":
            return config_cmd.schema_command()
        if args.file is not None and args.config is not None:
            raise UsageError("give the config file once: as FILE or as --config FILE")
        return config_cmd.validate_command(
            file=args.file or args.config,
            repo=args.repo,
            as_json=args.json,
            online=args.online,
            settings=settings,
            github_repo=args.github_repo,
        )
    assert settings is not None
    if args.command == "wheel" and args.wheel_command == "inspect":
        return wheel.inspect_command(
            wheel.InspectOptions(
                wheel=args.wheel, json=args.json, given={name: getattr(args, name) for name in wheel.flagged_checks()}
            )
        )
    if args.command == "wheel" and args.wheel_command == "diff":
        return wheel.diff_command(
            wheel.DiffOptions(
                old=args.old,
                new=args.new,
                constraints=tuple(args.constraint),
                constraints_file=args.constraints,
                python_version=args.python_version,
                platform=args.platform,
                extras=tuple(args.extra),
                json=args.json,
            ),
            settings,
        )
    if args.command == "image" and args.image_command == "publish":
        return image_cmd.publish_command(
            image_cmd.PublishOptions(
                wheels=tuple(args.wheels),
                to=args.to,
                component=args.component,
                config=args.config,
                repo=args.repo,
                revision=args.revision,
                source=args.source,
                require_archs=tuple(args.require_arch),
                mount_from=args.mount_from,
                json=args.json,
            ),
            settings,
        )
    if args.command == "image" and args.image_command == "check":
        return image_cmd.check_command(
            wheels=tuple(args.wheels), consumer=args.consumer, json=args.json, settings=settings
        )
    if args.command == "image" and args.image_command == "verify":
        return image_cmd.verify_command(ref=args.ref, key=args.key, json=args.json, settings=settings)
    if args.command == "image":
        return image_cmd.show_command(ref=args.ref, json=args.json, settings=settings)

    if args.command == "pins" and args.pins_command == "list":
        return pins_cmd.list_command(config=args.config, repo=args.repo, as_json=args.json)
    if args.command == "pins":
        return pins_cmd.bump_command(
            component_name=args.component,
            image=args.image,
            sha256=args.sha256,
            config=args.config,
            repo=args.repo,
            as_json=args.json,
            settings=settings,
        )
    if args.command == "init":
        return init_cmd.init_command(
            init_cmd.InitOptions(
                repo=args.repo,
                upstream=args.upstream,
                branch=args.branch,
                tags=args.tags,
                build_command=args.build_command,
                build_workflow=args.build_workflow,
                inputs=tuple(args.input),
                component=args.component,
                image_repository=args.image_repository,
                yes=args.yes,
                force=args.force,
                json=args.json,
            ),
            settings,
        )
    if args.command == "reconcile":
        return reconcile_cmd.reconcile_command(
            repo=args.repo,
            config=args.config,
            platform=args.platform,
            once=args.once,
            dry_run=args.dry_run,
            as_json=args.json,
            retry_failed=args.retry_failed,
            components=args.component,
            settings=settings,
            github_repo=args.github_repo,
            use_artifacts=args.use_artifacts,
            commit=args.commit,
            summary=args.summary,
        )
    if args.command == "serve":
        return serve_cmd.serve_command(host=args.host, port=args.port, settings=settings)
    if args.command == "app":
        return app_create_command(
            org=args.org, name=args.name, webhook_url=args.webhook_url, out=args.out, port=args.port, settings=settings
        )
    if args.command == "demo":
        return demo.demo_command(workdir=args.workdir, json=args.json, settings=settings)
    raise AssertionError(f"unhandled command {args.command}")


def main(argv: Sequence[str] | None = None) -> int:
    """The `wheelpin` program: `argv` None when it is the process (its script, `python -m
    bot`), which alone switches the collector off for start-up (a caller's process keeps its own)."""
    if argv is None:
        gc.disable()
        _no_pydantic_plugins()
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here when the output was small enough to be buffered
        return code
    except BrokenPipeError:
        # stdout's reader went away (`wheelpin pins list --json | head -c 10`): end quietly, as
        # Python's signal docs ("Note on SIGPIPE") advise, and not by SIGPIPE's default, which
        # would also end `serve` when a socket's peer goes away. stdout goes to devnull, so the
        # interpreter's own flush at exit meets no second BrokenPipeError; 1, as Python exits on EPIPE.
        if argv is None:  # only the process's own stdout: a caller's stays theirs
            import os

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        gc.enable()


def _failed(args: argparse.Namespace, message: str, *, kind: str, code: int, problems: Sequence[str] = ()) -> int:
    """The one way a command ends on an error: its sentence on stderr and, with `--json`, a JSON
    document on stdout saying the same (a script reading stdout learns why there is no
    report), unless the command printed its document already (stdout stays one document)."""
    from .commands import output

    sys.stderr.write(f"wheelpin: {message}\n")
    if getattr(args, "json", False) and not output.emitted:
        document: dict[str, Any] = {"error": message, "kind": kind, "exit": code}
        if problems:
            document["problems"] = list(problems)
        output.emit_json(document)
    return code


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words:
        # A command is missing: a usage error, so 2 with the whole help on stderr (argparse's
        # convention, and stdout stays clean for a script), rather than argparse's bare
        # "the following arguments are required" that names no command.
        build_parser().print_help(sys.stderr)
        return 2
    args = build_parser(only=words[0] if words[0] in _COMMANDS else None).parse_args(words)
    try:
        return _start(args)
    except WheelpinError as exc:
        return _failed(
            args,
            exc.message + _validate_hint(args, exc),
            kind=kind_of(exc),
            code=exc.exit_code,
            problems=exc.problems if isinstance(exc, VerificationError) else (),
        )
    except KeyboardInterrupt:
        sys.stderr.write("wheelpin: interrupted\n")
        return 130


def _validate_hint(args: argparse.Namespace, exc: WheelpinError) -> str:
    """Where a command that stopped at a config problem points: `config validate` of the same
    config, which says every problem (and what the pass will check) at once; nothing for
    `config` itself, nor for a config the platform reads elsewhere (GitHub), which validate
    cannot read."""
    if not exc.validate_finds or args.command == "config":
        return ""
    if not config_on_this_host(getattr(args, "platform", DEFAULT_PLATFORM)):
        return ""
    where = "".join(f" --{name} {getattr(args, name)}" for name in ("config", "repo") if getattr(args, name, None))
    return f" (`wheelpin config validate{where}` checks the whole config)"


def _start(args: argparse.Namespace) -> int:
    """The command parsed: its settings, logging, then the command; a WheelpinError goes up to
    `_main`, which alone turns errors into exit codes."""
    if args.command == "completion":  # the parser itself, as a shell's script
        from .commands.completion import completion_command

        return completion_command(args.shell, build_parser())
    if args.command == "config" and not getattr(args, "online", False):
        return run(args, None)  # reads a file and says what is wrong: no settings, logs nor network
    from .adapters import logs
    from .app.settings import load_settings

    settings = load_settings()
    flags = {
        name: getattr(args, name) for name in ("plain_http", "tls_verify") if getattr(args, name, None) is not None
    }
    if getattr(args, "signing_key", None) is not None:
        flags["signing_key_file"] = args.signing_key
    if flags:  # a command's flags over the environment's settings
        settings = settings.model_copy(update=flags)
    logs.configure_logging(level=settings.log_level, fmt=settings.log_format)
    from .adapters import progress

    humans = sys.stderr.isatty() and settings.log_format != "json" and args.command != "serve"
    progress.configure(bar=humans, interval=settings.progress_seconds)
    from .adapters import cachebound

    cachebound.configure(settings.cache_dir, settings.cache_bounds)
    log = logs.get_logger("wheelpin")
    if not settings.tls_verify:
        log.warning("registry.tls_unverified", reason="registries' certificates are not checked (--tls-verify=false)")
    try:
        with cachebound.scope():  # a command is one pass: the cache's parts it used are trimmed at its end
            return run(args, settings)
    except (WheelpinError, KeyboardInterrupt, BrokenPipeError):
        raise  # _main's and main's to say
    except Exception as exc:  # a bug: say so in one sentence, the trace goes to debug logs
        log.debug("internal_error", exc_info=True)
        return _failed(
            args,
            f"internal error ({type(exc).__name__}: {exc}); WHEELPIN_LOG_LEVEL=debug shows the trace",
            kind="internal",
            code=1,
        )


if __name__ == "__main__":
    raise SystemExit(main())

"""Worlds for end-to-end reconcile tests: a real upstream git repository with a small
package and its build script, a downstream one pinning its wheel image, and — for the
GitHub platform — the GitHub emulator serving that downstream, with a runner that builds
like a workflow would."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.adapters.configdisk import load_config
from bot.adapters.git import git
from bot.adapters.github import AppCredentials, GitHubPlatform
from bot.adapters.github.actions import ActionsClient
from bot.adapters.github.attestations import AttestationsReader
from bot.app.settings import Settings
from bot.app.wiring import Registries
from bot.commands.demo import PEOPLE, make_downstream, make_upstream
from bot.loop.runner import Reconciler
from tests.cli import Result, wheelpin
from tests.fixtures.dryreal import Proposal, predicted
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.emulator import Repo as EmulatedRepo

BRANCH = "wheelpin/demo-cache"
HUMAN = {
    "GIT_AUTHOR_NAME": "A Human",
    "GIT_AUTHOR_EMAIL": "human@example.org",
    "GIT_COMMITTER_NAME": "A Human",
    "GIT_COMMITTER_EMAIL": "human@example.org",
}


def base_commit(repo_path: Path, files: dict[str, str], message: str = "base") -> str:
    """A human commit on the emulated repository's main branch."""
    with_files = git(["rev-parse", "main^{tree}"], cwd=repo_path).strip()
    with tempfile.TemporaryDirectory() as folder:
        env = {**HUMAN, "GIT_INDEX_FILE": os.path.join(folder, "index")}
        git(["read-tree", with_files], cwd=repo_path, env=env)
        for path, text in files.items():
            blob = git(["hash-object", "-w", "--stdin"], cwd=repo_path, input=text).strip()
            git(["update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"], cwd=repo_path, env=env)
        tree = git(["write-tree"], cwd=repo_path, env=env).strip()
        commit = git(["commit-tree", tree, "-p", "main", "-m", message], cwd=repo_path, env=env).strip()
    git(["update-ref", "refs/heads/main", commit], cwd=repo_path)
    return commit


@dataclass
class World:
    root: Path
    upstream: Path
    downstream: Path
    env: dict[str, str]

    def commit_upstream(self, message: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.upstream / name).write_text(text)
        git(["add", "-A"], cwd=self.upstream)
        git(["commit", "--quiet", "-m", message], cwd=self.upstream, env=PEOPLE)
        return git(["rev-parse", "HEAD"], cwd=self.upstream).strip()

    def reconcile(self, *args: str, crash_after: int | None = None, **env: str) -> Result:
        """A pass (`wheelpin reconcile --once --json ARGS`). A pass that can have a dry run is
        preceded by one, which must write nothing and predict what the pass did
        (tests/fixtures/dryreal.py); not a dry run itself, a pass killed on purpose, or
        `--use-artifacts` (it takes wheels in first, and has no dry run)."""

        def run(*more: str) -> Result:
            return wheelpin(
                "reconcile",
                "--once",
                "--repo",
                str(self.downstream),
                "--json",
                *args,
                *more,
                env={**self.env, **env},
                crash_after=crash_after,
            )

        if crash_after is not None or {"--dry-run", "--use-artifacts"} & set(args):
            return run()
        before = self.written()
        dry = run("--dry-run")
        assert self.written() == before, "the dry run wrote"
        existed = self.branch() is not None
        real = run()
        proposal = Proposal(existed, title=self.title, file=self.branch_text)
        predicted(_document(dry), _document(real), dry_exit=dry.code, real_exit=real.code, proposal=proposal)
        return real

    def written(self) -> tuple[str, bytes | None, bool, bytes | None]:
        """What a pass writes, to tell that a dry run wrote none of it: the downstream's refs,
        the image layout's index, the builds' folder, the state file."""
        cache = Path(self.env["WHEELPIN_CACHE_DIR"])
        index, state = self.root / "images" / "index.json", cache / "state.sqlite"
        return (
            git(["for-each-ref", "--format=%(refname) %(objectname)"], cwd=self.downstream),
            index.read_bytes() if index.exists() else None,
            (cache / "builds").exists(),
            state.read_bytes() if state.exists() else None,
        )

    def title(self) -> str | None:
        """The proposal's title: its commit's subject (the local platform has no pull request)."""
        if self.branch() is None:
            return None
        return git(["log", "-1", "--format=%s", BRANCH], cwd=self.downstream).strip()

    def branch_text(self, path: str) -> str | None:
        """A file of the proposal's branch, None when there is no branch."""
        if self.branch() is None:
            return None
        return git(["show", f"{BRANCH}:{path}"], cwd=self.downstream, check=False)

    def branch(self) -> str | None:
        out = git(["rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}"], cwd=self.downstream, check=False)
        return out.strip() or None

    def branch_file(self, path: str = "docker/Dockerfile") -> str:
        return git(["show", f"{BRANCH}:{path}"], cwd=self.downstream)

    def layout_tags(self) -> list[str]:
        index = json.loads((self.root / "images" / "index.json").read_text())
        return sorted(m["annotations"]["org.opencontainers.image.ref.name"] for m in index["manifests"])

    def set_config(self, old: str, new: str) -> None:
        path = self.downstream / "wheelpin.toml"
        path.write_text(path.read_text().replace(old, new))
        git(["commit", "--quiet", "-am", "config"], cwd=self.downstream, env=HUMAN)


def _document(result: Result) -> dict[str, Any]:
    """What a pass printed with --json: its result, or the error that stopped it (stdout may be
    empty when it stopped before --json was read)."""
    try:
        document = result.json()
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def make_world(tmp_path: Path, *, registry: str | None = None) -> World:
    root = tmp_path / "world"
    root.mkdir()
    settings = Settings(cache_dir=tmp_path / "cache")
    upstream, first = make_upstream(root, device_code=False)  # a pure-Python package: scenarios add their own
    downstream = make_downstream(root, first, settings, registry=registry, device_code=False)
    env = {
        "WHEELPIN_CACHE_DIR": str(tmp_path / "cache"),
        "DOCKER_CONFIG": str(tmp_path / "docker"),
        "WHEELPIN_REGISTRY_BACKOFF": "0.05",
        # the upstream and image layout are folders here; a config read from the GitHub
        # emulator reaches them only with the operator's setting (core/config/hostreach.py)
        "WHEELPIN_ALLOW_HOST_PATHS": "1",
    }
    return World(root, upstream, downstream, env)


def component(result: Result) -> dict:  # type: ignore[type-arg]
    return result.json()["components"][0]


NEW_VERSION = {"VERSION": "0.1.1\n"}


def runner_build(world: World, folder: Path, commit: str) -> list[Path]:
    """What a CI runner does: a checkout of the upstream at `commit`, its build script run."""
    checkout = folder / f"runner-{commit[:8]}-{len(list(folder.glob('runner-*')))}"
    git(["clone", "--quiet", str(world.upstream), str(checkout)])
    git(["checkout", "--quiet", commit], cwd=checkout)
    out = checkout / "dist"
    out.mkdir()
    subprocess.run(
        ["python3", "build_wheel.py", str(out)],
        cwd=checkout,
        check=True,
        capture_output=True,
        env={"WHEELPIN_SHA8": commit[:8], "PATH": "/usr/bin:/bin"},
    )
    return sorted(out.glob("*.whl"))


@dataclass
class OnGitHub:
    emulator: GitHubEmulator
    repo: EmulatedRepo
    reconciler: Reconciler


@dataclass(frozen=True)
class AppKey:
    """A GitHub App's RSA key pair, made for a test."""

    private: bytes
    public: bytes

    @classmethod
    def make(cls) -> AppKey:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        )


APP_ID = 11


@contextmanager
def on_github(
    world: World,
    folder: Path,
    *,
    actions: bool = False,
    local_commands: bool = True,
    name: str = "atom",
    app: bool = False,
    token: str = "t",
    login: str | None = None,
    **switches: object,
) -> Iterator[OnGitHub]:
    """The world's downstream served by the GitHub emulator (its behaviour `switches` set),
    and a reconciler using it, with `token` or (`app`) as a GitHub App installation."""
    key = AppKey.make() if app else None
    emulator = GitHubEmulator(
        folder / "github", tokens={token}, app_id=APP_ID if key else None, app_public_key=key.public if key else None
    )
    for switch, value in switches.items():
        assert hasattr(emulator, switch), switch
        setattr(emulator, switch, value)
    try:
        repo = emulator.create_repo("rocm", name, world.downstream)
        loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
        credentials = AppCredentials(APP_ID, key.private, emulator.installations["rocm"]) if key else None
        platform = GitHubPlatform(
            api_url=emulator.url,
            token=None if key else token,
            app=credentials,
            owner="rocm",
            repo=name,
            author=loaded.config.defaults.author,
            login=login,
        )
        settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
        reconciler = Reconciler(
            loaded,
            platform=platform,
            registries=Registries(settings),
            cache=settings.cache_dir,
            actions=ActionsClient(platform) if actions else None,
            local_commands=local_commands,
            attestations=lambda: AttestationsReader(platform.client),
        )  # as adapters/github/forge.py
        yield OnGitHub(emulator, repo, reconciler)
        assert emulator.errors == []
    finally:
        emulator.stop()

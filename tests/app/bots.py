"""The service under test: a world (real upstream git repository, real registry), its
downstream served by the GitHub emulator as a GitHub App installation, and the service
with its HTTP server on a loopback port, driven by signed deliveries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.adapters.git import git
from bot.adapters.github.forge import GitHubAccess, GitHubForge
from bot.app.forge import Forge
from bot.app.forges import forge_of
from bot.app.service import Service
from bot.app.settings import Settings
from bot.app.webapp import HTTPServer
from tests.app.worlds import HUMAN, World, runner_build
from tests.fixtures.github.emulator import GitHubEmulator, comment_id
from tests.fixtures.github.emulator import Repo as EmulatedRepo
from tests.fixtures.github.openapi import validate_recorded
from tests.fixtures.webhooks import deliver, example

SECRET = b"wheelpin-webhook-secret-7f3a"
APP_ID = 11
TOKEN = "ghp_wheelpin_service"  # a token's service (`token_watching`)
WORKFLOW = 'build = { workflow = "w.yaml", inputs = { c = "{sha}" } }\n# was: ['
COMPONENT = "demo-cache"


def app_key() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def github_world(world: World) -> None:
    """Absolute upstream path (the config is read from GitHub, not a checkout), builds on Actions."""
    world.set_config('repo = "../upstream"', f'repo = "file://{world.upstream}"')
    if '"oci:../images"' in (world.downstream / "wheelpin.toml").read_text():
        world.set_config('"oci:../images"', f'"oci:{world.root / "images"}"')
    world.set_config("build = { command = [", WORKFLOW)


def wait_until(check: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or check}")


@dataclass
class Bot:
    world: World
    emulator: GitHubEmulator
    repo: EmulatedRepo
    service: Service
    server: HTTPServer
    session: requests.Session
    private_key: bytes = field(repr=False)

    @property
    def repository(self) -> str:
        return f"{self.repo.owner}/{self.repo.name}"

    def send(self, event: str, payload: dict[str, Any], **kwargs: Any) -> requests.Response:
        answer = deliver(self.session, self.server.url, SECRET, event, payload, **kwargs)
        assert answer.status_code < 300, answer.text
        return answer

    def idle(self, timeout: float = 120) -> None:
        """Until nothing waits or runs (a job's follow-ups are queued before it ends)."""

        def still() -> bool:
            stats = self.service.stats()
            return stats.waiting == 0 and stats.running == 0

        wait_until(still, timeout, "the queue to drain")

    def passes(self) -> int:
        return self.service.passes.get((self.repository, COMPONENT), 0)

    def poll(self) -> None:
        """The schedule fires now for the component (instead of in 30 minutes)."""
        if self.service.shared is not None:  # on PostgreSQL: due now, deferred by the next tick
            with self.service.shared.pool.connection() as connection:
                made_due = connection.execute(
                    "update wheelpin_schedules set due = 0 where repository = %s and component = %s",
                    (self.repository, COMPONENT),
                ).rowcount
            assert made_due == 1
            wait_until(lambda: self.service.stats().waiting or self.service.stats().running, 30, "the tick")
            return
        job = self.service.scheduler.get_job(f"poll:{self.repository}:{COMPONENT}")
        assert job is not None, [j.id for j in self.service.scheduler.get_jobs()]
        job.func(*job.args, **job.kwargs)

    def poll_and_build(self) -> None:
        """The schedule fires, the build it dispatches runs, GitHub says it completed, and
        the bot is idle again: one upstream commit, from noticed to proposed."""
        self.poll()
        self.idle()
        self.finish_runs()
        self.workflow_run_completed()
        self.idle()

    def finish_runs(self) -> None:
        for run in list(self.repo.runs.values()):
            if run.status != "completed":
                self.emulator.finish_run(self.repo, run)

    def workflow_run_completed(self) -> requests.Response:
        payload = example("workflow_run", "completed")
        payload["repository"] = {**payload["repository"], "full_name": self.repository, "name": self.repo.name}
        payload["workflow_run"] = {**payload["workflow_run"], "path": ".github/workflows/w.yaml", "name": "build"}
        return self.send("workflow_run", payload)

    def push_config(self, old: str, new: str) -> requests.Response:
        """A maintainer changes the config on the default branch; GitHub says so."""
        self.world.set_config(old, new)
        git(["push", "--quiet", "--force", str(self.repo.path), "main:main"], cwd=self.world.downstream)
        payload = example("push")
        payload.update(ref="refs/heads/main", repository={**payload["repository"], "full_name": self.repository})
        return self.send("push", payload)

    def comment(self, number: int, body: str, sender: str, *, seen: str | None = None) -> requests.Response:
        """`sender` comments `body` on pull request (or issue) `number`: the comment is made,
        then delivered with its body as it is (or as it was: `seen`)."""
        item = self.repo.pulls[number]
        item.add_comment(body)
        payload = example("issue_comment", "created")
        payload["repository"] = {**payload["repository"], "full_name": self.repository}
        payload["issue"] = {
            **payload["issue"],
            "number": number,
            "pull_request": {"url": "x"},
            "body": item.body if seen is None else seen,
            "state": item.state,
        }
        if item.is_issue:  # an issue's payload has no pull_request key (docs, "issue_comment" webhook)
            del payload["issue"]["pull_request"]
        payload["comment"] = {**payload["comment"], "body": body, "id": comment_id(number, len(item.comments) - 1)}
        payload["sender"] = {**payload["sender"], "login": sender}
        return self.send("issue_comment", payload)

    def pulls(self) -> list[Any]:
        return [p for p in self.repo.pulls.values() if not p.is_issue]


def settings_for(tmp_path: Path, **changes: Any) -> Settings:
    """The service's settings in the tests; host paths allowed (the operator's setting, which
    no config can give), since the worlds' upstreams and image layouts are folders here."""
    return Settings(
        **{
            "cache_dir": tmp_path / "cache",
            "registry_backoff": 0.05,
            "schedule_jitter": 0,
            "queue_backoff": 0.2,
            "allow_host_paths": True,
            **changes,
        }
    )


def app_on_emulator(world: World, tmp_path: Path) -> tuple[GitHubEmulator, EmulatedRepo, bytes]:
    """The world's downstream as rocm/atom on the emulator, where one GitHub App is installed
    and Actions runs build as the world's runner does; the App's key and the webhook secret
    written to `tmp_path` (app.pem, webhook-secret) as an operator gives them to `serve`."""
    github_world(world)
    private, public = app_key()
    emulator = GitHubEmulator(tmp_path / "github", tokens=set(), app_id=APP_ID, app_public_key=public)
    emulator.auto_advance = False
    emulator.actions = lambda repo, run: {
        w.name: w.read_bytes() for w in runner_build(world, tmp_path, run.inputs["c"])
    }
    repo = emulator.create_repo("rocm", "atom", world.downstream)
    (tmp_path / "app.pem").write_bytes(private)
    (tmp_path / "webhook-secret").write_bytes(SECRET + b"\n")
    return emulator, repo, private


@contextmanager
def running_bot(
    world: World,
    tmp_path: Path,
    *,
    switches: dict[str, Any] | None = None,
    edit: tuple[str, str] | None = None,
    token_watching: str | None = None,
    **settings: Any,
) -> Iterator[Bot]:
    """The service watching the world's downstream on the emulator, its behaviour
    `switches` (GitHubEmulator attributes) set before the service first speaks to it, and
    its config changed by `edit` (old, new). `token_watching`: with a token instead of the
    App, watching these repositories (WHEELPIN_REPOSITORIES), made and checked as `serve` does."""
    github_world(world)
    if edit is not None:
        world.set_config(*edit)
    private, public = app_key()
    emulator = GitHubEmulator(tmp_path / "github", tokens=set(), app_id=APP_ID, app_public_key=public)
    emulator.auto_advance = False
    for switch, value in (switches or {}).items():
        assert hasattr(emulator, switch), switch
        setattr(emulator, switch, value)
    emulator.actions = lambda repo, run: {
        w.name: w.read_bytes() for w in runner_build(world, tmp_path, run.inputs["c"])
    }
    service = server = None
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        repo.permissions.update({"maintainer": "maintain", "visitor": "read"})
        forge: Forge
        if token_watching is None:
            access = GitHubAccess(emulator.url, app_id=APP_ID, private_key=private)
            settings = settings_for(tmp_path, **settings)
            forge = GitHubForge(access, secret=SECRET, shard=settings.shard)
        else:
            emulator.tokens.add(TOKEN)
            given = {"github_token": TOKEN, "repositories": token_watching, "webhook_secret": SECRET.decode()}
            settings = settings_for(tmp_path, github_api_url=emulator.url, **given, **settings)
            forge = forge_of(settings)
            forge.check_settings()
        service = Service(settings, forge=forge)
        server = HTTPServer(service, host="127.0.0.1", port=0)
        server.start()
        service.start()
        bot = Bot(world, emulator, repo, service, server, requests.Session(), private)
        bot.idle()
        yield bot
        bot.session.close()
        assert emulator.errors == []
        # each answer, and each body the bot sent, held to GitHub's schema
        kinds = {
            (r.method, r.template, r.status, json.dumps(r.request, sort_keys=True)[:200]): r for r in emulator.recorded
        }
        validate_recorded(kinds.values())
    finally:
        if server is not None:
            server.stop()
        if service is not None:
            service.stop(grace=10)
        emulator.stop()


__all__ = [
    "HUMAN",
    "Bot",
    "running_bot",
    "wait_until",
    "app_key",
    "SECRET",
    "APP_ID",
    "github_world",
    "app_on_emulator",
]

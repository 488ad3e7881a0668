"""`wheelpin serve` as an operator runs it: a subprocess with the App's credentials in
files, JSON logs on stderr, driven over loopback, stopped with SIGTERM. Its logs are
searched for every secret it held."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import requests

from tests.app.bots import APP_ID, SECRET, app_on_emulator, wait_until
from tests.app.worlds import NEW_VERSION, World
from tests.cli import environment, wheelpin
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.webhooks import deliver, example, sign


class Process:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "serve", *args],
            env=environment(env),
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def url(self) -> str:
        found = wait_until(
            lambda: next(
                (m.group(1) for line in self.lines if (m := re.search(r"listening on (http://\S+)", line))), None
            ),
            30,
            "the server to listen",
        )
        return str(found)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        self.reader.join(5)
        return code


def test_serve_runs_the_loop_and_never_logs_a_secret(world: World, tmp_path: Path) -> None:
    emulator, repo, private = app_on_emulator(world, tmp_path)
    head = world.commit_upstream("one", NEW_VERSION)  # the first pass at start dispatches its build
    env = {
        "WHEELPIN_CACHE_DIR": str(tmp_path / "cache"),
        "WHEELPIN_GITHUB_API_URL": emulator.url,
        "WHEELPIN_GITHUB_APP_ID": str(APP_ID),
        "WHEELPIN_GITHUB_PRIVATE_KEY_FILE": str(tmp_path / "app.pem"),
        "WHEELPIN_WEBHOOK_SECRET_FILE": str(tmp_path / "webhook-secret"),
        "WHEELPIN_LOG_LEVEL": "debug",
        "WHEELPIN_LOG_FORMAT": "json",
        "WHEELPIN_SCHEDULE_JITTER": "0",
        "WHEELPIN_ALLOW_HOST_PATHS": "1",
    }
    served = Process(env, "--port", "0")
    try:
        url = served.url()
        session = requests.Session()
        wait_until(lambda: session.get(url + "/readyz").status_code == 200, 30, "/readyz")
        wait_until(
            lambda: any('"component.pass"' in line and '"waiting"' in line for line in served.lines),
            60,
            "the first pass to dispatch the build and wait for it",
        )
        assert len(repo.runs) == 1 and not repo.pulls
        for run in list(repo.runs.values()):
            emulator.finish_run(repo, run)
        assert deliver(session, url, SECRET, "ping", example("ping")).status_code == 200
        assert deliver(session, url, b"not the secret", "push", example("push")).status_code == 401
        payload = example("workflow_run", "completed")
        payload["repository"] = {**payload["repository"], "full_name": "rocm/atom"}
        payload["workflow_run"] = {**payload["workflow_run"], "path": ".github/workflows/w.yaml"}
        answer = deliver(session, url, SECRET, "workflow_run", payload, delivery="delivery-e2e-1")
        assert answer.status_code == 202
        pull = wait_until(
            lambda: next(iter(p for p in repo.pulls.values() if not p.is_issue), None), 60, "the draft pull request"
        )
        assert pull.draft and head[:8] in pull.title
        wait_until(lambda: any(p.is_issue for p in repo.pulls.values()), 30, "the dashboard issue")
    finally:
        code = served.stop()
        emulator.stop()
    assert code == 0 and served.lines[-1] == "wheelpin: stopped", served.lines[-5:]
    logs = "\n".join(served.lines)
    # no secret the process held is in its logs: the private key, the webhook secret, the tokens
    key_lines = [line for line in private.decode().splitlines() if line and not line.startswith("-----")]
    assert key_lines and not any(line in logs for line in key_lines)
    assert SECRET.decode() not in logs and sign(SECRET, b"{}")[7:] not in logs
    assert emulator.issued_tokens and not any(token in logs for token in emulator.issued_tokens)
    assert "Bearer " not in logs and "eyJ" not in logs  # no JWT either
    records = [json.loads(line) for line in served.lines if line.startswith("{")]
    assert len(records) + 2 == len(served.lines)  # every line is JSON but "listening" and "stopped"
    passes = [r for r in records if r.get("event") == "component.pass" and r.get("delivery") == "delivery-e2e-1"]
    assert passes and all(
        r["repository"] == "rocm/atom" and r["component"] == "demo-cache" and r["commit"] == head for r in passes
    )
    actions = [r for r in records if r.get("event") == "action"]
    assert actions and all({"repository", "component", "commit", "delivery"} <= set(r) for r in actions)


def test_serve_refuses_bad_settings_in_one_sentence(tmp_path: Path) -> None:
    missing = wheelpin(
        "serve", env={"WHEELPIN_GITHUB_APP_ID": "11", "WHEELPIN_GITHUB_PRIVATE_KEY_FILE": str(tmp_path / "none.pem")}
    )
    assert missing.code == 2 and "cannot read the App's private key" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    token = wheelpin("serve", env={"WHEELPIN_GITHUB_TOKEN": "t"})
    assert token.code == 2 and "WHEELPIN_REPOSITORIES" in token.stderr
    secret = wheelpin("serve", env={"WHEELPIN_WEBHOOK_SECRET_FILE": str(tmp_path / "nope")})
    assert secret.code == 2 and "WHEELPIN_WEBHOOK_SECRET_FILE" in secret.stderr
    (tmp_path / "empty").write_text("\n")  # what `printf '%s' "$UNSET" > file` leaves: anyone could sign
    for empty in ({"WHEELPIN_WEBHOOK_SECRET_FILE": str(tmp_path / "empty")}, {"WHEELPIN_WEBHOOK_SECRET": " "}):
        refused = wheelpin("serve", env=empty)
        assert refused.code == 2 and "is empty" in refused.stderr, refused.stderr
    for partial, wanted in (
        (
            {"WHEELPIN_REGISTRY_PASSWORD": "pw", "WHEELPIN_REGISTRY_HOST": "ghcr.io"},
            "need WHEELPIN_REGISTRY_USERNAME too",
        ),
        ({"WHEELPIN_REGISTRY_PASSWORD": "pw", "WHEELPIN_REGISTRY_USERNAME": "bot"}, "need WHEELPIN_REGISTRY_HOST too"),
    ):
        refused = wheelpin("serve", env=partial)
        assert refused.code == 2 and wanted in refused.stderr and "pw" not in refused.stderr, refused.stderr
    database = "postgresql://bot:hunter2@127.0.0.1:1/wheelpin"  # nothing listens on port 1
    sharded = wheelpin("serve", env={"WHEELPIN_DATABASE_URL": database, "WHEELPIN_INSTALLATION_IDS": "1"})
    assert sharded.code == 2 and "unset one of them" in sharded.stderr
    gone = wheelpin("serve", env={"WHEELPIN_DATABASE_URL": database})
    assert gone.code == 4 and gone.stderr.strip() == (
        "wheelpin: PostgreSQL at 127.0.0.1:1/wheelpin cannot be reached (OperationalError)"
    ), gone.stderr


def test_serve_says_a_repository_github_does_not_have_in_one_sentence(world: World, tmp_path: Path) -> None:
    """With a token, WHEELPIN_REPOSITORIES is read as GitHub names each repository (its
    names are not case sensitive): one GitHub does not have stops serve before it listens."""
    emulator = GitHubEmulator(tmp_path / "github", tokens={"ghp_serve"})
    emulator.create_repo("rocm", "atom", world.downstream)
    try:
        given = {"WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "ghp_serve"}
        missing = wheelpin("serve", env={**given, "WHEELPIN_REPOSITORIES": "ROCm/Atom,rocm/atomm"})
        assert missing.code == 2 and missing.stderr.strip() == (
            "wheelpin: WHEELPIN_REPOSITORIES names rocm/atomm, which GitHub does not have or the token "
            "cannot see: check the name and the token's access"
        ), missing.stderr
        assert [r.path for r in emulator.recorded] == ["/repos/ROCm/Atom"]  # read as named, in any case
    finally:
        emulator.stop()


def test_serve_answers_health_before_any_credentials_and_stops_on_sigterm(tmp_path: Path) -> None:
    served = Process({"WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}, "--port", "0")
    try:
        url = served.url()
        assert requests.get(url + "/healthz", timeout=5).status_code == 200
        ready = requests.get(url + "/readyz", timeout=5)
        assert ready.status_code == 503 and "no GitHub credentials" in ready.json()["reason"]
    finally:
        code = served.stop()
    assert code == 0

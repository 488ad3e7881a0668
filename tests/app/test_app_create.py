"""`wheelpin app create` (issue 18): the GitHub App made in one step by GitHub's manifest flow
("Registering a GitHub App from a manifest", docs.github.com), against the emulator, whose
`POST /app-manifests/{code}/conversions` answers as GitHub's OpenAPI description says. The
test plays the browser and GitHub's page: it reads the form wheelpin serves, gives the
code GitHub would, and follows the redirect back."""

from __future__ import annotations

import html
import json
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import requests

from bot.app.appmanifest import EVENTS, PERMISSIONS
from tests.app.bots import wait_until
from tests.cli import environment, wheelpin
from tests.fixtures.github.emulator import GitHubEmulator


class Creating:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bot", "app", "create", *args], env=environment(env),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(line.rstrip("\n") for line in self.proc.stderr or []),
                         daemon=True).start()

    def page(self) -> str:
        return str(wait_until(lambda: next((m.group(1) for line in self.lines
                                            if (m := re.search(r"open (http://127\.0\.0\.1:\d+/)", line))), None),
                              30, "the page's address"))


def form_of(page: str) -> tuple[str, dict]:  # type: ignore[type-arg]
    action = html.unescape(re.search(r'action="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    manifest = json.loads(html.unescape(re.search(r'name="manifest" value="([^"]+)"', page).group(1)))  # type: ignore[union-attr]
    return action, manifest


def test_the_app_is_created_from_its_manifest_and_its_secrets_written_for_serve(tmp_path: Path) -> None:
    emulator = GitHubEmulator(tmp_path / "github", tokens=set())
    env = {"WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "secrets"
    try:
        creating = Creating(env, "--org", "rocm", "--webhook-url", "https://bot.example.org/webhook", "--out", str(out))
        page = requests.get(creating.page(), timeout=10).text
        action, manifest = form_of(page)
        state = action.split("?state=")[1]
        assert action == f"{emulator.url}/organizations/rocm/settings/apps/new?state={state}" and len(state) >= 24
        assert manifest["default_permissions"] == PERMISSIONS and manifest["default_events"] == EVENTS
        assert manifest["hook_attributes"] == {"url": "https://bot.example.org/webhook", "active": True}
        callback = manifest["redirect_url"]
        assert callback == creating.page() + "callback"
        # someone else's answer: refused, nothing traded, still waiting
        forged = requests.get(callback, params={"code": "c0de", "state": "not-ours"}, timeout=10)
        assert forged.status_code == 400 and creating.proc.poll() is None
        emulator.manifest_codes["c0de"] = manifest  # GitHub's page took the form: its code
        back = requests.get(callback, params={"code": "c0de", "state": state}, timeout=30)
        assert back.status_code == 200
        assert creating.proc.wait(30) == 0, creating.lines
        said = creating.proc.stdout.read() if creating.proc.stdout else ""
    finally:
        emulator.stop()
    assert "created the GitHub App wheelpin (id 901)" in said and "/installations/new" in said
    assert emulator.created_apps == [manifest] and emulator.errors == []
    for name in ("app.pem", "webhook-secret", "wheelpin-app.env"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600, name
    assert (out / "app.pem").read_text().startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert (out / "webhook-secret").read_text().strip() == "whsec-c0de"
    settings = dict(line.split("=", 1) for line in (out / "wheelpin-app.env").read_text().splitlines())
    assert settings["WHEELPIN_GITHUB_APP_ID"] == "901"
    assert settings["WHEELPIN_GITHUB_PRIVATE_KEY_FILE"] == str(out / "app.pem")
    # the secrets never reach the terminal, and a second run overwrites nothing
    assert "BEGIN RSA" not in said + "\n".join(creating.lines) and "whsec-c0de" not in said
    again = wheelpin("app", "create", "--out", str(out), env=env)
    assert again.code == 2 and "exists already" in again.stderr


def test_a_code_github_refuses_writes_nothing(tmp_path: Path) -> None:
    emulator = GitHubEmulator(tmp_path / "github", tokens=set())
    env = {"WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "secrets"
    try:
        creating = Creating(env, "--out", str(out))
        page = requests.get(creating.page(), timeout=10).text
        action, manifest = form_of(page)
        assert action.startswith(f"{emulator.url}/settings/apps/new?state=")  # the user's own account
        assert manifest["hook_attributes"]["active"] is False  # no webhook address given
        state = action.split("?state=")[1]
        answer = requests.get(manifest["redirect_url"], params={"code": "used-or-old", "state": state}, timeout=30)
        assert answer.status_code == 502
        assert creating.proc.wait(30) == 2
    finally:
        emulator.stop()
    assert any("refused the code" in line for line in creating.lines) and not out.exists()

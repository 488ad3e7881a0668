"""`wheelpin app create`: the GitHub App made in one step by GitHub's manifest flow
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

from bot.adapters.github.appmanifest import EVENTS, PERMISSIONS
from tests.app.bots import wait_until
from tests.cli import environment, wheelpin
from tests.fixtures.github.emulator import GitHubEmulator


class Creating:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "app", "create", *args],
            env=environment(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(
            target=lambda: self.lines.extend(line.rstrip("\n") for line in self.proc.stderr or []), daemon=True
        ).start()

    def page(self) -> str:
        return str(
            wait_until(
                lambda: next(
                    (m.group(1) for line in self.lines if (m := re.search(r"open (http://127\.0\.0\.1:\d+/)", line))),
                    None,
                ),
                30,
                "the page's address",
            )
        )


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
        browser = requests.Session()  # the browser that opened the page holds its cookie
        page = browser.get(creating.page(), timeout=10).text
        action, manifest = form_of(page)
        state = action.split("?state=")[1]
        assert action == f"{emulator.url}/organizations/rocm/settings/apps/new?state={state}" and len(state) >= 24
        assert manifest["default_permissions"] == PERMISSIONS and manifest["default_events"] == EVENTS
        assert manifest["hook_attributes"] == {"url": "https://bot.example.org/webhook", "active": True}
        callback = manifest["redirect_url"]
        assert callback == creating.page() + "callback"
        # someone else's answer: refused, nothing traded, still waiting
        forged = browser.get(callback, params={"code": "c0de", "state": "not-ours"}, timeout=10)
        assert forged.status_code == 400 and creating.proc.poll() is None
        emulator.manifest_codes["c0de"] = manifest  # GitHub's page took the form: its code
        back = browser.get(callback, params={"code": "c0de", "state": state}, timeout=30)
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
        browser = requests.Session()
        page = browser.get(creating.page(), timeout=10).text
        action, manifest = form_of(page)
        assert action.startswith(f"{emulator.url}/settings/apps/new?state=")  # the user's own account
        assert manifest["hook_attributes"]["active"] is False  # no webhook address given
        state = action.split("?state=")[1]
        answer = browser.get(manifest["redirect_url"], params={"code": "used-or-old", "state": state}, timeout=30)
        assert answer.status_code == 502
        assert creating.proc.wait(30) == 2
    finally:
        emulator.stop()
    assert any("refused the code" in line for line in creating.lines) and not out.exists()


def test_the_page_answers_only_loopback_names_and_the_browser_that_started(tmp_path: Path) -> None:
    """DNS rebinding (another Host) gets no state; a callback from another browser (no
    cookie) trades nothing; both leave the command waiting for the real one."""
    emulator = GitHubEmulator(tmp_path / "github", tokens=set())
    env = {"WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    try:
        creating = Creating(env, "--out", str(tmp_path / "secrets"))
        address = creating.page()
        port = address.rsplit(":", 1)[1].strip("/")
        rebound = requests.get(address, headers={"Host": f"attacker.example:{port}"}, timeout=10)
        assert rebound.status_code == 421 and "state=" not in rebound.text
        assert requests.get(address, headers={"Host": "127.0.0.1:1"}, timeout=10).status_code == 421
        moved = requests.get(address, headers={"Host": f"localhost:{port}"}, timeout=10, allow_redirects=False)
        assert moved.status_code == 302 and moved.headers["Location"] == address
        browser = requests.Session()
        served = browser.get(address, timeout=10)
        assert "HttpOnly" in served.headers["Set-Cookie"] and "SameSite=Lax" in served.headers["Set-Cookie"]
        action, manifest = form_of(served.text)
        state = action.split("?state=")[1]
        emulator.manifest_codes["c0de"] = manifest
        other = requests.get(manifest["redirect_url"], params={"code": "c0de", "state": state}, timeout=10)
        assert other.status_code == 400 and "browser that started" in other.text
        assert creating.proc.poll() is None and "c0de" in emulator.manifest_codes  # nothing traded
    finally:
        creating.proc.kill()
        creating.proc.wait(10)
        emulator.stop()


def test_another_apps_code_writes_nothing(tmp_path: Path) -> None:
    """A callback carrying the code of an App wheelpin did not describe (someone's own
    manifest): GitHub's answer is compared with the manifest, and nothing is written."""
    emulator = GitHubEmulator(tmp_path / "github", tokens=set())
    env = {"WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "secrets"
    try:
        creating = Creating(env, "--out", str(out))
        browser = requests.Session()
        action, manifest = form_of(browser.get(creating.page(), timeout=10).text)
        state = action.split("?state=")[1]
        emulator.manifest_codes["evil"] = {
            **manifest,
            "name": "attacker-app",
            "default_permissions": {"contents": "read", "metadata": "read"},
        }
        answer = browser.get(manifest["redirect_url"], params={"code": "evil", "state": state}, timeout=30)
        assert answer.status_code == 502
        assert creating.proc.wait(30) == 2
    finally:
        emulator.stop()
    said = "\n".join(creating.lines)
    assert "'attacker-app', not the one wheelpin described (its name, permissions differ)" in said, said
    assert not out.exists()


def test_on_ghe_com_the_manifest_goes_to_its_web_host_and_the_code_to_its_api(tmp_path: Path) -> None:
    # GHE.com (data residency): the web at SUBDOMAIN.ghe.com, the API at api.SUBDOMAIN.ghe.com
    # with no /api/v3 ("About GitHub Enterprise Cloud with data residency"). Neither is reachable
    # from the tests: the page's form is read, and the process stopped before any code is traded.
    from bot.adapters.github.appmanifest import web_and_api

    assert (
        web_and_api("https://api.octo.ghe.com")
        == web_and_api("https://octo.ghe.com/")
        == ("https://octo.ghe.com", "https://api.octo.ghe.com")
    )
    env = {"WHEELPIN_GITHUB_API_URL": "https://api.octo.ghe.com", "WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    creating = Creating(env, "--org", "rocm", "--out", str(tmp_path / "secrets"))
    try:
        action, _ = form_of(requests.Session().get(creating.page(), timeout=10).text)
    finally:
        creating.proc.kill()
        creating.proc.wait(30)
    assert action.startswith("https://octo.ghe.com/organizations/rocm/settings/apps/new?state=")

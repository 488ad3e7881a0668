"""`wheelpin app create`: the GitHub App made in one step, as Probot makes it (the manifest
flow, adapters/github/appmanifest.py): a page on loopback posts the manifest to GitHub,
GitHub sends the browser back with a code, the code becomes the App's id, private key and webhook secret,
written where `wheelpin serve` reads them. Nothing is written unless GitHub answered."""

from __future__ import annotations

import html
import json
import os
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from ..adapters.github.appmanifest import manifest, web_and_api
from ..app.settings import Settings
from ..core.errors import CredentialsError, TransientError, UsageError

WAIT = 15 * 60  # seconds the page waits for GitHub to send the browser back
COOKIE = "wheelpin_app_create"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def app_create_command(
    *, org: str | None, name: str, webhook_url: str | None, out: Path, port: int, settings: Settings, wait: float = WAIT
) -> int:
    out = out.resolve()
    files = {"key": out / "app.pem", "secret": out / "webhook-secret", "env": out / "wheelpin-app.env"}
    taken = [str(path) for path in files.values() if path.exists()]
    if taken:
        raise UsageError(f"{taken[0]} exists already: give --out a folder of its own (nothing was created)")
    web, api = web_and_api(settings.github_api_url)
    state = secrets.token_urlsafe(24)
    done = threading.Event()
    outcome: dict[str, Any] = {}

    browser = secrets.token_urlsafe(24)  # the cookie of the browser the page was served to

    class Page(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            port_here = server.server_address[1]
            if not loopback_host(self.headers.get("Host"), port_here):
                # DNS rebinding: a site whose name now resolves to 127.0.0.1 reaches this
                # page with its own Host; answered as RFC 9110 §15.5.20's 421, no state
                self._answer(421, "<p>This page answers only at 127.0.0.1, localhost or [::1].</p>")
                return
            if parts.path == "/":
                if self.headers.get("Host") != f"127.0.0.1:{port_here}":  # one origin holds the cookie
                    self._redirect(f"{address}/")
                    return
                self._answer(200, _form(web, org, state, server_manifest), cookie=browser)
            elif parts.path == "/callback":
                query = parse_qs(parts.query)
                if query.get("state") != [state] or not query.get("code"):
                    self._answer(400, "<p>This answer is not for the App wheelpin asked for (its state differs).</p>")
                    return
                if not secrets.compare_digest(_cookie(self.headers.get("Cookie")) or "", browser):
                    self._answer(
                        400,
                        "<p>This answer did not come to the browser that started creating the "
                        "App; open the page wheelpin named in that browser.</p>",
                    )
                    return
                try:
                    outcome["app"] = _check_created(_convert(api, query["code"][0]), server_manifest)
                except (CredentialsError, TransientError) as exc:
                    outcome["error"] = exc
                    self._answer(502, f"<p>{html.escape(exc.message)}</p>")
                else:
                    self._answer(200, "<p>Created. You may close this page; wheelpin says what is next.</p>")
                done.set()
            else:
                self._answer(404, "<p>Not here.</p>")

        def _redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _answer(self, status: int, body: str, cookie: str | None = None) -> None:
            data = f"<!doctype html><meta charset=utf-8><title>wheelpin</title>{body}".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            if cookie is not None:
                # HttpOnly: no script reads it. Lax, not Strict: GitHub sends the browser
                # back by a cross-site top-level GET, which carries Lax cookies and never
                # Strict ones (RFC 6265bis, "SameSite" cookies; Lax: top-level navigations)
                self.send_header("Set-Cookie", f"{COOKIE}={cookie}; HttpOnly; SameSite=Lax; Path=/")
            self.end_headers()
            self.wfile.write(data)

    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), Page)
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc})") from None
    address = f"http://127.0.0.1:{server.server_address[1]}"
    server_manifest = manifest(name=name, webhook_url=webhook_url, redirect_url=f"{address}/callback")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stderr.write(f"wheelpin: open {address}/ in a browser signed in to GitHub, and create the App there\n")
    sys.stderr.flush()
    try:
        if not done.wait(wait):
            raise TransientError(
                f"GitHub did not send the browser back within {wait / 60:.0f} minutes; nothing was created"
            )
    finally:
        server.shutdown()
        server.server_close()
    if "error" in outcome:
        raise outcome["error"]
    app = outcome["app"]
    out.mkdir(parents=True, exist_ok=True)
    _private(files["key"], app["pem"])
    _private(files["secret"], app["webhook_secret"] or "")
    _private(
        files["env"],
        f"WHEELPIN_GITHUB_APP_ID={app['id']}\nWHEELPIN_GITHUB_PRIVATE_KEY_FILE={files['key']}\n"
        f"WHEELPIN_WEBHOOK_SECRET_FILE={files['secret']}\n"
        + (f"WHEELPIN_GITHUB_API_URL={settings.github_api_url}\n" if settings.github_api_url else ""),
    )
    sys.stdout.write(
        f"created the GitHub App {app['slug']} (id {app['id']}): {app['html_url']}\n"
        f"its key, webhook secret and settings are in {out} (wheelpin-app.env); install it on the "
        f"repositories to watch: {app['html_url']}/installations/new\n"
    )
    return 0


def loopback_host(host: str | None, port: int) -> bool:
    """Whether a request's Host names this loopback page (its name and its port)."""
    return host is not None and host.lower() in {f"{name}:{port}" for name in LOOPBACK_NAMES}


def _cookie(header: str | None) -> str | None:
    for part in (header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


def _check_created(app: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """The App GitHub traded the code for, when it is the one the manifest described (its
    name, its url, its permissions and events: the conversion answers them, OpenAPI
    "integration"); another App's code (someone's callback link) is refused before anything
    is written. The hook's address is not in the answer, so it is not compared."""
    differs = [
        what
        for what, got, meant in (
            ("name", app.get("name"), wanted["name"]),
            ("url", app.get("external_url"), wanted["url"]),
            (
                "permissions",
                {k: v for k, v in (app.get("permissions") or {}).items() if v},
                wanted["default_permissions"],
            ),
            ("events", sorted(app.get("events") or []), sorted(wanted["default_events"])),
        )
        if got != meant
    ]
    if differs:
        raise CredentialsError(
            f"GitHub's answer is the App {str(app.get('slug') or app.get('name'))!r}, not the one "
            f"wheelpin described (its {', '.join(differs)} differ); nothing was written"
        )
    return app


def _form(web: str, org: str | None, state: str, body: dict[str, Any]) -> str:
    target = f"{web}/organizations/{quote(org)}/settings/apps/new" if org else f"{web}/settings/apps/new"
    return (
        f'<form id="create" method="post" action="{html.escape(target)}?state={html.escape(state)}">'
        f'<input type="hidden" name="manifest" value="{html.escape(json.dumps(body))}">'
        "<p>wheelpin asks GitHub to create its App with the permissions and events it needs.</p>"
        '<button type="submit">Create the GitHub App</button></form>'
        '<script>document.getElementById("create").submit()</script>'
    )


def _convert(api: str, code: str) -> dict[str, Any]:
    """Step 3: the code for the App's credentials (once; it lives an hour)."""
    import requests

    try:
        answer = requests.post(
            f"{api}/app-manifests/{quote(code)}/conversions",
            timeout=30,
            headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
        )
    except requests.RequestException as exc:
        raise TransientError(f"GitHub could not be reached to finish creating the App ({type(exc).__name__})") from None
    if answer.status_code in (404, 422):
        raise CredentialsError(
            f"GitHub refused the code it gave ({answer.status_code}): it is used or older than "
            "an hour; run wheelpin app create again"
        )
    if answer.status_code != 201:
        raise TransientError(f"GitHub answered {answer.status_code} to finishing the App's creation")
    app: dict[str, Any] = answer.json()
    if not all(key in app for key in ("id", "slug", "pem", "html_url")):
        raise TransientError("GitHub's answer to finishing the App's creation lacks its id or key")
    return app


def _private(path: Path, text: str) -> None:
    """Written readable by its owner alone, never for a moment by others."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text if text.endswith("\n") else text + "\n")

"""Registry credentials the way docker, skopeo, podman, buildah and crane find them.

Files read in sequence until one has a credential for the host, as containers-auth.json(5)
says (man.archlinux.org/man/containers-auth.json.5): `$REGISTRY_AUTH_FILE` if set, else
`$XDG_RUNTIME_DIR/containers/auth.json` (where `podman login` and `skopeo login` write);
then `${XDG_CONFIG_HOME:-~/.config}/containers/auth.json`; then docker's
`$DOCKER_CONFIG/config.json` (default `~/.docker/config.json`). Each has the same format:
`auths` entries (`auth` = base64 of `user:password`, or `username`/`password`, or
`identitytoken`), `credHelpers` per host and `credsStore` for all, through
`docker-credential-<helper> get`. (Entries keyed by a namespace, `quay.io/user/image`, are
not matched: wheelpin asks per host.)
Settings (`WHEELPIN_REGISTRY_USERNAME`/`_PASSWORD`) serve the one host
`WHEELPIN_REGISTRY_HOST` names (the settings refuse them without it).
Secrets never reach a log line or an error message.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import CredentialsError

DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class Credential:
    username: str
    secret: str = field(repr=False)
    identity_token: bool = False  # `secret` is an OAuth2 refresh token, not a password


def _keys_for(host: str) -> list[str]:
    if host in ("docker.io", "index.docker.io", "registry-1.docker.io"):
        return list(DOCKER_HUB_KEYS)
    return [host, f"https://{host}", f"http://{host}", f"https://{host}/v1/", f"https://{host}/v2/"]


class CredentialStore:
    """Finds the credential for a registry host; None means anonymous."""

    def __init__(
        self,
        *,
        config_path: Path | None = None,
        username: str | None = None,
        password: str | None = None,
        host: str | None = None,
    ) -> None:
        folder = os.environ.get("DOCKER_CONFIG")
        self.config_path = config_path or (Path(folder) if folder else Path.home() / ".docker") / "config.json"
        self.config_paths = [self.config_path] if config_path else [*containers_auth_files(), self.config_path]
        self._fallback = Credential(username, password) if username and password else None
        self._fallback_host = host  # settings' credentials go to this registry only
        self._cache: dict[str, Credential | None] = {}

    @staticmethod
    def _config(path: Path) -> dict[str, object]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise CredentialsError(
                f"{path}: cannot read the registry credentials file ({type(exc).__name__})"
            ) from None
        return data if isinstance(data, dict) else {}

    def get(self, host: str) -> Credential | None:
        if host not in self._cache:
            self._cache[host] = self._lookup(host)
        return self._cache[host]

    def _lookup(self, host: str) -> Credential | None:
        for path in self.config_paths:
            found = self._lookup_in(path, host)
            if found is not None:
                return found
        if self._fallback is not None and self._fallback_host in (None, host):
            return self._fallback
        return None

    def _lookup_in(self, path: Path, host: str) -> Credential | None:
        config = self._config(path)
        helpers = config.get("credHelpers")
        keys = _keys_for(host)
        if isinstance(helpers, dict):
            for key in keys:
                if isinstance(helpers.get(key), str):
                    return _from_helper(str(helpers[key]), key, host)
        auths = config.get("auths")
        if isinstance(auths, dict):
            for key in keys:
                entry = auths.get(key)
                if isinstance(entry, dict):
                    found = _from_auth_entry(entry, host, path)
                    if found is not None:
                        return found
        store = config.get("credsStore")
        if isinstance(store, str) and store:
            for key in keys[:2]:
                found = _from_helper(store, key, host, missing_ok=True)
                if found is not None:
                    return found
        return None


def containers_auth_files() -> list[Path]:
    """The containers tools' auth files, in the order they are read (see the module)."""
    override = os.environ.get("REGISTRY_AUTH_FILE")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    primary = [Path(override)] if override else [Path(runtime) / "containers/auth.json"] if runtime else []
    config_home = os.environ.get("XDG_CONFIG_HOME")
    return [*primary, (Path(config_home) if config_home else Path.home() / ".config") / "containers/auth.json"]


def _from_auth_entry(entry: dict[str, object], host: str, path: Path) -> Credential | None:
    token = entry.get("identitytoken")
    auth = entry.get("auth")
    username, password = entry.get("username"), entry.get("password")
    if isinstance(auth, str) and auth:
        try:
            decoded = base64.b64decode(auth, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise CredentialsError(f"{path}: the auth entry for {host} is not base64 of user:password") from None
        username, _, password = decoded.partition(":")
    if isinstance(token, str) and token:
        return Credential(str(username or "<token>"), token, identity_token=True)
    if isinstance(username, str) and isinstance(password, str) and username:
        return Credential(username, password)
    return None


def _from_helper(helper: str, key: str, host: str, *, missing_ok: bool = False) -> Credential | None:
    program = f"docker-credential-{helper}"
    try:
        done = subprocess.run([program, "get"], input=key, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise CredentialsError(f"credential helper {program} (named for {host}) is not installed") from None
    except subprocess.TimeoutExpired:
        raise CredentialsError(f"credential helper {program} did not answer for {host}") from None
    if done.returncode != 0:
        if missing_ok or "credentials not found" in done.stdout + done.stderr:
            return None
        raise CredentialsError(f"credential helper {program} failed for {host} (exit {done.returncode})")
    try:
        data = json.loads(done.stdout)
        username, secret = str(data["Username"]), str(data["Secret"])
    except (ValueError, KeyError, TypeError):
        raise CredentialsError(f"credential helper {program} gave no Username/Secret for {host}") from None
    if username == "<token>":
        return Credential(username, secret, identity_token=True)
    return Credential(username, secret)

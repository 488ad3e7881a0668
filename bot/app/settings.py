"""Settings of the wheelpin process, from the environment (`WHEELPIN_…`) and secret files.

These are the process's own knobs (where its cache lives, how it logs); what a
repository wants from wheelpin lives in that repository's config file instead.

Each setting is a field read from `WHEELPIN_<NAME>` (any case), its text validated by the
field's type as pydantic reads text (`"5"` an int, `"true"` a bool): a plain model and a
loop over the environment, which is what every command reads at its start, rather than
pydantic-settings' sources (dotenv files, JSON values, secrets folders), which wheelpin
does not use and which cost a command's start-up more than the rest of its settings.
"""

# No `from __future__ import annotations` here: pydantic would evaluate each setting's
# annotation from a string at every start (as in core/config/model.py).

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ByteSize, ConfigDict, Field, SecretStr, field_validator


def _default_cache() -> Path:
    return Path.home() / ".cache" / "wheelpin"


# The HTTP door of `wheelpin serve` (bot/app/webapp.py sizes the rest of it).
# Open connections served at once, idle ones included. waitress's default of 100 was
# closed by 110 idle sockets; 1,000 costs at most ~128 MB of buffers (64 KiB of header
# and 64 KiB of body in memory each, the rest spills to a temporary file) and is lowered
# to what the open-files limit allows.
HTTP_CONNECTIONS = 1000
# Seconds a connection may sit idle. Longer than the 60 s idle timeout of the usual
# proxies in front (AWS ALB, nginx's upstream keepalive), so the proxy, not wheelpin,
# closes a kept-alive connection (else a POST can race the close and fail, and GitHub
# never sends a failed delivery again by itself: its work waits for the next poll or
# refresh). A delivery still arriving is not idle: what bounds a slow one is
# webapp.REQUEST_DEADLINE.
HTTP_IDLE_TIMEOUT = 75
# Connections one client address may hold open: 1,100 slow clients that reconnect when cut
# held every slot. A quarter leaves the rest to GitHub (whose deliveries come from many
# addresses); behind one proxy, raise it to WHEELPIN_HTTP_CONNECTIONS.
HTTP_CONNECTIONS_PER_ADDRESS = 250


PREFIX = "WHEELPIN_"


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_default=True)

    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    log_format: Literal["auto", "json", "console"] = "auto"
    progress_seconds: float = Field(
        default=10.0,
        ge=0,
        description="how often a long upload, download or build is said in the logs (a bar instead on a terminal)",
    )
    cache_dir: Path = Field(default_factory=_default_cache)
    # the cache's parts that grow with what is watched, each bounded (bytes, or "20GiB"; least
    # recently used out first, never what a running pass uses: adapters/cachebound.py); the
    # defaults, about 17 GiB in all, leave room in deploy/'s 20 GiB cache volumes for a build's checkout
    # and for what running passes hold past the bounds
    cache_layers_max: ByteSize = Field(
        default=ByteSize(1 << 30),
        ge=0,
        description="bytes of consuming images' layer summaries kept (CACHE_DIR/layers)",
    )
    cache_builds_max: ByteSize = Field(
        default=ByteSize(8 << 30), ge=0, description="bytes of built and fetched wheels kept (CACHE_DIR/builds)"
    )
    cache_mirrors_max: ByteSize = Field(
        default=ByteSize(8 << 30), ge=0, description="bytes of upstreams' git mirrors kept (CACHE_DIR/upstream)"
    )
    cache_content_max: ByteSize = Field(
        default=ByteSize(256 << 20),
        ge=0,
        description="bytes of registry documents (manifests, configs) kept by digest (CACHE_DIR/content)",
    )

    # registries: credentials beyond ~/.docker/config.json, plain-HTTP hosts, retries
    registry_host: str | None = Field(default=None, description="the registry the username/password are for")
    registry_username: str | None = None
    registry_password: SecretStr | None = None
    registry_password_file: Path | None = None
    insecure_registries: str = Field(default="", description="comma-separated host[:port]s spoken to over plain HTTP")
    plain_http: bool = Field(default=False, description="every registry over plain HTTP (`--plain-http`, as oras)")
    tls_verify: bool = Field(
        default=True,
        description="false: HTTPS without checking registries' certificates (`--tls-verify=false`, as skopeo)",
    )
    registry_attempts: int = Field(default=5, ge=1, le=20)
    registry_backoff: float = Field(default=0.5, ge=0)
    registry_timeout: float = Field(default=120.0, gt=0)
    registry_connect_timeout: float = Field(default=10.0, gt=0)

    # the key the provenance attached to each published image is signed with (docs/provenance.md)
    signing_key: SecretStr | None = Field(
        default=None,
        description="a PEM private key (ECDSA P-256 or Ed25519): sign the provenance of the images published",
    )
    signing_key_file: Path | None = Field(default=None, description="the file holding it (`--signing-key FILE`)")

    # GitHub: a token (personal or installation), or an App (id, private key, installation)
    github_api_url: str | None = Field(
        default=None,
        description="GitHub Enterprise Server (https://HOST; "
        "/api/v3 may be written too), GHE.com (https://SUBDOMAIN.ghe.com or "
        "https://api.SUBDOMAIN.ghe.com), or an emulator; unset for github.com",
    )
    github_token: SecretStr | None = None
    github_login: str | None = Field(
        default=None,
        description="with a token: the login it acts as "
        "(`<app-slug>[bot]` for an installation token, `github-actions[bot]` for "
        "GITHUB_TOKEN), which GET /user refuses to tell those tokens; unset: asked of "
        "GitHub, and runs found by their title only when it will not say",
    )
    github_app_id: int | None = None
    github_private_key_file: Path | None = None
    github_installation_id: int | None = None
    github_write_gap: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="seconds at least between two GitHub writes of one App or token (GitHub's REST "
        "best practices ask 1; N replicas on PostgreSQL each leave N times as long)",
    )

    # the service (`wheelpin serve`)
    webhook_secret: SecretStr | None = None
    webhook_secret_file: Path | None = None
    repositories: str = Field(
        default="",
        description="with a token instead of an App: comma-separated OWNER/NAMEs to watch, in any case "
        "(read as GitHub names each)",
    )
    installation_ids: str = Field(
        default="", description="a shard: comma-separated installation ids this process serves (default: all)"
    )
    schedule_jitter: int = Field(default=120, ge=0, description="seconds of random delay added to each scheduled poll")
    refresh_minutes: int = Field(default=60, ge=1, description="how often installations and configs are read again")
    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql://… : keep the state (failures, "
        "backoffs, runs followed) in PostgreSQL, shared by several processes",
    )
    tick_seconds: int = Field(
        default=60,
        ge=1,
        le=60,
        description="with a database: how often the shared schedule is looked at (once across replicas)",
    )
    stalled_after: int = Field(
        default=30,
        ge=5,
        le=3600,
        description="with a database: seconds without a replica's "
        "heartbeat before its running jobs are handed to another",
    )
    replicas: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="with a database: how many replicas run; each "
        "paces its GitHub writes at 1/N of GitHub's content-creation limits, shared by the App",
    )
    workers: int = Field(default=2, ge=1, le=16, description="jobs run at once, never two of one repository")
    wedged_after: int = Field(
        default=7200,
        ge=60,
        description="seconds a worker may go without taking a job "
        "or finishing one before /healthz fails (and the container is restarted)",
    )
    stuck_after: int = Field(
        default=900, ge=1, description="seconds a key may wait, or a job run ×4, before /readyz fails"
    )
    shutdown_grace: float = Field(default=25.0, ge=0, description="seconds a running job may finish on shutdown")
    queue_backoff: float = Field(default=30.0, ge=0, description="first wait of a failing key, doubled per failure")
    allow_host_paths: bool = Field(
        default=False,
        description="let a config read from GitHub name absolute "
        "paths on this host (upstream.repo, file://, oci:): only for a single-tenant "
        "deployment whose repositories the operator trusts, and for tests",
    )
    http_connections: int = Field(
        default=HTTP_CONNECTIONS,
        ge=10,
        le=100_000,
        description="open HTTP connections served at once (idle ones included)",
    )
    http_connections_per_address: int = Field(
        default=HTTP_CONNECTIONS_PER_ADDRESS,
        ge=1,
        le=100_000,
        description="open HTTP connections one client address may hold",
    )
    health_port: int | None = Field(
        default=None,
        ge=0,
        le=65_535,
        description="a second port answering only "
        "/healthz, /readyz and /metrics, for probes: never queued behind webhook clients",
    )
    http_idle_timeout: int = Field(
        default=HTTP_IDLE_TIMEOUT,
        ge=1,
        le=86_400,
        description="seconds an HTTP connection may sit idle before it is closed",
    )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """The settings `environ` (the process's environment) gives: `WHEELPIN_<NAME>` in
        any case; pydantic's ValidationError when one is not of its field's type."""
        names = {PREFIX + name.upper(): name for name in cls.model_fields}
        given = {
            names[key.upper()]: value
            for key, value in (os.environ if environ is None else environ).items()
            if key.upper() in names
        }
        return cls.model_validate(given)

    @field_validator("github_api_url")
    @classmethod
    def _github_api_url(cls, value: str | None) -> str | None:
        return normalize_github_api_url(value)

    @property
    def cache_bounds(self) -> dict[str, int]:
        """The cache's parts (adapters/cachebound.py's names) → their bounds in bytes."""
        return {
            "layers": int(self.cache_layers_max),
            "builds": int(self.cache_builds_max),
            "upstream": int(self.cache_mirrors_max),
            "content": int(self.cache_content_max),
        }

    @property
    def insecure_hosts(self) -> list[str]:
        return [host.strip() for host in self.insecure_registries.split(",") if host.strip()]

    @property
    def watched_repositories(self) -> list[str]:
        return [name.strip() for name in self.repositories.split(",") if name.strip()]

    @property
    def shard(self) -> set[int] | None:
        """The installations this process serves, or None for all of them."""
        from ..core.errors import ConfigError

        parts = [part.strip() for part in self.installation_ids.split(",") if part.strip()]
        if not parts:
            return None
        if not all(part.isdigit() for part in parts):
            raise ConfigError(
                f"WHEELPIN_INSTALLATION_IDS: give installation ids as numbers (got {self.installation_ids!r})"
            )
        return {int(part) for part in parts}

    def check_write_pacing(self) -> None:
        """Each replica leaves WHEELPIN_GITHUB_WRITE_GAP × WHEELPIN_REPLICAS seconds between its
        GitHub writes (adapters/github/transport.py `share_writes`): a gap longer than a
        write may wait would refuse every write, so it is refused here, at start."""
        from ..adapters.github.transport import MAX_WAIT
        from ..core.errors import ConfigError

        replicas = self.replicas if self.database_url is not None else 1
        gap = self.github_write_gap * replicas
        if gap > MAX_WAIT:
            raise ConfigError(
                f"WHEELPIN_GITHUB_WRITE_GAP × WHEELPIN_REPLICAS is {self.github_write_gap:g} s × {replicas} = "
                f"{gap:g} s between one replica's writes, longer than the {MAX_WAIT:.0f} s a write may wait: "
                "lower one of them"
            )

    def webhook_key(self) -> bytes | None:
        """The webhook secret's bytes, None when unset; an empty one is refused, since
        every delivery signed with an empty key would pass."""
        from ..core.errors import ConfigError

        if self.webhook_secret_file is not None:
            try:
                key = self.webhook_secret_file.read_bytes().strip()
            except OSError as exc:
                raise ConfigError(
                    f"{self.webhook_secret_file}: cannot read WHEELPIN_WEBHOOK_SECRET_FILE ({exc.strerror})"
                ) from None
            if not key:
                raise ConfigError(
                    f"{self.webhook_secret_file} (WHEELPIN_WEBHOOK_SECRET_FILE) is empty: "
                    "put the App's webhook secret in it"
                )
            return key
        if self.webhook_secret is None:
            return None
        if not self.webhook_secret.get_secret_value().strip():
            raise ConfigError("WHEELPIN_WEBHOOK_SECRET is empty: set it to the App's webhook secret, or unset it")
        return self.webhook_secret.get_secret_value().encode()

    def registry_login(self) -> tuple[str, str, str] | None:
        """(host, username, password) from WHEELPIN_REGISTRY_*, or None; all three or no
        username and password, so a password is never sent to a registry nobody named,
        nor silently dropped."""
        from ..core.errors import ConfigError

        password = self.registry_secret()
        if not self.registry_username and not password:
            return None
        given = {
            "WHEELPIN_REGISTRY_HOST": self.registry_host,
            "WHEELPIN_REGISTRY_USERNAME": self.registry_username,
            "WHEELPIN_REGISTRY_PASSWORD (or _PASSWORD_FILE)": password,
        }
        missing = [name for name, value in given.items() if not value]
        if missing:
            raise ConfigError(f"registry credentials from the settings need {' and '.join(missing)} too")
        assert self.registry_host and self.registry_username and password
        return self.registry_host, self.registry_username, password

    def registry_secret(self) -> str | None:
        if self.registry_password_file is not None:
            from ..core.errors import ConfigError

            try:
                return self.registry_password_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"{self.registry_password_file}: cannot read WHEELPIN_REGISTRY_PASSWORD_FILE ({exc.strerror})"
                ) from None
        return self.registry_password.get_secret_value() if self.registry_password else None

    def signing_pem(self) -> tuple[bytes, str] | None:
        """(the signing key's PEM, where it came from, for errors), None when unset: from
        WHEELPIN_SIGNING_KEY_FILE (or `--signing-key`) first, else WHEELPIN_SIGNING_KEY."""
        from ..core.errors import ConfigError

        if self.signing_key_file is not None:
            try:
                return self.signing_key_file.read_bytes(), str(self.signing_key_file)
            except OSError as exc:
                raise ConfigError(f"{self.signing_key_file}: cannot read the signing key ({exc.strerror})") from None
        if self.signing_key is None:
            return None
        return self.signing_key.get_secret_value().encode(), "WHEELPIN_SIGNING_KEY"


def normalize_github_api_url(value: str | None) -> str | None:
    """GitHub's web address (`https://HOST` of an Enterprise Server, `https://SUBDOMAIN.ghe.com`),
    from its web or its API address (adapters/github/host.py tells which is which); None for github.com."""
    if value is None:
        return None
    from ..adapters.github.host import github_host  # only when an address is given

    host = github_host(value)
    return None if host.is_github_com else host.web


def load_settings() -> Settings:
    """The settings, or ConfigError naming each bad variable in one sentence."""
    from pydantic import ValidationError

    from ..core.errors import ConfigError

    try:
        return Settings.from_environment()
    except ValidationError as exc:
        faults = "; ".join(
            f"WHEELPIN_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            f" (got {error.get('input')!r})"
            for error in exc.errors()
        )
        raise ConfigError(f"bad setting in the environment: {faults}") from None

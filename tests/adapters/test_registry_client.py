"""Small pieces of the registry client: schemes, challenges, Retry-After, a PATCH-less
registry (through the fault proxy), credentials files."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters.credentials import CredentialStore
from bot.adapters.registry import RegistryClient, is_loopback, parse_challenge
from bot.core.errors import CredentialsError
from tests.cli import wheelpin
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.servers import Registry


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1:5000", True),
        ("localhost:5000", True),
        ("localhost", True),
        ("[::1]:5000", True),
        ("127.1.2.3", True),
        ("registry.example:5000", False),
        ("docker.io", False),
        ("10.0.0.1:5000", False),
    ],
)
def test_loopback_hosts_use_plain_http(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert RegistryClient(host).base.startswith("http://" if loopback else "https://")


def test_insecure_setting_and_docker_hub_host() -> None:
    assert RegistryClient("registry.lan:5000", insecure=["registry.lan:5000"]).base == "http://registry.lan:5000"
    assert RegistryClient("docker.io").base == "https://registry-1.docker.io"


def test_challenges() -> None:
    scheme, params = parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:rocm/atom-dev:pull,push",error="insufficient_scope"'
    )
    assert scheme == "bearer" and params["scope"] == "repository:rocm/atom-dev:pull,push"
    assert params["realm"] == "https://auth.docker.io/token" and params["error"] == "insufficient_scope"
    assert parse_challenge('Basic realm="Registry Realm"') == ("basic", {"realm": "Registry Realm"})


def config(tmp_path: Path, document: dict) -> CredentialStore:  # type: ignore[type-arg]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(document))
    return CredentialStore(config_path=path)


def test_docker_config_entries(tmp_path: Path) -> None:
    auth = base64.b64encode(b"alice:pa:ss").decode()
    store = config(
        tmp_path,
        {
            "auths": {
                "https://index.docker.io/v1/": {"auth": auth},
                "ghcr.io": {"username": "bob", "password": "pw"},
                "quay.io": {"identitytoken": "refresh"},
            }
        },
    )
    hub = store.get("docker.io")
    assert hub is not None and (hub.username, hub.secret) == ("alice", "pa:ss")
    assert "pa:ss" not in repr(hub)
    assert store.get("ghcr.io").username == "bob"  # type: ignore[union-attr]
    assert store.get("quay.io").identity_token  # type: ignore[union-attr]
    assert store.get("127.0.0.1:5000") is None


def test_containers_auth_files_come_before_docker_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """containers-auth.json(5): the primary file ($XDG_RUNTIME_DIR/containers/auth.json, or
    REGISTRY_AUTH_FILE), then $XDG_CONFIG_HOME/containers/auth.json, then docker's; the
    first file with a credential for the host wins."""

    def write(path: Path, auths: dict[str, str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "auths": {
                        host: {"auth": base64.b64encode(f"{user}:pw".encode()).decode()} for host, user in auths.items()
                    }
                }
            )
        )

    write(tmp_path / "run/containers/auth.json", {"ghcr.io": "bob"})
    write(tmp_path / "config/containers/auth.json", {"ghcr.io": "not-bob", "quay.io": "quinn"})
    write(tmp_path / "docker/config.json", {"ghcr.io": "carol", "docker.io": "dora"})
    write(tmp_path / "override.json", {"ghcr.io": "dave"})
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.delenv("REGISTRY_AUTH_FILE", raising=False)
    store = CredentialStore()
    assert [store.get(host).username for host in ("ghcr.io", "quay.io", "docker.io")] == ["bob", "quinn", "dora"]  # type: ignore[union-attr]
    assert store.get("registry.example") is None
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(tmp_path / "override.json"))  # replaces the primary file
    assert CredentialStore().get("ghcr.io").username == "dave"  # type: ignore[union-attr]
    (tmp_path / "override.json").write_text("{broken")
    with pytest.raises(CredentialsError, match="override.json: cannot read"):
        CredentialStore().get("ghcr.io")


def test_broken_docker_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(CredentialsError, match="config.json"):
        CredentialStore(config_path=tmp_path / "config.json").get("ghcr.io")
    bad = config(tmp_path, {"auths": {"ghcr.io": {"auth": "!!!"}}})
    with pytest.raises(CredentialsError, match="not base64"):
        bad.get("ghcr.io")


@pytest.fixture()
def proxy(registry: Registry) -> Iterator[FaultProxy]:
    server = FaultProxy(registry.host)
    yield server
    server.stop()


def test_registry_without_streamed_patch_gets_one_put(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    proxy.faults.append(Fault("PATCH", r"/blobs/uploads/", "405", times=None))
    proxy.refuse_chunked = True  # the single PUT declares its length too
    result = wheelpin(
        "image", "publish", str(small_wheels[0]), "--to", f"{proxy.host}/nopatch/demo:v1", "--json", env=env
    )
    assert result.code == 0, result.stderr
    puts = [path for method, path, status in proxy.seen if method == "PUT" and "/blobs/uploads/" in path]
    assert len(puts) >= 2  # layer and config, each in one PUT


def test_uploads_declare_their_length(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], registry: Registry, env: dict[str, str]
) -> None:
    proxy.refuse_chunked = True
    result = wheelpin(
        "image", "publish", str(small_wheels[0]), "--to", f"{proxy.host}/lengths/demo:v1", "--json", env=env
    )
    assert result.code == 0, result.stderr
    assert not [seen for seen in proxy.seen if seen[2] == 411]
    patches = [headers for method, path, headers in proxy.headers if method == "PATCH" and "/blobs/uploads/" in path]
    manifests = [headers for method, path, headers in proxy.headers if method == "PUT" and "/manifests/" in path]
    # the layer, the config, the manifest; then the attached provenance and SBOM: the empty
    # config and the two documents, their two manifests, and the fallback tag's index once
    assert len(patches) == 2 + 3 and len(manifests) == 1 + 3
    for headers in patches:
        size = int(headers["Content-Length"])
        assert size > 0 and headers["Content-Range"] == f"0-{size - 1}"
    sent = sum(int(headers["Content-Length"]) for headers in patches + manifests)
    assert sent == result.json()["bytes_uploaded"] + result.json()["attached_bytes_uploaded"]


def test_publish_with_a_component_uses_its_rules(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "wheelpin.toml").write_text(f"""
[[component]]
name = "demo"
upstream = {{ repo = "../upstream", branch = "main" }}
wheel = {{ distribution = "demo-cache-rocm" }}
build = {{ command = "true" }}
image = {{ repository = "{registry.host}/component/demo", tag = "v{{version_base}}-g{{sha8}}" }}
pins = [{{ file = "wheelpin.toml", image_arg = "X" }}]
""")
    refused = wheelpin(
        "image",
        "publish",
        str(small_wheels[0]),
        "--to",
        f"{registry.host}/component/demo:v1",
        "--component",
        "demo",
        "--repo",
        str(tmp_path),
        "--revision",
        "05fc77a0" * 5,
        env=env,
    )
    assert refused.code == 1 and "expected 'demo-cache-rocm'" in refused.stderr
    wrong_commit = wheelpin(
        "image",
        "publish",
        str(small_wheels[0]),
        "--to",
        f"{registry.host}/component/demo:v1",
        "--revision",
        "3d3aa833" * 5,
        env=env,
    )
    assert wrong_commit.code == 1 and "does not carry commit g3d3aa833" in wrong_commit.stderr


def test_an_upload_body_declares_its_length_even_when_empty() -> None:
    import requests

    from bot.adapters.registrywire import HashedBody as _HashedBody
    from bot.core.errors import VerificationError

    for size, chunks in ((0, [b""]), (6, [b"abc", b"def"])):
        body = _HashedBody(lambda chunks=chunks: chunks, size)  # type: ignore[misc]
        prepared = requests.Request("PATCH", "http://127.0.0.1/", data=body.payload()).prepare()
        assert prepared.headers.get("Content-Length") == str(size) and "Transfer-Encoding" not in prepared.headers
    with pytest.raises(VerificationError, match="longer than the 0 bytes"):
        _HashedBody(lambda: [b"x"], 0).payload()
    with pytest.raises(VerificationError, match="not the 5 declared"):
        list(_HashedBody(lambda: [b"abc"], 5))

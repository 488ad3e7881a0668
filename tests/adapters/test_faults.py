"""The tag guard and the retries under every fault a loopback proxy throws."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import wheelpin
from tests.fixtures.faultproxy import Fault, FaultProxy
from tests.fixtures.servers import Registry


@pytest.fixture()
def proxy(registry: Registry) -> Iterator[FaultProxy]:
    server = FaultProxy(registry.host)
    yield server
    server.stop()


def publish(proxy: FaultProxy, wheel: Path, repo: str, env: dict[str, str], **extra: str):  # type: ignore[no-untyped-def]
    return wheelpin("image", "publish", str(wheel), "--to", f"{proxy.host}/{repo}:v1", "--json", env={**env, **extra})


def tag_in_registry(registry: Registry, repo: str) -> bool:
    import requests

    answer = requests.head(
        f"http://{registry.host}/v2/{repo}/manifests/v1",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        proxies={"http": "", "https": ""},
    )
    return answer.status_code == 200


@pytest.mark.parametrize(
    ("fault", "repo"),
    [
        (Fault("HEAD", r"/manifests/", "429", times=2, retry_after="0"), "faults/head429"),
        (Fault("HEAD", r"/manifests/", "503", times=2), "faults/head503"),
        (Fault("HEAD", r"/blobs/", "500", times=1), "faults/blob500"),
        (Fault("POST", r"/blobs/uploads/", "503", times=1), "faults/post503"),
        (Fault("PATCH", r"/blobs/uploads/", "reset", times=1), "faults/patchreset"),
        (Fault("PUT", r"/manifests/", "500", times=1), "faults/put500"),
        (Fault("HEAD", r"/manifests/", "reset", times=1), "faults/headreset"),
        (Fault("HEAD", r"/manifests/", "stall", times=1, stall_seconds=3), "faults/headstall"),
    ],
    ids=lambda value: value if isinstance(value, str) else f"{value.method}-{value.action}",
)
def test_passing_faults_are_retried(
    proxy: FaultProxy, registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], fault: Fault, repo: str
) -> None:
    proxy.faults.append(fault)
    result = publish(proxy, small_wheels[0], repo, env, WHEELPIN_REGISTRY_TIMEOUT="1")
    assert result.code == 0, result.stderr
    assert fault.hits == fault.times
    assert result.json()["status"] == "published"
    assert tag_in_registry(registry, repo)


@pytest.mark.parametrize("action", ["500", "503", "429", "reset"])
def test_a_guard_that_cannot_read_the_tag_never_writes(
    proxy: FaultProxy, registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], action: str
) -> None:
    """Only a 404 means free: an answer that keeps failing is exit 4, and no tag appears."""
    repo = f"faults/never{action}"
    proxy.faults.append(Fault("HEAD", r"/manifests/", action, times=None, retry_after="0"))
    result = publish(proxy, small_wheels[0], repo, env, WHEELPIN_REGISTRY_ATTEMPTS="3")
    assert result.code == 4, result.stderr
    assert result.json()["kind"] == "transient"  # --json: the error's document, not a report
    said = f"{proxy.host} " + ("reset the connection" if action == "reset" else f"answered {action}") + ", 3 tries in "
    assert f"\nwheelpin: publishing {proxy.host}/{repo}:v1: {said}" in result.stderr, result.stderr
    assert not tag_in_registry(registry, repo)
    assert not any(method == "PUT" for method, _path, _status in proxy.seen)


def test_retry_after_is_honoured(proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]) -> None:
    import time

    proxy.faults.append(Fault("HEAD", r"/manifests/", "429", times=1, retry_after="2"))
    started = time.monotonic()
    result = publish(proxy, small_wheels[0], "faults/retryafter", env)
    assert result.code == 0, result.stderr
    assert time.monotonic() - started >= 2.0
    assert '"delay": 2.0' in result.stderr  # the log says why it waited


def test_a_401_from_a_registry_without_a_challenge_is_a_credentials_error(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    proxy.faults.append(Fault("HEAD", r"/manifests/", "401", times=None))
    result = publish(proxy, small_wheels[0], "faults/unauthorized", env)
    assert result.code == 2 and "401" in result.stderr


def test_a_second_publish_through_faults_uploads_nothing(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    assert publish(proxy, small_wheels[1], "faults/twice", env).code == 0
    proxy.faults.append(Fault("HEAD", r"/manifests/", "503", times=1))
    again = publish(proxy, small_wheels[1], "faults/twice", env)
    assert again.code == 0, again.stderr
    assert again.json()["status"] == "unchanged" and again.json()["bytes_uploaded"] == 0


def strip_digest_header(
    method: str, path: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[list[tuple[str, str]], bytes]:
    if method == "HEAD" and "/manifests/" in path:
        headers = [(k, v) for k, v in headers if k.lower() != "docker-content-digest"]
    return headers, body


def corrupt_bodies(
    method: str, path: str, headers: list[tuple[str, str]], body: bytes
) -> tuple[list[tuple[str, str]], bytes]:
    if method == "GET" and ("/manifests/sha256:" in path or "/blobs/sha256:" in path) and body:
        body = body[:-1] + bytes([body[-1] ^ 1])
    return headers, body


def test_a_head_without_a_digest_header_is_transient(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    """A 200 that does not say which digest the tag names tells the guard nothing: exit 4."""
    assert publish(proxy, small_wheels[0], "faults/nodigest", env).code == 0
    proxy.alter = strip_digest_header
    again = publish(proxy, small_wheels[0], "faults/nodigest", env)
    assert again.code == 4, again.stderr
    assert "Docker-Content-Digest" in again.stderr and again.json()["exit"] == 4


def test_a_manifest_body_that_does_not_match_its_digest_is_transient(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    proxy.alter = corrupt_bodies
    result = publish(proxy, small_wheels[1], "faults/badmanifest", env)
    assert result.code == 4, result.stderr
    assert "does not match its digest" in result.stderr and result.json()["exit"] == 4


def test_a_blob_body_that_does_not_match_its_digest_is_transient(
    proxy: FaultProxy, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    first = publish(proxy, small_wheels[1], "faults/badblob", env)
    assert first.code == 0, first.stderr
    proxy.alter = corrupt_bodies
    shown = wheelpin(
        "image",
        "show",
        f"{proxy.host}/faults/badblob@{first.json()['digest']}",
        "--json",
        env={**env, "WHEELPIN_CACHE_DIR": str(Path(env.get("HOME", "/tmp")) / "nocache")},
    )
    assert shown.code == 4, shown.stderr
    assert "does not match its digest" in shown.stderr

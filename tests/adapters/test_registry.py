"""Publishing to a real registry (Debian's docker-registry 2.8) and reading it back,
checked with Debian's skopeo: no auth, basic auth, the bearer-token flow."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli import wheelpin
from tests.conftest import USERS
from tests.fixtures.servers import Registry, TokenServer


def skopeo_inspect(ref: str, *extra: str, raw: bool = False) -> dict:  # type: ignore[type-arg]
    args = ["skopeo", "inspect", "--tls-verify=false", *extra, *(["--raw"] if raw else []), ref]
    done = subprocess.run(args, check=True, capture_output=True, text=True, timeout=60)
    return json.loads(done.stdout)


def test_publish_then_unchanged_then_refused(
    registry: Registry, rocm_wheel: Path, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    to = f"{registry.host}/publish/atom-dev:lmcache-test-1"  # a repository no other test uses
    first = wheelpin("image", "publish", str(rocm_wheel), "--to", to, "--json", "--require-arch", "gfx942", env=env)
    assert first.code == 0, first.stderr
    result = first.json()
    assert result["status"] == "published" and result["bytes_uploaded"] > rocm_wheel.stat().st_size
    digest = result["digest"]
    assert result["ref"] == f"{to}@{digest}"
    # skopeo sees exactly what we pushed (skopeo refuses repo:tag@digest: give repo@digest)
    manifest = skopeo_inspect(f"docker://{registry.host}/publish/atom-dev@{digest}", raw=True)
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert [layer["mediaType"] for layer in manifest["layers"]] == ["application/vnd.oci.image.layer.v1.tar"]
    config = skopeo_inspect(f"docker://{registry.host}/publish/atom-dev@{digest}", "--config")
    assert config["os"] == "linux" and config["architecture"] == "amd64"
    assert config["rootfs"] == {"type": "layers", "diff_ids": [manifest["layers"][0]["digest"]]}
    wheels = json.loads(manifest["annotations"]["io.wheelpin.wheels"])
    assert [w["file"] for w in wheels] == [rocm_wheel.name]
    # the same wheel again: nothing uploaded
    again = wheelpin("image", "publish", str(rocm_wheel), "--to", to, "--json", env=env)
    assert again.code == 0 and again.json()["status"] == "unchanged"
    assert again.json()["bytes_uploaded"] == 0 and again.json()["digest"] == digest
    # other content under the same tag: refused, and the tag still holds the first image
    other = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, env=env)
    assert other.code == 3 and "never overwrites a tag" in other.stderr
    assert other.stderr.rstrip().endswith(
        "(delete that tag from the registry if what it holds is stale, or publish under another tag)"
    )  # what to do, in the same sentence
    assert skopeo_inspect(f"docker://{to}")["Digest"] == digest


def test_same_wheel_same_digest_anywhere(
    registry: Registry, small_wheels: tuple[Path, Path], tmp_path: Path, env: dict[str, str]
) -> None:
    copy = tmp_path / "elsewhere" / small_wheels[1].name
    copy.parent.mkdir()
    shutil.copyfile(small_wheels[1], copy)  # another mtime, another owner's umask
    copy.chmod(0o600)
    to_registry = wheelpin(
        "image", "publish", str(small_wheels[1]), "--to", f"{registry.host}/repro/demo:a", "--json", env=env
    )
    to_layout = wheelpin("image", "publish", str(copy), "--to", f"oci:{tmp_path / 'layout'}:b", "--json", env=env)
    assert to_registry.code == 0 and to_layout.code == 0, to_layout.stderr
    assert to_registry.json()["digest"] == to_layout.json()["digest"]
    # skopeo reads the layout folder, and copies it into the registry unchanged
    assert skopeo_inspect(f"oci:{tmp_path / 'layout'}:b", raw=True)["schemaVersion"] == 2
    subprocess.run(
        [
            "skopeo",
            "copy",
            "--preserve-digests",
            "--dest-tls-verify=false",
            f"oci:{tmp_path / 'layout'}:b",
            f"docker://{registry.host}/repro/copied:b",
        ],
        check=True,
        capture_output=True,
    )
    assert skopeo_inspect(f"docker://{registry.host}/repro/copied:b")["Digest"] == to_layout.json()["digest"]


def test_image_show_reads_annotations_only(registry: Registry, rocm_wheel: Path, env: dict[str, str]) -> None:
    to = f"{registry.host}/show/lmcache:t1"
    assert wheelpin("image", "publish", str(rocm_wheel), "--to", to, env=env).code == 0
    shown = wheelpin("image", "show", to, "--json", env=env)
    assert shown.code == 0, shown.stderr
    info = shown.json()
    assert info["metadata_from"] == "annotations" and info["bytes_fetched"] < 64 * 1024
    (wheel,) = info["wheels"]
    import hashlib

    assert wheel["sha256"] == hashlib.sha256(rocm_wheel.read_bytes()).hexdigest()
    assert wheel["requires_dist"][0] == "numpy<=2.2.6"
    text = wheelpin("image", "show", to, env=env)
    assert text.code == 0 and rocm_wheel.name in text.stdout


def test_wheel_diff_between_images(registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str]) -> None:
    old, new = (f"{registry.host}/diff/demo:{t}" for t in ("old", "new"))
    assert wheelpin("image", "publish", str(small_wheels[0]), "--to", old, env=env).code == 0
    assert wheelpin("image", "publish", str(small_wheels[1]), "--to", new, env=env).code == 0
    result = wheelpin("wheel", "diff", old, new, "--constraint", "numpy==2.3.5", "--json", env=env)
    assert result.code == 1
    diff = result.json()
    assert [c["name"] for c in diff["added"]] == ["msgspec"]
    assert diff["conflicts"] == [{"requirement": "numpy<=2.2.6", "constraint": "numpy==2.3.5"}]


def test_missing_tag_and_bad_refs(registry: Registry, env: dict[str, str], small_wheels: tuple[Path, Path]) -> None:
    missing = wheelpin("image", "show", f"{registry.host}/nothing/here:v1", env=env)
    assert missing.code == 1 and "no such tag" in missing.stderr
    bad = wheelpin("image", "publish", str(small_wheels[0]), "--to", f"{registry.host}/Bad:x", env=env)
    assert bad.code == 2 and "invalid repository path" in bad.stderr
    digest_target = wheelpin(
        "image", "publish", str(small_wheels[0]), "--to", f"{registry.host}/a/b@sha256:" + "a" * 64, env=env
    )
    assert digest_target.code == 2 and "not a digest" in digest_target.stderr


def test_verification_failure_publishes_nothing(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    to = f"{registry.host}/verify/demo:v1"
    result = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, "--require-arch", "gfx942", env=env)
    assert result.code == 1 and "nothing published" in result.stderr
    assert wheelpin("image", "show", to, env=env).code == 1  # no such tag


def test_basic_auth(
    basic_registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    to = f"{basic_registry.host}/private/demo:v1"
    anonymous = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, env=env)
    assert anonymous.code == 2 and "needs credentials" in anonymous.stderr
    wrong = wheelpin(
        "image",
        "publish",
        str(small_wheels[0]),
        "--to",
        to,
        env={
            **env,
            "WHEELPIN_REGISTRY_HOST": basic_registry.host,
            "WHEELPIN_REGISTRY_USERNAME": "alice",
            "WHEELPIN_REGISTRY_PASSWORD": "nope-Wr0ng",
        },
    )
    assert wrong.code == 2 and "refused" in wrong.stderr and "nope-Wr0ng" not in wrong.stderr
    # credentials from $DOCKER_CONFIG/config.json, as docker login writes them
    import base64

    auth = base64.b64encode(f"alice:{USERS['alice']}".encode()).decode()
    (Path(env["DOCKER_CONFIG"]) / "config.json").write_text(
        json.dumps({"auths": {basic_registry.host: {"auth": auth}}})
    )
    good = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, "--json", env=env)
    assert good.code == 0, good.stderr
    assert USERS["alice"] not in good.stderr + good.stdout
    shown = wheelpin("image", "show", to, "--json", env=env)
    assert shown.code == 0 and shown.json()["wheels"][0]["file"] == small_wheels[0].name


def test_credential_helper(
    basic_registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    helpers = tmp_path / "bin"
    helpers.mkdir()
    helper = helpers / "docker-credential-wheelpintest"
    helper.write_text(
        f'#!/bin/sh\nread host\necho \'{{"ServerURL":"\'$host\'","Username":"alice","Secret":"{USERS["alice"]}"}}\'\n'
    )
    helper.chmod(0o755)
    (Path(env["DOCKER_CONFIG"]) / "config.json").write_text(
        json.dumps({"credHelpers": {basic_registry.host: "wheelpintest"}})
    )
    import os

    result = wheelpin(
        "image",
        "publish",
        str(small_wheels[1]),
        "--to",
        f"{basic_registry.host}/helper/demo:v1",
        env={**env, "PATH": f"{helpers}:{os.environ['PATH']}"},
    )
    assert result.code == 0, result.stderr
    missing = wheelpin("image", "show", f"{basic_registry.host}/helper/demo:v1", env={**env, "PATH": "/usr/bin:/bin"})
    assert missing.code == 2 and "docker-credential-wheelpintest" in missing.stderr


def test_credentials_skopeo_login_wrote(
    basic_registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    """`skopeo login` (as podman and buildah) writes containers' auth.json; wheelpin reads it
    where they do: REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/auth.json."""
    auth_file = tmp_path / "auth.json"
    login = subprocess.run(
        [
            "skopeo",
            "login",
            "--tls-verify=false",
            "--authfile",
            str(auth_file),
            "-u",
            "alice",
            "--password-stdin",
            basic_registry.host,
        ],
        input=USERS["alice"],
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert login.returncode == 0, login.stderr
    to = f"{basic_registry.host}/containers-auth/demo:v1"
    runtime = tmp_path / "run"
    (runtime / "containers").mkdir(parents=True)
    for where in ({"REGISTRY_AUTH_FILE": str(auth_file)}, {"XDG_RUNTIME_DIR": str(runtime)}):
        if "XDG_RUNTIME_DIR" in where:
            shutil.copy(auth_file, runtime / "containers/auth.json")
        published = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, "--json", env={**env, **where})
        assert published.code == 0, published.stderr  # env's DOCKER_CONFIG is empty: auth.json it was
        assert USERS["alice"] not in published.stderr + published.stdout


def test_plain_http_and_tls_verify_as_oras_and_skopeo_spell_them(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    """A registry named by an address that is not loopback's is spoken to over HTTPS with
    its certificate checked, unless the command says `--plain-http` (oras) or
    `--tls-verify=false` (skopeo). 0.0.0.0 reaches this host (Linux takes it as a local
    address) without being a loopback name."""
    import urllib3

    from tests.fixtures.servers import Registry as Server

    local = "127.0.0.1,localhost,::1,0.0.0.0"
    env = {**env, "NO_PROXY": local, "no_proxy": local}  # the tests' dead proxy is for the world outside
    wheel = str(small_wheels[0])
    plain = f"0.0.0.0:{registry.port}/flags/demo:v1"
    refused = wheelpin("image", "publish", wheel, "--to", plain, env=env)
    assert refused.code == 2 and "--plain-http" in refused.stderr.strip().splitlines()[-1], refused.stderr
    published = wheelpin("image", "publish", wheel, "--to", plain, "--plain-http", "--json", env=env)
    assert published.code == 0, published.stderr
    assert wheelpin("image", "show", plain, env={**env, "WHEELPIN_PLAIN_HTTP": "true"}).code == 0
    urllib3.disable_warnings()  # the fixture's own readiness check
    secure = Server(tmp_path / "tls-registry", tls=True)
    try:
        target = f"0.0.0.0:{secure.port}/flags/demo:v1"
        unchecked = wheelpin("image", "publish", wheel, "--to", target, env=env)
        assert unchecked.code == 2 and "--tls-verify=false" in unchecked.stderr.strip().splitlines()[-1]
        taken = wheelpin("image", "publish", wheel, "--to", target, "--tls-verify=false", "--json", env=env)
        assert taken.code == 0, taken.stderr
        assert "InsecureRequestWarning" not in taken.stderr and "tls_unverified" in taken.stderr
        shown = wheelpin("image", "show", target, "--tls-verify", "false", "--json", env=env)
        assert shown.code == 0 and shown.json()["wheels"][0]["file"] == small_wheels[0].name
    finally:
        secure.stop()


def test_bearer_token_flow(
    token_registry: Registry, token_server: TokenServer, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    to = f"{token_registry.host}/tokens/demo:v1"
    login = {
        **env,
        "WHEELPIN_REGISTRY_HOST": token_registry.host,
        "WHEELPIN_REGISTRY_USERNAME": "alice",
        "WHEELPIN_REGISTRY_PASSWORD": USERS["alice"],
    }
    issued = len(token_server.issued)
    result = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, "--json", env=login)
    assert result.code == 0, result.stderr
    # one token per scope, cached for the whole push (pull,push; and pull for reading back)
    scopes = [claims["access"][0]["actions"] for claims in token_server.issued[issued:]]
    assert len(scopes) <= 3 and ["pull", "push"] in scopes
    # anonymous users get pull-only tokens: reading works, pushing is refused
    shown = wheelpin("image", "show", to, "--json", env=env)
    assert shown.code == 0, shown.stderr
    push = wheelpin("image", "publish", str(small_wheels[1]), "--to", f"{token_registry.host}/tokens/demo:v2", env=env)
    assert push.code == 2 and "refused" in push.stderr


def test_cross_repository_mount(registry: Registry, rocm_wheel: Path, env: dict[str, str]) -> None:
    first = wheelpin(
        "image", "publish", str(rocm_wheel), "--to", f"{registry.host}/staging/lmcache:m1", "--json", env=env
    )
    assert first.code == 0, first.stderr
    mounted = wheelpin(
        "image",
        "publish",
        str(rocm_wheel),
        "--to",
        f"{registry.host}/release/lmcache:m1",
        "--mount-from",
        "staging/lmcache",
        "--json",
        env=env,
    )
    assert mounted.code == 0, mounted.stderr
    assert mounted.json()["bytes_uploaded"] < 4096  # config and manifest only: the layer was mounted
    assert mounted.json()["digest"] == first.json()["digest"]


def test_cross_repository_mount_behind_a_token_service(
    token_registry: Registry, token_server: TokenServer, rocm_wheel: Path, env: dict[str, str]
) -> None:
    """Behind a token service (Docker Hub, GHCR) a registry mounts only if the token grants
    pull on the source repository too (the Distribution spec, "Mounting a blob from another
    repository"; docker-registry checks the token's access claims); else it answers 202 and
    the whole layer goes up again, silently."""
    login = {
        **env,
        "WHEELPIN_REGISTRY_HOST": token_registry.host,
        "WHEELPIN_REGISTRY_USERNAME": "alice",
        "WHEELPIN_REGISTRY_PASSWORD": USERS["alice"],
    }
    first = wheelpin(
        "image",
        "publish",
        str(rocm_wheel),
        "--to",
        f"{token_registry.host}/tokens/staging/lmcache:m1",
        "--json",
        env=login,
    )
    assert first.code == 0, first.stderr
    issued = len(token_server.issued)
    mounted = wheelpin(
        "image",
        "publish",
        str(rocm_wheel),
        "--to",
        f"{token_registry.host}/tokens/release/lmcache:m1",
        "--mount-from",
        "tokens/staging/lmcache",
        "--json",
        env=login,
    )
    assert mounted.code == 0, mounted.stderr
    assert mounted.json()["bytes_uploaded"] < 4096 < first.json()["bytes_uploaded"]  # the layer was mounted
    scopes = [{(a["name"], tuple(a["actions"])) for a in claims["access"]} for claims in token_server.issued[issued:]]
    assert {("tokens/release/lmcache", ("pull", "push")), ("tokens/staging/lmcache", ("pull",))} in scopes


def test_a_layout_tag_is_checked_again_under_its_lock(tmp_path: Path) -> None:
    """The publisher's guard reads the tag before it uploads; a writer that took the tag
    meanwhile must still win, so `put_manifest` itself refuses to move a tag."""
    from bot.adapters.imagestore import LayoutStore
    from bot.core.errors import RefusedError

    store = LayoutStore(tmp_path / "layout")
    first = store.put_manifest("v1", b'{"first": true}', "application/vnd.oci.image.manifest.v1+json")
    assert store.put_manifest("v1", b'{"first": true}', "application/vnd.oci.image.manifest.v1+json") == first
    with pytest.raises(RefusedError, match="never overwrites"):
        store.put_manifest("v1", b'{"second": true}', "application/vnd.oci.image.manifest.v1+json")
    assert store.tag_digest("v1") == first and store.list_tags() == ["v1"]


def test_two_processes_racing_for_one_layout_tag(
    tmp_path: Path, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    import sys

    from tests.cli import environment

    folder = tmp_path / "layout"
    for round_ in range(3):
        tag = f"race{round_}"
        racers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bot.cli",
                    "image",
                    "publish",
                    str(wheel),
                    "--to",
                    f"oci:{folder}:{tag}",
                    "--json",
                ],
                env=environment(env),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for wheel in small_wheels
        ]
        results = [
            (racer.wait(timeout=120), racer.stdout.read(), racer.stderr.read())  # type: ignore[union-attr]
            for racer in racers
        ]
        won = [json.loads(out)["digest"] for code, out, _ in results if code == 0]
        lost = [err for code, _, err in results if code != 0]
        assert len(won) == 1 and len(lost) == 1, results
        assert "never overwrites a tag" in lost[0]
        index = json.loads((folder / "index.json").read_text())
        assert [
            m["digest"] for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == tag
        ] == won


def test_worker_threads_sharing_a_client_each_count_their_own_traffic(
    token_registry: Registry, token_server: TokenServer, tmp_path: Path
) -> None:
    """The service's workers share one client per registry host. A pass runs in one worker,
    and what it reports (the `wheelpin_registry_*` metrics are summed from it) must be its
    own requests and bytes, not those of a pass that ran meanwhile in another; and each
    thread speaks through a `requests.Session` of its own (requests promises none is
    thread-safe: psf/requests#2766). Tokens, though, are got once and shared."""
    import hashlib
    import threading

    from bot.adapters.credentials import CredentialStore
    from bot.adapters.registry import RegistryClient

    credentials = CredentialStore(
        config_path=tmp_path / "config.json", username="alice", password=USERS["alice"], host=token_registry.host
    )
    client = RegistryClient(token_registry.host, credentials=credentials)
    blob = b"one layer of many bytes " * 4096
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    seen: dict[str, tuple[int, int, int, int]] = {}
    start = threading.Barrier(2)

    def uploader() -> None:
        start.wait()
        sent = client.upload_blob("tokens/threads/up", digest, len(blob), lambda: [blob])
        seen["up"] = (client.traffic.requests, client.traffic.bytes_uploaded, sent, id(client._session))

    def reader() -> None:
        start.wait()
        for _ in range(5):
            client.manifest_digest("tokens/threads/none", "v1")
        seen["read"] = (client.traffic.requests, client.traffic.bytes_uploaded, 0, id(client._session))

    issued = len(token_server.issued)
    threads = [threading.Thread(target=uploader), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    up_requests, up_bytes, sent, up_session = seen["up"]
    read_requests, read_bytes, _, read_session = seen["read"]
    assert up_bytes == sent == len(blob) and read_bytes == 0  # the upload is the uploader's alone
    assert 2 <= up_requests <= 6 and 5 <= read_requests <= 7  # each its own (a 401 and a token each at most)
    assert up_session != read_session and client.traffic.requests == 0  # this thread sent nothing
    scopes = [tuple(claims["access"][0]["actions"]) for claims in token_server.issued[issued:]]
    assert scopes.count(("pull",)) <= 2 and scopes.count(("pull", "push")) <= 2


def test_a_repository_reads_its_cached_documents_without_a_client(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    """A store opened for a pass makes its client (and loads the HTTP stack) at its first
    request: a manifest the digest cache holds is read without one."""
    from bot.adapters.imagestore import DigestCache, RegistryRepository
    from bot.adapters.registry import RegistryClient

    to = f"{registry.host}/lazy/client:one"
    published = wheelpin("image", "publish", str(small_wheels[0]), "--to", to, "--json", env=env)
    assert published.code == 0, published.stderr
    digest = published.json()["digest"]
    made: list[str] = []

    def client_for(host: str) -> RegistryClient:
        made.append(host)
        return RegistryClient(host)

    cache = DigestCache(tmp_path / "content")
    first = RegistryRepository.connecting(registry.host, "lazy/client", client_for, cache=cache)
    assert first.name == f"{registry.host}/lazy/client" and first.traffic.requests == 0 and made == []
    manifest = first.get_manifest(digest)  # fetched once, and kept by digest
    assert made == [registry.host] and first.traffic.requests == 1
    again = RegistryRepository.connecting(registry.host, "lazy/client", client_for, cache=cache)
    assert again.get_manifest(digest) == manifest and made == [registry.host]
    assert "one" in again.list_tags() and made == [registry.host, registry.host]


def test_a_store_counts_its_requests_on_the_client_another_store_made_first(registry: Registry) -> None:
    """Two stores of one host share the process's client: a count taken by the second
    before its first request is that client's own, so the bytes and requests it reads as
    its own are its own, not the client's whole total."""
    from bot.adapters.imagestore import DigestCache, RegistryRepository
    from bot.adapters.registry import RegistryClient

    clients: dict[str, RegistryClient] = {}

    def client_for(host: str) -> RegistryClient:
        return clients.setdefault(host, RegistryClient(host))

    first, second = (
        RegistryRepository.connecting(registry.host, name, client_for, cache=DigestCache(None), made=clients.get)
        for name in ("lazy/first", "lazy/second")
    )
    first.list_tags()
    before = second.traffic.requests
    assert before >= 1  # the shared client's count, not a fresh zero
    second.list_tags()
    assert second.traffic.requests - before == 1

"""A consumer build: buildah (vfs storage, chroot isolation) builds a Dockerfile that
takes the wheel from our image by digest with `COPY --from` and checks its sha256."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

from bot.adapters.imagestore import RegistryRepository
from bot.adapters.registry import RegistryClient
from bot.core.image.oci import CONFIG_TYPE, LAYER_TYPE, MANIFEST_TYPE, canonical_json, digest_of
from tests.cli import wheelpin
from tests.fixtures.foreignpush import buildah_environment as foreign_environment
from tests.fixtures.servers import Registry

BUSYBOX = Path("/bin/busybox")


def push_busybox(registry: Registry) -> str:
    """A FROM-scratch base with a static busybox as /bin/sh, for the RUN step."""
    assert BUSYBOX.exists(), "Debian busybox-static is needed (.ci/run installs it)"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        folder = tarfile.TarInfo("bin")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        archive.addfile(folder)
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = BUSYBOX.stat().st_size, 0o755
        with BUSYBOX.open("rb") as stream:
            archive.addfile(info, stream)
        for applet in ("sh", "sha256sum", "echo", "ls", "cat"):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            archive.addfile(link)
    layer = buffer.getvalue()
    config = canonical_json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": ["PATH=/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [digest_of(layer)]},
        }
    )
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": CONFIG_TYPE, "digest": digest_of(config), "size": len(config)},
            "layers": [{"mediaType": LAYER_TYPE, "digest": digest_of(layer), "size": len(layer)}],
        }
    )
    store = RegistryRepository(RegistryClient(registry.host), "base/busybox")
    for blob in (layer, config):
        store.put_blob(digest_of(blob), len(blob), lambda blob=blob: [blob])  # type: ignore[misc]
    return store.put_manifest("latest", manifest, MANIFEST_TYPE)


def test_buildah_copies_the_wheel_by_digest(
    registry: Registry, rocm_wheel: Path, env: dict[str, str], tmp_path: Path
) -> None:
    base = push_busybox(registry)
    published = wheelpin(
        "image", "publish", str(rocm_wheel), "--to", f"{registry.host}/rocm/atom-dev:consumer-test", "--json", env=env
    )
    assert published.code == 0, published.stderr
    digest = published.json()["digest"]
    sha256 = hashlib.sha256(rocm_wheel.read_bytes()).hexdigest()
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text(
        f'ARG LMCACHE_WHEEL_IMAGE="{registry.host}/rocm/atom-dev@{digest}"\n'
        f"ARG LMCACHE_WHEEL_SHA256={sha256}\n"
        f"FROM ${{LMCACHE_WHEEL_IMAGE}} AS lmcache_wheel\n"
        f"FROM {registry.host}/base/busybox@{base}\n"
        "ARG LMCACHE_WHEEL_SHA256\n"
        "COPY --from=lmcache_wheel / /tmp/lmcache-wheel/\n"
        f'RUN echo "${{LMCACHE_WHEEL_SHA256}}  /tmp/lmcache-wheel/{rocm_wheel.name}" | sha256sum -c -\n'
        "RUN ls /tmp/lmcache-wheel/ > /tmp/listing\n"
    )
    storage, environment = buildah_environment(registry, tmp_path)
    built = subprocess.run(
        ["buildah", *storage, "bud", "--isolation", "chroot", "--pull-always", "-t", "consumer", str(context)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "OK" in built.stdout + built.stderr  # sha256sum -c said so
    # the wheel image's layer holds exactly the wheel, nothing else: read inside the built
    # image by its busybox (`buildah mount` would need a `buildah unshare` session when the
    # tests do not run as root: buildah-mount(1))
    container = subprocess.run(
        ["buildah", *storage, "from", "--pull=false", "consumer"],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    ).stdout.strip()

    def inside(*command: str) -> str:
        return subprocess.run(
            ["buildah", *storage, "run", "--isolation", "chroot", container, "--", "/bin/busybox", *command],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        ).stdout

    assert inside("cat", "/tmp/listing").split() == [rocm_wheel.name]
    assert inside("sha256sum", f"/tmp/lmcache-wheel/{rocm_wheel.name}").split()[0] == sha256
    subprocess.run(["buildah", *storage, "rm", "--all"], env=environment, capture_output=True)
    subprocess.run(["buildah", *storage, "rmi", "--all", "--force"], env=environment, capture_output=True)


def buildah_environment(registry: Registry, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    return foreign_environment(registry.host, tmp_path)


def test_foreign_image_is_read_from_its_layer(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    """An image pushed the way ATOM's workflow does it today (docker build, gzip layers,
    com.amd.atom.lmcache.* labels, no wheelpin annotations)."""
    storage, environment = buildah_environment(registry, tmp_path)
    context = tmp_path / "foreign"
    context.mkdir()
    wheel = small_wheels[1]
    (context / wheel.name).write_bytes(wheel.read_bytes())
    (context / "Dockerfile").write_text(
        "FROM scratch\n"
        f"COPY {wheel.name} /\n"
        'LABEL com.amd.atom.lmcache.commit="3d3aa833bbf1" com.amd.atom.lmcache.version="0.1.1"\n'
    )
    ref = f"{registry.host}/atom/foreign:lmcache-v0.1.1"
    for command in (
        ["bud", "--isolation", "chroot", "--format", "docker", "-t", "foreign", str(context)],
        ["push", "--format", "docker", "foreign", f"docker://{ref}"],
    ):
        done = subprocess.run(
            ["buildah", *storage, *command], capture_output=True, text=True, env=environment, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
    shown = wheelpin("image", "show", ref, "--json", env=env)
    assert shown.code == 0, shown.stderr
    info = shown.json()
    assert info["metadata_from"] == "layers"
    assert info["labels"]["com.amd.atom.lmcache.commit"] == "3d3aa833bbf1"
    (found,) = info["wheels"]
    assert found["file"] == wheel.name
    assert found["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert found["requires_dist"] == ["numpy<=2.2.6", "msgspec"]
    assert info["bytes_fetched"] > 0
    subprocess.run(["buildah", *storage, "rmi", "--all", "--force"], env=environment, capture_output=True)


def test_pins_bump_reads_the_sha256_from_the_image(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    repo = tmp_path / "downstream"
    (repo / "docker").mkdir(parents=True)
    old = "0" * 64
    (repo / "docker/Dockerfile").write_text(
        f'ARG DEMO_WHEEL_IMAGE="{registry.host}/bump/demo-cache:demo-cache-v0.1.0-g05fc77a0@sha256:{old}"\n'
        f"ARG DEMO_WHEEL_SHA256={old}\nFROM ${{DEMO_WHEEL_IMAGE}} AS w\n"
    )
    (repo / "wheelpin.toml").write_text(f"""
[[component]]
name = "demo-cache"
upstream = {{ repo = "../upstream", branch = "main" }}
wheel = {{ distribution = "demo-cache" }}
build = {{ command = "true" }}
image = {{ repository = "{registry.host}/bump/demo-cache", tag = "demo-cache-v{{version_base}}-g{{sha8}}" }}
pins = [{{ file = "docker/Dockerfile", image_arg = "DEMO_WHEEL_IMAGE", sha256_arg = "DEMO_WHEEL_SHA256" }}]
""")
    tag = "demo-cache-v0.1.1-g3d3aa833"
    published = wheelpin(
        "image", "publish", str(small_wheels[1]), "--to", f"{registry.host}/bump/demo-cache:{tag}", "--json", env=env
    )
    assert published.code == 0, published.stderr
    digest = published.json()["digest"]
    bumped = wheelpin(
        "pins",
        "bump",
        "--repo",
        str(repo),
        "--component",
        "demo-cache",
        "--image",
        f"{registry.host}/bump/demo-cache:{tag}@{digest}",
        env=env,
    )
    assert bumped.code == 0, bumped.stderr
    text = (repo / "docker/Dockerfile").read_text()
    assert f"{tag}@{digest}" in text
    assert f"DEMO_WHEEL_SHA256={hashlib.sha256(small_wheels[1].read_bytes()).hexdigest()}" in text


def test_a_foreign_image_with_zstd_layers_is_read(
    registry: Registry, small_wheels: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    """The same foreign image, its layers recompressed with zstd by skopeo (as registries and
    builders that prefer zstd push them): its wheel is read from the zstd layer."""
    storage, environment = buildah_environment(registry, tmp_path)
    context = tmp_path / "foreign"
    context.mkdir()
    wheel = small_wheels[0]
    (context / wheel.name).write_bytes(wheel.read_bytes())
    (context / "Dockerfile").write_text(f"FROM scratch\nCOPY {wheel.name} /\n")
    gzipped, zstd = f"{registry.host}/atom/foreign:gzip", f"{registry.host}/atom/foreign:zstd"
    for command in (
        ["bud", "--isolation", "chroot", "-t", "foreign-zstd", str(context)],
        ["push", "foreign-zstd", f"docker://{gzipped}"],
    ):
        done = subprocess.run(
            ["buildah", *storage, *command], capture_output=True, text=True, env=environment, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
    layout = f"oci:{tmp_path / 'zstd-layout'}:foreign"  # recompressed there (a registry copy reuses the gzip blob)
    for source, target, flags in (
        (
            f"docker://{gzipped}",
            layout,
            ["--src-tls-verify=false", "--dest-compress-format", "zstd", "--dest-compress"],
        ),
        (layout, f"docker://{zstd}", ["--dest-tls-verify=false"]),
    ):
        copied = subprocess.run(
            ["skopeo", "copy", "--quiet", *flags, source, target],
            capture_output=True,
            text=True,
            env=environment,
            timeout=600,
        )
        assert copied.returncode == 0, copied.stderr[-2000:]
    manifest = json.loads(
        subprocess.run(
            ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{zstd}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    )
    assert [layer["mediaType"] for layer in manifest["layers"]] == ["application/vnd.oci.image.layer.v1.tar+zstd"]
    shown = wheelpin("image", "show", zstd, "--json", env=env)
    assert shown.code == 0, shown.stderr
    (found,) = shown.json()["wheels"]
    assert found["file"] == wheel.name and found["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()

"""Layers a hostile or broken registry serves: each is one sentence
(`LayerError`, an input error), never a crash and never unbounded memory. The bytes are
crafted here; the 500-layer image and a config that lies about its layers go through the
real registry."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Iterator

import pytest
import zstandard

from bot.adapters import layerstream
from bot.adapters.consumerread import ConsumerPlatforms, LayerCache, ResolvedConsumer, read_consumer, resolve_consumer
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.layerstream import LayerError, read_layer
from bot.adapters.registry import RegistryClient
from bot.core.errors import InputError
from bot.core.image.oci import CONFIG_TYPE, MANIFEST_TYPE, canonical_json, digest_of
from tests.fixtures.servers import Registry

SITE = "usr/lib/python3.12/site-packages"


def tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, b""


def chunks(data: bytes, size: int = 65536) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def read(blob: bytes, *, size: int | None = None, diff_id: str | None = None) -> object:
    return read_layer(chunks(blob), size=len(blob) if size is None else size, diff_id=diff_id, what="layer 1 of x")


GOOD = tar(
    file(f"{SITE}/numpy-2.3.5.dist-info/METADATA", b"Metadata-Version: 2.1\nName: numpy\nVersion: 2.3.5\n"),
    link("opt/rocm/lib/libamdhip64.so.7", "libamdhip64.so.7.2.4"),
    file(f"{SITE}/.wh.numpy-2.2.6.dist-info", b""),
    file("opt/rocm/lib/.wh..wh..opq", b""),
)


@pytest.mark.parametrize("compress", [lambda d: d, gzip.compress, zstandard.ZstdCompressor().compress])
def test_a_good_layer_in_each_compression(compress) -> None:  # type: ignore[no-untyped-def]
    blob = compress(GOOD)
    summary = read(blob, diff_id=digest_of(GOOD))
    assert list(summary.dists.values()) == [{"name": "numpy", "version": "2.3.5", "requires": []}]  # type: ignore[attr-defined]
    assert summary.whiteouts == [f"{SITE}/numpy-2.2.6.dist-info"] and summary.opaque == ["opt/rocm/lib"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("blob", "size", "diff_id", "says"),
    [
        (gzip.compress(GOOD)[:200], None, None, "layer 1 of x is not a readable tar"),  # truncated
        (b"\x1f\x8b" + b"\x00" * 300, None, None, "layer 1 of x is not a readable tar"),  # corrupt gzip
        (b"\x28\xb5\x2f\xfd" + b"\xff" * 300, None, None, "layer 1 of x is not a readable tar"),  # corrupt zstd
        (gzip.compress(GOOD), 100, None, "layer 1 of x is larger than 100 bytes"),  # bigger than it says
        (gzip.compress(GOOD), 10**6, None, "bytes, not the 1000000 its manifest says"),  # smaller than it says
        (gzip.compress(GOOD), None, "sha256:" + "0" * 64, "layer 1 of x's content does not match its diff_id"),
        (tar(file("../../etc/passwd", b"x")), None, None, "the entry '../../etc/passwd' leads out of the image's root"),
        (tar(link("usr/lib/libx.so", "../../../../etc/shadow", tarfile.LNKTYPE)), None, None, "leads out of the"),
        (
            tar(file(f"{SITE}/bomb-1.dist-info/METADATA", b"Name: bomb\nVersion: 1\n" + b"X" * (2 << 20))),
            None,
            None,
            "is 2097174 bytes, more than the 1048576 wheelpin reads of such a file",
        ),
        (
            tar(file(f"{SITE}/bad-1.dist-info/METADATA", b"Metadata-Version: 2.1\n")),
            None,
            None,
            "METADATA has no Name or no Version field",
        ),
        (
            tar(link("opt/rocm", "x" * 4097)),
            None,
            None,
            "the entry 'opt/rocm' has a link target longer than 4096 bytes (PATH_MAX)",
        ),
        (
            tar(file(f"{SITE}/torch-2.10.0.dist-info/RECORD", b'"torch/lib/libc10.so' + b"x" * 200_000 + b"\n")),
            None,
            None,
            "RECORD is not a readable RECORD",
        ),
    ],
)
def test_a_hostile_layer_is_one_sentence(blob: bytes, size: int | None, diff_id: str | None, says: str) -> None:
    with pytest.raises(LayerError) as raised:
        read(blob, size=size, diff_id=diff_id)
    assert says in raised.value.message and "\n" not in raised.value.message


def test_a_decompression_bomb_stops_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layerstream, "MIN_INFLATED", 1 << 20)
    bomb = gzip.compress(tar(file("big", b"\0" * (8 << 20))))  # 8 MiB from some 8 KiB
    with pytest.raises(LayerError, match="inflates past"):
        read(bomb)


def test_too_many_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layerstream, "MAX_MEMBERS", 10)
    with pytest.raises(LayerError, match="has more than 10 entries"):
        read(tar(*(file(f"f{i}", b"") for i in range(11))))


def test_a_layer_keeps_the_symlinks_that_may_be_folders_and_the_libraries_of_a_record() -> None:
    record = (
        b"torch/__init__.py,sha256=x,1\ntorch/lib/libc10.so,sha256=y,2\n"
        b"torch/lib/libtorch.so,,\n../../../bin/torchrun,,\n"
    )
    summary = read(
        tar(
            link("lib64", "usr/lib64"),
            link("opt/rocm", "rocm-7.2.4"),
            link("usr/include/x.h", "y.h"),
            link("usr/lib64/ld-linux-x86-64.so.2", "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
            file("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", b"\x7fELF"),
            file(f"{SITE}/torch-2.10.0.dist-info/RECORD", record),
        )
    )
    assert summary.links == {"lib64": "usr/lib64", "opt/rocm": "rocm-7.2.4"}  # type: ignore[attr-defined]
    assert summary.libraries == {  # type: ignore[attr-defined]
        "usr/lib64/ld-linux-x86-64.so.2": "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": "",
    }
    assert summary.records == {
        f"{SITE}/torch-2.10.0.dist-info/RECORD": [  # type: ignore[attr-defined]
            f"{SITE}/torch/lib/libc10.so",
            f"{SITE}/torch/lib/libtorch.so",
        ]
    }


@pytest.mark.parametrize(
    ("bound", "blob", "says"),
    [
        (
            "MAX_LINKS",
            tar(*(link(f"opt/l{i}", f"t{i}") for i in range(4))),
            "has more than 3 symlinks that may be folders, more than wheelpin keeps of one layer",
        ),
        (
            "MAX_RECORD_LIBRARIES",
            tar(file(f"{SITE}/t-1.dist-info/RECORD", b"".join(b"l%d.so,,\n" % i for i in range(4)))),
            "RECORD lists more than 3 shared objects",
        ),
        ("MAX_RECORD", tar(file(f"{SITE}/t-1.dist-info/RECORD", b"l.so,,\n")), "bytes, more than the 3 wheelpin reads"),
        (
            "MAX_TEXTS",
            tar(*(file(f"etc/ld.so.conf.d/{i}.conf", b"/opt\n") for i in range(4))),
            "has more than 3 ld.so.conf files",
        ),
    ],
)
def test_what_a_layer_summary_keeps_is_bounded(
    monkeypatch: pytest.MonkeyPatch, bound: str, blob: bytes, says: str
) -> None:
    monkeypatch.setattr(layerstream, bound, 3)
    with pytest.raises(LayerError) as raised:
        read(blob)
    assert says in raised.value.message and "\n" not in raised.value.message


def push(store: RegistryRepository, layers: list[bytes], diff_ids: list[str] | None = None, tag: str = "t") -> str:
    for blob in layers:
        store.put_blob(digest_of(blob), len(blob), lambda blob=blob: [blob])  # type: ignore[misc]
    config = canonical_json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": diff_ids or [digest_of(b) for b in layers]},
        }
    )
    store.put_blob(digest_of(config), len(config), lambda: [config])
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": CONFIG_TYPE, "digest": digest_of(config), "size": len(config)},
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": digest_of(b), "size": len(b)}
                for b in layers
            ],
        }
    )
    return store.put_manifest(tag, manifest, MANIFEST_TYPE)


def test_an_image_of_500_layers_is_refused_before_any_is_read(registry: Registry) -> None:
    store = RegistryRepository(RegistryClient(registry.host), "hostile/layers")
    layers = [tar(file(f"f{i}", str(i).encode())) for i in range(500)]
    digest = push(store, layers)
    before = store.traffic.requests
    with pytest.raises(InputError, match="has 500 layers, more than the 256 wheelpin reads"):
        read_consumer(store, digest, cache=LayerCache(None))
    assert store.traffic.requests - before <= 3  # the manifest, and no layer


def test_a_config_that_lies_about_its_layers(registry: Registry) -> None:
    store = RegistryRepository(RegistryClient(registry.host), "hostile/config")
    digest = push(store, [GOOD], diff_ids=["sha256:" + hashlib.sha256(b"other").hexdigest()], tag="lies")
    with pytest.raises(LayerError, match="content does not match its diff_id"):
        read_consumer(store, digest, cache=LayerCache(None))
    twice = push(store, [GOOD], diff_ids=[digest_of(GOOD)] * 2, tag="two")
    with pytest.raises(InputError, match="its config lists 2 layers, its manifest 1"):
        read_consumer(store, twice, cache=LayerCache(None))


@pytest.mark.parametrize("docker", [False, True])
def test_an_index_is_resolved_to_the_wheels_platform(registry: Registry, docker: bool) -> None:
    """A multi-arch index (OCI) or manifest list (Docker, its media types: Docker's
    "Image Manifest V2, Schema 2"): the linux/amd64 image is read, the arm64 one never."""
    from bot.core.image.oci import DOCKER_LIST_TYPE, DOCKER_MANIFEST_TYPE, INDEX_TYPE

    store = RegistryRepository(RegistryClient(registry.host), f"hostile/index-{int(docker)}")
    amd64 = tar(file(f"{SITE}/numpy-2.3.5.dist-info/METADATA", b"Metadata-Version: 2.1\nName: numpy\nVersion: 2.3.5\n"))
    arm64 = tar(file(f"{SITE}/numpy-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: numpy\nVersion: 1.0\n"))
    manifests = []
    for architecture, layer in (("arm64", gzip.compress(arm64)), ("amd64", gzip.compress(amd64))):
        store.put_blob(digest_of(layer), len(layer), lambda layer=layer: [layer])  # type: ignore[misc]
        raw = {"arm64": arm64, "amd64": amd64}[architecture]
        config = canonical_json(
            {
                "architecture": architecture,
                "os": "linux",
                "config": {},
                "rootfs": {"type": "layers", "diff_ids": [digest_of(raw)]},
            }
        )
        store.put_blob(digest_of(config), len(config), lambda config=config: [config])  # type: ignore[misc]
        media = DOCKER_MANIFEST_TYPE if docker else MANIFEST_TYPE
        manifest = canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": media,
                "config": {
                    "mediaType": "application/vnd.docker.container.image.v1+json" if docker else CONFIG_TYPE,
                    "digest": digest_of(config),
                    "size": len(config),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip"
                        if docker
                        else "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": digest_of(layer),
                        "size": len(layer),
                    }
                ],
            }
        )
        manifests.append(
            {
                "mediaType": media,
                "digest": store.put_manifest(architecture, manifest, media),
                "size": len(manifest),
                "platform": {"os": "linux", "architecture": architecture},
            }
        )
    index_type = DOCKER_LIST_TYPE if docker else INDEX_TYPE
    index = canonical_json({"schemaVersion": 2, "mediaType": index_type, "manifests": manifests})
    store.put_manifest("multi", index, index_type)
    image = read_consumer(store, "multi", cache=LayerCache(None))
    assert {n: d.version for n, d in image.files.installed().items()} == {"numpy": "2.3.5"}
    assert image.digest == manifests[1]["digest"]
    with pytest.raises(InputError, match="the image index has no linux/riscv64 image"):
        read_consumer(store, "multi", cache=LayerCache(None), architecture="riscv64")
    # before a build (no architecture known): several linux images are left to the build; an
    # index of one is resolved to it, an attestation manifest (platform unknown/unknown, as
    # BuildKit pushes one: tests/fixtures/foreignpush.py) being none; one of none is refused
    several = resolve_consumer(store, "multi", architecture=None)
    assert isinstance(several, ConsumerPlatforms) and several.platforms == ("arm64", "amd64"), several
    assert several.images == (manifests[0]["digest"], manifests[1]["digest"])  # each read by its digest
    attestation = {**manifests[1], "platform": {"os": "unknown", "architecture": "unknown"}}
    for tag, entries in (("arm64-only", [manifests[0], attestation]), ("no-linux", [attestation])):
        document = canonical_json({"schemaVersion": 2, "mediaType": index_type, "manifests": entries})
        store.put_manifest(tag, document, index_type)
    one = resolve_consumer(store, "arm64-only", architecture=None)
    assert isinstance(one, ResolvedConsumer) and (one.digest, one.platforms) == (manifests[0]["digest"], ("arm64",))
    with pytest.raises(InputError, match="the image index has no linux image"):
        resolve_consumer(store, "no-linux", architecture=None)

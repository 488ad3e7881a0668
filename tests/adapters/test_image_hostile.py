"""What a hostile registry serves as a consuming image: each class of
attack is refused in one sentence with bounded memory and time, whatever the sizes; the
sizes in bench/hostile_images.py are those it was reported at. Layers are crafted here
and served by an in-memory store (the reading code is the real one); the manifest cap and
the deadline go through the real client against a tiny HTTP server that drips."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import tarfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.adapters import boundedtar, consumerread, imagedocs, layerstream, readdeadline
from bot.adapters.consumerread import LayerCache, read_consumer
from bot.adapters.imageread import read_image
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.layerstream import LayerError, read_layer
from bot.adapters.registry import RegistryClient, RetryPolicy
from bot.core.errors import InputError, TransientError, WheelpinError
from bot.core.image.files import Hidden, LayerSummary, merge
from tests.fixtures.fakes import MemoryStore

SITE = "usr/lib/python3.12/site-packages"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tar(*names: str, data: dict[str, bytes] | None = None, format: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=format) as archive:
        for name in names:
            info = tarfile.TarInfo(name)
            body = (data or {}).get(name, b"")
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def pax_path_layer(size: int) -> bytes:
    """A zstd layer whose one pax `path` record is `size` bytes, compressed as it is made."""
    body = b" path=" + b"a" * size + b"\n"
    length = len(body) + len(str(len(body)))
    length += len(str(length)) - len(str(len(body)))
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, length
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as writer:
        writer.write(header.tobuf(tarfile.USTAR_FORMAT) + str(length).encode())
        for start in range(0, len(body), 1 << 20):
            writer.write(body[start : start + (1 << 20)])
        writer.write(b"\0" * (-length % 512) + tarfile.TarInfo("x").tobuf(tarfile.USTAR_FORMAT) + b"\0" * 1024)
    return out.getvalue()


def chunks(data: bytes, size: int = 65536) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def read(blob: bytes, *, size: int | None = None) -> LayerSummary:
    return read_layer(chunks(blob), size=len(blob) if size is None else size, diff_id=None, what="layer 1 of x")


def peak(function: Any) -> int:
    """The peak of Python's allocations while `function` runs, in bytes."""
    tracemalloc.start()
    try:
        function()
    except WheelpinError:
        pass
    _size, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


# -- names and tar headers ------------------------------------------------------------------


def test_a_huge_pax_path_is_refused_before_it_is_read() -> None:
    blob = pax_path_layer(32 << 20)  # 32 MiB of path from some KiB of zstd
    with pytest.raises(LayerError, match=r"has an extended tar header of \d+ bytes, more than the 65536"):
        read(blob)
    assert peak(lambda: read(blob)) < 8 << 20


@settings(max_examples=25, deadline=None)
@given(length=st.integers(min_value=4000, max_value=6000), link=st.booleans())
def test_a_path_longer_than_path_max_is_refused(length: int, link: bool) -> None:
    long = "usr/lib/" + "x" * (length - len("usr/lib/"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("usr/lib/libx.so" if link else long)
        if link:
            info.type, info.linkname = tarfile.LNKTYPE, long
        archive.addfile(info)
    if length > layerstream.PATH_MAX:
        with pytest.raises(LayerError, match=r"longer than 4096 bytes \(PATH_MAX\)"):
            read(buffer.getvalue())
    else:
        read(buffer.getvalue())


def test_a_run_of_extended_headers_is_bounded() -> None:
    header = tarfile.TarInfo("././@PaxHeader")
    record = b"20 comment=xxxxxxxx\n"
    header.type, header.size = tarfile.XHDTYPE, len(record)
    one = header.tobuf(tarfile.USTAR_FORMAT) + record + b"\0" * (512 - len(record))
    blob = one * (boundedtar.MAX_EXTENDED_RUN + 1) + tarfile.TarInfo("x").tobuf(tarfile.USTAR_FORMAT) + b"\0" * 1024
    with pytest.raises(LayerError, match="more than 8 extended tar headers in a row"):
        read(blob)


def test_a_gnu_sparse_entry_is_refused_and_the_hooks_are_there() -> None:
    assert hasattr(tarfile.TarInfo, "_proc_member") and hasattr(tarfile.TarInfo, "_proc_gnusparse_10")
    info = tarfile.TarInfo("s")
    info.type = tarfile.GNUTYPE_SPARSE
    with pytest.raises(LayerError, match="has a GNU sparse entry"):
        read(info.tobuf(tarfile.GNU_FORMAT) + b"\0" * 1024)


def test_the_headers_of_the_entries_read_are_not_kept() -> None:
    blob = zstandard.ZstdCompressor().compress(tar(*(f"f/{i}" for i in range(60_000)), format=tarfile.USTAR_FORMAT))
    assert read(blob).members == 60_000
    assert peak(lambda: read(blob)) < 8 << 20  # 60,000 TarInfo kept are some 30 MB


# -- what a summary keeps ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bound", "value", "blob", "says"),
    [
        ("MAX_KEPT", 3, tar(*(f"usr/lib/l{i}.so" for i in range(4))), "names more than 3 libraries"),
        (
            "MAX_KEPT_BYTES",
            100,
            tar(*(f"usr/lib/{'d' * 40}/l{i}.so" for i in range(3))),
            "or more than 100 bytes of them",
        ),
        ("MAX_KEPT", 3, tar(*(f"usr/.wh.l{i}" for i in range(4))), "names more than 3 libraries"),
        (
            "MAX_METADATA_TOTAL",
            100,
            tar(
                *(f"{SITE}/d{i}-1.dist-info/METADATA" for i in range(3)),
                data={
                    f"{SITE}/d{i}-1.dist-info/METADATA": b"Name: d\nVersion: 1\n" + b"Summary: x\n" * 4
                    for i in range(3)
                },
            ),
            "holds more than 100 bytes of METADATA",
        ),
        (
            "MAX_REQUIRES",
            2,
            tar(
                f"{SITE}/d-1.dist-info/METADATA",
                data={f"{SITE}/d-1.dist-info/METADATA": b"Name: d\nVersion: 1\n" + b"Requires-Dist: a\n" * 3},
            ),
            "lists 3 requirements, more than the 2",
        ),
    ],
)
def test_what_a_summary_keeps_is_bounded_in_all(
    monkeypatch: pytest.MonkeyPatch, bound: str, value: int, blob: bytes, says: str
) -> None:
    monkeypatch.setattr(layerstream, bound, value)
    with pytest.raises(LayerError) as raised:
        read(blob)
    assert says in raised.value.message and "\n" not in raised.value.message


def test_the_weight_of_a_summary_is_what_the_reader_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = tar(
        "usr/lib/l.so",
        "usr/bin/python3.12",
        "a/.wh.b",
        f"{SITE}/d-1.dist-info/METADATA",
        data={f"{SITE}/d-1.dist-info/METADATA": b"Name: d\nVersion: 1\nRequires-Dist: a\n"},
    )
    entries, size = read(blob).weight()
    monkeypatch.setattr(layerstream, "MAX_KEPT", entries)
    monkeypatch.setattr(layerstream, "MAX_KEPT_BYTES", size)
    read(blob)
    monkeypatch.setattr(layerstream, "MAX_KEPT", entries - 1)
    with pytest.raises(LayerError):
        read(blob)


# -- inflation ------------------------------------------------------------------------------


def test_inflation_is_bounded_by_the_bytes_received_not_the_size_claimed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layerstream, "MIN_INFLATED", 1 << 20)
    bomb = gzip.compress(bytes(64 << 20))  # zeros: an empty tar that goes on
    with pytest.raises(LayerError, match="inflates past"):
        read(bomb, size=10**10)  # the claim would allow 2 TB


def test_a_declared_size_past_the_cap_is_refused_before_reading() -> None:
    taken: list[bytes] = []
    with pytest.raises(LayerError, match="is said to be 10000000000000000 bytes"):
        read_layer(iter(taken), size=10**16, diff_id=None, what="layer 1 of x")


# -- whiteouts ------------------------------------------------------------------------------

_PART = st.sampled_from(["a", "b", "lib", "x.so", "a b"])
_PATH = st.lists(_PART, min_size=1, max_size=5).map("/".join)


@settings(max_examples=200, deadline=None)
@given(hidden=st.lists(st.one_of(_PATH, st.just("")), max_size=8), paths=st.lists(_PATH, max_size=20))
def test_hidden_is_each_path_or_a_folder_above_it(hidden: list[str], paths: list[str]) -> None:
    def naive(path: str) -> bool:
        parts = path.split("/")
        return "" in hidden or any("/".join(parts[:n]) in hidden for n in range(1, len(parts) + 1))

    gone = Hidden(hidden)
    assert [p in gone for p in paths] == [naive(p) for p in paths]


def test_whiteouts_apply_in_time_near_linear_in_the_paths() -> None:
    deep = "/".join(["a"] * 900)
    below = LayerSummary(libraries={f"{deep}/lib{i}.so": "" for i in range(10_000)})
    above = LayerSummary(whiteouts=[f"{deep}/b/lib{i}.so" for i in range(10_000)] + [f"{deep}/lib7.so"])
    started = time.perf_counter()
    files = merge([below, above], {})
    assert time.perf_counter() - started < 5  # ancestor by ancestor: over a minute
    assert len(files.libraries) == 9_999


# -- documents: shape, size ----------------------------------------------------------------


def image(
    store: MemoryStore,
    *,
    config: Any = None,
    manifest: Any = None,
    layers: list[bytes] = (),  # type: ignore[assignment]
    config_bytes: bytes | None = None,
) -> str:
    for blob in layers:
        store.blobs[digest(blob)] = blob
    if config_bytes is None:
        config_bytes = json.dumps(
            config
            if config is not None
            else {"rootfs": {"type": "layers", "diff_ids": [digest(gzip.decompress(b)) for b in layers]}}
        ).encode()
    store.blobs[digest(config_bytes)] = config_bytes
    document = (
        manifest
        if manifest is not None
        else {
            "schemaVersion": 2,
            "config": {"digest": digest(config_bytes), "size": len(config_bytes)},
            "layers": [{"digest": digest(b), "size": len(b)} for b in layers],
        }
    )
    data = document if isinstance(document, bytes) else json.dumps(document).encode()
    return store.put_manifest("t", data, "")


CONFIG = {"digest": "sha256:" + "c" * 64, "size": 2}


@pytest.mark.parametrize(
    ("manifest", "config", "says"),
    [
        (None, {"rootfs": {"diff_ids": 5}}, "diff_ids is not an array"),
        (None, {"rootfs": "x"}, "rootfs is not an object"),
        (None, {"rootfs": {"diff_ids": [5]}}, "diff_ids are not all strings"),
        ({"config": {"digest": CONFIG["digest"], "size": "12"}}, None, "has a size that is not a whole number"),
        (
            b'{"config": {"digest": "sha256:' + b"c" * 64 + b'", "size": Infinity}}',
            None,
            "has a size that is not a whole number",
        ),
        ({"config": CONFIG, "layers": "x"}, None, "layers is not an array"),
        ({"config": CONFIG, "layers": [5]}, None, "layer 1 is not a descriptor"),
        ({"manifests": [5]}, None, "manifest 1 is not a descriptor"),
        ({"manifests": [{"digest": CONFIG["digest"], "platform": "linux"}]}, None, "platform is not an object"),
        (b"[" * 100_000 + b"]" * 100_000, None, "is not JSON"),
        ({"config": {"digest": "sha256:" + "c" * 64, "size": 10**30}}, None, "has a size that is not a whole number"),
    ],
)
def test_a_type_confused_document_is_one_sentence_for_both_readers(manifest: Any, config: Any, says: str) -> None:
    for reader in (lambda s, r: read_consumer(s, r, cache=LayerCache(None)), read_image):
        store = MemoryStore("hostile")
        reference = image(store, manifest=manifest, config=config)
        if config is not None and reader is read_image:
            continue  # a wheel image reads no rootfs
        with pytest.raises(InputError) as raised:
            reader(store, reference)
        assert says in raised.value.message and "\n" not in raised.value.message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(["config", "layers", "manifests", "rootfs", "diff_ids", "size", "platform"]), value=_JSON)
def test_any_value_in_any_field_is_read_or_one_sentence(field: str, value: Any) -> None:
    layer = gzip.compress(tar("usr/lib/l.so"))
    config: dict[str, Any] = {"rootfs": {"diff_ids": [digest(gzip.decompress(layer))]}}
    if field == "rootfs":
        config["rootfs"] = value
    elif field == "diff_ids":
        config["rootfs"]["diff_ids"] = value
    config_bytes = json.dumps(config).encode()
    manifest: dict[str, Any] = {
        "config": {"digest": digest(config_bytes), "size": len(config_bytes)},
        "layers": [{"digest": digest(layer), "size": len(layer)}],
    }
    if field in ("config", "layers"):
        manifest[field] = value
    elif field == "size":
        manifest["layers"][0]["size"] = value
    elif field in ("manifests", "platform"):
        manifest = {"manifests": value if field == "manifests" else [{"digest": digest(b"x"), "platform": value}]}
    for reader in (lambda s, r: read_consumer(s, r, cache=LayerCache(None)), read_image):
        store = MemoryStore("hostile")
        try:
            reader(store, image(store, manifest=manifest, config_bytes=config_bytes, layers=[layer]))
        except WheelpinError as exc:
            assert (
                "\n" not in exc.message and exc.exit_code != 1 or "no such manifest (404)" in exc.message
            )  # an index entry naming no manifest
        store.blobs.clear()


def test_a_config_larger_than_its_manifest_says_is_not_read_past_its_size() -> None:
    store = MemoryStore("hostile")
    sent: list[int] = []
    config_digest = "sha256:" + "c" * 64

    def endless() -> Iterator[bytes]:
        while True:
            sent.append(1)
            yield b" " * (1 << 20)

    store.get_blob = lambda d: endless() if d == config_digest else MemoryStore.get_blob(store, d)  # type: ignore[method-assign]
    reference = image(store, manifest={"config": {"digest": config_digest, "size": 500}, "layers": []})
    for reader in (lambda s, r: read_consumer(s, r, cache=LayerCache(None)), read_image):
        with pytest.raises(InputError, match="config is larger than the 500 bytes its manifest says"):
            reader(store, reference)
    assert len(sent) == 2  # one chunk each


def test_a_config_claimed_past_the_cap_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore("hostile")
    reference = image(store, manifest={"config": {"digest": "sha256:" + "c" * 64, "size": imagedocs.MAX_CONFIG + 1}})
    with pytest.raises(InputError, match="its config is said to be 4194305 bytes, more than the 4194304"):
        read_consumer(store, reference, cache=LayerCache(None))


# -- the layer cache ------------------------------------------------------------------------


def test_a_warm_cache_refuses_a_wrong_claim_as_a_cold_read_does(tmp_path: Path) -> None:
    layer = gzip.compress(tar("usr/lib/l.so"))
    cache = LayerCache(tmp_path)
    store = MemoryStore("hostile")
    read_consumer(store, image(store, layers=[layer]), cache=cache)
    assert len(list(tmp_path.iterdir())) == 1
    for manifest, config, says in (
        ({"layers": [{"digest": digest(layer), "size": len(layer) + 1}]}, None, "not the"),
        (None, {"rootfs": {"diff_ids": ["sha256:" + "0" * 64]}}, "does not match its diff_id"),
    ):
        config_bytes = json.dumps(config or {"rootfs": {"diff_ids": [digest(gzip.decompress(layer))]}}).encode()
        document = {
            "config": {"digest": digest(config_bytes), "size": len(config_bytes)},
            "layers": [{"digest": digest(layer), "size": len(layer)}],
            **(manifest or {}),
        }
        with pytest.raises(LayerError, match=says):
            read_consumer(
                store, image(store, manifest=document, config_bytes=config_bytes, layers=[layer]), cache=cache
            )


@pytest.mark.parametrize(
    ("bound", "says"),
    [
        ("MAX_IMAGE_KEPT", "layers name more than 5 libraries"),
        ("MAX_IMAGE_MEMBERS", "layer 2 of .* has more than 2 entries, more than the layers below leave"),
    ],
)
def test_an_image_is_bounded_in_all(monkeypatch: pytest.MonkeyPatch, bound: str, says: str) -> None:
    monkeypatch.setattr(consumerread, bound, 5)
    layers = [gzip.compress(tar(*(f"usr/lib/{n}{i}.so" for i in range(3)))) for n in "ab"]
    store = MemoryStore("hostile")
    with pytest.raises(InputError, match=says):
        read_consumer(store, image(store, layers=layers), cache=LayerCache(None))


# -- the registry: manifest cap, one deadline ----------------------------------------------


class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served: dict[str, bytes] = {}
    drip: tuple[int, float] | None = None

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        data = self.served.get(self.path.rsplit("/", 1)[1])
        self.send_response(200 if data is not None else 404)
        self.send_header("Content-Length", str(len(data or b"")))
        self.end_headers()
        try:
            step, wait = self.drip or (len(data or b"") or 1, 0.0)
            for start in range(0, len(data or b""), step):
                self.wfile.write((data or b"")[start : start + step])
                self.wfile.flush()
                time.sleep(wait)
        except OSError:
            pass


@pytest.fixture
def hostile() -> Iterator[type[Hostile]]:
    handler = type("Handler", (Hostile,), {"served": {}, "drip": None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    handler.host = f"127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


def test_a_manifest_past_four_mib_is_refused_unread(hostile: type[Hostile]) -> None:
    manifest = json.dumps({"annotations": {"x": "y" * (5 << 20)}}).encode()
    hostile.served[digest(manifest)] = manifest
    client = RegistryClient(hostile.host)  # type: ignore[attr-defined]
    with pytest.raises(InputError, match="is larger than the 4194304 bytes wheelpin reads of one"):
        read_consumer(RegistryRepository(client, "h/i"), digest(manifest), cache=LayerCache(None))
    assert client.traffic.bytes_downloaded < (4 << 20) + (2 << 20)


def test_a_registry_that_drips_is_stopped_by_one_deadline(
    hostile: type[Hostile], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readdeadline, "GRACE_SECONDS", 1.0)
    layer = gzip.compress(tar("usr/lib/l.so", data={"usr/lib/l.so": bytes(range(256)) * 400}))
    config = json.dumps({"rootfs": {"diff_ids": [digest(gzip.decompress(layer))]}}).encode()
    manifest = json.dumps(
        {
            "config": {"digest": digest(config), "size": len(config)},
            "layers": [{"digest": digest(layer), "size": len(layer)}],
        }
    ).encode()
    hostile.served.update({digest(layer): layer, digest(config): config, digest(manifest): manifest})
    hostile.drip = (64, 0.2)  # 320 bytes a second: never a read timeout
    store = RegistryRepository(RegistryClient(hostile.host, retry=RetryPolicy(attempts=1)), "h/i")  # type: ignore[attr-defined]
    started = time.perf_counter()
    with pytest.raises(TransientError, match="slower than the 256 KiB/s wheelpin waits for"):
        read_consumer(store, digest(manifest), cache=LayerCache(None))
    assert time.perf_counter() - started < 5
    with pytest.raises(TransientError, match="slower than"):
        read_image(store, digest(manifest))


def test_a_wheel_image_layer_has_its_tar_headers_bounded_too() -> None:
    layer = pax_path_layer(1 << 20)
    store = MemoryStore("hostile")
    store.blobs[digest(layer)] = layer
    config = b'{"config": {}}'
    reference = image(
        store,
        manifest={
            "config": {"digest": digest(config), "size": len(config)},
            "layers": [{"digest": digest(layer), "size": len(layer)}],
        },
        config_bytes=config,
    )
    with pytest.raises(InputError, match="has an extended tar header of 1048"):
        read_image(store, reference)


def wheel_image(store: MemoryStore, layer: bytes, *, claimed: int | None = None) -> str:
    store.blobs[digest(layer)] = layer
    config = b'{"config": {}}'
    return image(
        store,
        manifest={
            "config": {"digest": digest(config), "size": len(config)},
            "layers": [{"digest": digest(layer), "size": len(layer) if claimed is None else claimed}],
        },
        config_bytes=config,
    )


def test_a_wheel_image_layer_inflates_no_further_than_a_consuming_images(monkeypatch: pytest.MonkeyPatch) -> None:
    """A foreign wheel image's layer is read through the same bounds as a consuming image's:
    its inflation by the bytes received (not spooled to disk without end), its blob by the
    size its manifest claims."""
    monkeypatch.setattr(layerstream, "MIN_INFLATED", 1 << 20)
    monkeypatch.setattr(layerstream, "MAX_RATIO", 4)
    bomb = zstandard.ZstdCompressor().compress(tar("bomb.whl", data={"bomb.whl": b"\0" * (8 << 20)}))
    store = MemoryStore("hostile")
    with pytest.raises(InputError, match="inflates past"):
        read_image(store, wheel_image(store, bomb))
    small = tar("a.whl", data={"a.whl": b"PK" + b"\0" * 4096})
    with pytest.raises(InputError, match="is larger than 100 bytes"):
        read_image(store, wheel_image(store, small, claimed=100))


def test_a_wheel_image_layer_holds_a_bounded_number_of_wheels(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from bot.adapters import imageread

    monkeypatch.setattr(imageread, "MAX_WHEELS", 2)
    layer = tar("a.whl", "b.whl", "c.whl")
    store = MemoryStore("hostile")
    info = imageread.ImageInfo(
        "hostile", "sha256:0", {}, {}, (), "layers", 0, ({"digest": digest(layer), "size": len(layer)},)
    )
    store.blobs[digest(layer)] = layer
    with pytest.raises(InputError, match="holds more than 2 wheels"):
        imageread.extract_wheels(store, info, tmp_path)

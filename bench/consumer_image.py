"""Benchmark: reading a multi-GB consuming image from its layers.

Run from the project root:  python bench/consumer_image.py [--gb 3] [--layers 24] [--dists 3000]
Starts Debian's docker-registry on a loopback port and pushes an image built here: `--layers`
layers (half gzip, half zstd) holding `--gb` GB of file data (compressible about 2:1, as
binaries are), thousands of dist-info folders, shared libraries, and later layers that
upgrade packages (whiteouts). Then, each in a fresh process, so that its peak RSS is its
own: the first read of the image (every layer streamed); a second read after one new
layer is pushed on top (the others come from the layer cache). Side by side: `gzip -dc |
tar t` of the gzip layers and a zstd stream piped to `tar t` for the zstd ones, the bare
cost of decompressing and walking the same bytes.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import io
import json
import random
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.consumerread import LayerCache, read_consumer  # noqa: E402
from bot.adapters.imagestore import RegistryRepository  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.adapters.registry import RegistryClient  # noqa: E402
from bot.core.image.oci import CONFIG_TYPE, MANIFEST_TYPE, canonical_json  # noqa: E402
from tests.fixtures.servers import Registry  # noqa: E402

SITE = "usr/lib/python3.12/site-packages"
GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
BLOCK = 1 << 20


class Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to `target`."""

    def __init__(self, target: io.BufferedWriter) -> None:
        import hashlib

        self.target, self.hash, self.size = target, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[no-untyped-def, override]
        self.hash.update(data)
        self.size += len(data)
        self.target.write(data)
        return len(data)


def payload(rng: random.Random, size: int) -> io.BytesIO:
    """`size` bytes that compress about 2:1: random halves of blocks, zero halves."""
    out = io.BytesIO()
    while out.tell() < size:
        half = min(BLOCK // 2, size - out.tell())
        out.write(rng.randbytes(half))
        out.write(bytes(min(BLOCK // 2, size - out.tell())))
    out.seek(0)
    return out


def make_layer(
    folder: Path, index: int, *, data_bytes: int, dists: int, upgrades: list[str], compression: str, rng: random.Random
) -> tuple[Path, str, str, int]:
    """One layer on disk: its path, media type, diff_id and size."""
    path = folder / f"layer{index}"
    with path.open("wb") as raw:
        compressor: io.BufferedIOBase | zstandard.ZstdCompressionWriter
        if compression == "gzip":
            compressor = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0)
        else:
            compressor = zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False)
        hashing = Hashing(compressor)  # type: ignore[arg-type]
        with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as archive:
            for name in upgrades:  # a later layer replaces a package: whiteout, then the new one
                gone = tarfile.TarInfo(f"{SITE}/.wh.{name}-1.0.dist-info")
                archive.addfile(gone)
            for number in range(dists):
                name = upgrades[number] if number < len(upgrades) else f"pkg{index}x{number}"
                version = "2.0" if number < len(upgrades) else "1.0"
                text = (
                    f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                    f"Requires-Dist: numpy>=1.26\nRequires-Dist: requests\n"
                ).encode()
                info = tarfile.TarInfo(f"{SITE}/{name}-{version}.dist-info/METADATA")
                info.size = len(text)
                archive.addfile(info, io.BytesIO(text))
            for number in range(20):
                info = tarfile.TarInfo(f"usr/lib/x86_64-linux-gnu/libx{index}_{number}.so.1")
                info.size = 4096
                archive.addfile(info, io.BytesIO(rng.randbytes(4096)))
            left, part = data_bytes, 0
            while left > 0:
                size = min(left, 64 << 20)
                info = tarfile.TarInfo(f"opt/data{index}/blob{part}.bin")
                info.size = size
                archive.addfile(info, payload(rng, size))
                left -= size
                part += 1
        compressor.close()
    return path, GZIP if compression == "gzip" else ZSTD, "sha256:" + hashing.hash.hexdigest(), path.stat().st_size


def push_image(store: RegistryRepository, layers: list[tuple[Path, str, str, int]], tag: str) -> str:
    import hashlib

    for path, _media, _diff, size in layers:
        digest = "sha256:" + hashlib.file_digest(path.open("rb"), "sha256").hexdigest()
        if not store.has_blob(digest):
            store.put_blob(digest, size, lambda path=path: iter(functools.partial(path.open("rb").read, BLOCK), b""))
    digests = ["sha256:" + hashlib.file_digest(p.open("rb"), "sha256").hexdigest() for p, *_ in layers]
    config = canonical_json(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": ["PATH=/usr/bin", "LD_LIBRARY_PATH=/opt/rocm/lib"]},
            "rootfs": {"type": "layers", "diff_ids": [diff for _p, _m, diff, _s in layers]},
        }
    )
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    store.put_blob(config_digest, len(config), lambda: [config])
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": len(config)},
            "layers": [
                {"mediaType": media, "digest": digest, "size": size}
                for (_p, media, _d, size), digest in zip(layers, digests, strict=True)
            ],
        }
    )
    return store.put_manifest(tag, manifest, MANIFEST_TYPE)


def read_in_child(host: str, repository: str, digest: str, cache: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--read", host, repository, digest, str(cache)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def child(host: str, repository: str, digest: str, cache: str) -> None:
    configure_logging(level="warning")
    started = time.perf_counter()
    image = read_consumer(RegistryRepository(RegistryClient(host), repository), digest, cache=LayerCache(Path(cache)))
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "layers_read": image.layers_read,
                "layers_cached": image.layers_cached,
                "dists": len(image.files.installed()),
                "libraries": len(image.files.libraries),
            }
        )
    )


def bare(layers: list[tuple[Path, str, str, int]]) -> float:
    """`gzip -dc | tar t` for the gzip layers; a zstd stream into `tar t` for the others."""
    started = time.perf_counter()
    for path, media, _diff, _size in layers:
        if media == GZIP:
            subprocess.run(f"gzip -dc {path} | tar t > /dev/null", shell=True, check=True)
        else:
            tar = subprocess.Popen(["tar", "t"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            assert tar.stdin is not None
            with path.open("rb") as source:
                zstandard.ZstdDecompressor().copy_stream(source, tar.stdin)
            tar.stdin.close()
            tar.wait()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=3.0)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--dists", type=int, default=3000)
    parser.add_argument("--read", nargs=4, metavar=("HOST", "REPOSITORY", "DIGEST", "CACHE"))
    args = parser.parse_args()
    if args.read:
        child(*args.read)
        return
    configure_logging(level="warning")
    rng = random.Random(16)
    with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
        folder = Path(scratch)
        started = time.perf_counter()
        per_layer = int(args.gb * (1 << 30) / args.layers)
        layers = [
            make_layer(
                folder,
                index,
                data_bytes=per_layer,
                dists=args.dists // args.layers,
                upgrades=[f"pkg{index - 1}x{n}" for n in range(5)] if index else [],
                compression="gzip" if index % 2 == 0 else "zstd",
                rng=rng,
            )
            for index in range(args.layers)
        ]
        compressed = sum(size for *_rest, size in layers)
        print(
            f"made {args.layers} layers: {args.gb:.1f} GB of file data, {compressed / 1e9:.2f} GB compressed, "
            f"{args.dists} dist-infos, in {time.perf_counter() - started:.0f} s"
        )
        registry = Registry(folder / "registry")
        try:
            store = RegistryRepository(RegistryClient(registry.host), "bench/consumer")
            first = push_image(store, layers, "first")
            extra = make_layer(
                folder, args.layers, data_bytes=64 << 20, dists=10, upgrades=["pkg0x5"], compression="gzip", rng=rng
            )
            second = push_image(store, [*layers, extra], "second")
            cache = folder / "layer-cache"
            cold = read_in_child(registry.host, "bench/consumer", first, cache)
            warm = read_in_child(registry.host, "bench/consumer", second, cache)
            again = read_in_child(registry.host, "bench/consumer", second, cache)
        finally:
            registry.stop()
        baseline = bare(layers)
        print(
            f"first read:  {cold['seconds']:6.1f} s, {compressed / 1e6 / cold['seconds']:6.0f} MB/s compressed, "
            f"peak RSS {cold['peak_rss_mb']:.0f} MB ({cold['layers_read']:.0f} layers streamed, "
            f"{cold['dists']:.0f} distributions, {cold['libraries']:.0f} libraries)"
        )
        print(
            f"bare gzip -dc | tar t (and zstd | tar t): {baseline:6.1f} s for the same layers "
            f"({cold['seconds'] / baseline:.2f}x)"
        )
        print(
            f"one new layer on top: {warm['seconds']:6.2f} s, peak RSS {warm['peak_rss_mb']:.0f} MB "
            f"({warm['layers_read']:.0f} streamed, {warm['layers_cached']:.0f} from the cache)"
        )
        print(f"read again, all cached: {again['seconds']:6.2f} s, peak RSS {again['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()

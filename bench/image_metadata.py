"""Benchmark: what it costs to learn a pinned image's Requires-Dist, and to publish twice.

Run from the project root:  python bench/image_metadata.py [--big-mb 400]
Starts Debian's docker-registry on a loopback port, publishes a small wheel and a big
one (400 MB by default), and prints, for each: bytes fetched and time to read the
Requires-Dist from the wheelpin image (annotations only) and from a "foreign" image
holding the same layer without annotations (streaming the layer, what `docker pull` +
unzip costs); and the bytes a second publish of the same wheel uploads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.imageread import read_image  # noqa: E402
from bot.adapters.imagestore import RegistryRepository  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.adapters.publisher import publish  # noqa: E402
from bot.adapters.registry import RegistryClient  # noqa: E402
from bot.core.image.oci import MANIFEST_TYPE, canonical_json, digest_of  # noqa: E402
from bot.core.wheel.report import inspect_wheel  # noqa: E402
from tests.fixtures.servers import Registry  # noqa: E402
from tests.fixtures.wheels import build_wheel  # noqa: E402


def big_wheel(folder: Path, megabytes: int) -> Path:
    """A wheel with one incompressible member of `megabytes` MB, written in chunks."""
    path = build_wheel(
        folder,
        name="bigwheel",
        version="1.0+g05fc77a0",
        files={"bigwheel/__init__.py": b""},
        requires_dist=["numpy<=2.2.6", "torch>=2.9"],
    )
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_STORED) as archive:
        with archive.open("bigwheel/blob.bin", "w", force_zip64=True) as member:
            for _ in range(megabytes):
                member.write(os.urandom(1 << 20))
    return path  # RECORD does not list blob.bin: fine for this benchmark's publish


def store(registry: Registry, repository: str) -> RegistryRepository:
    return RegistryRepository(RegistryClient(registry.host), repository)  # no cache: count every byte


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big-mb", type=int, default=400)
    args = parser.parse_args()
    configure_logging(level="warning")
    with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
        folder = Path(scratch)
        registry = Registry(folder / "registry")
        try:
            small = build_wheel(
                folder,
                name="smallwheel",
                version="1.0+g05fc77a0",
                files={"smallwheel/__init__.py": b"x = 1\n"},
                requires_dist=["numpy<=2.2.6"],
            )
            big = big_wheel(folder, args.big_mb)
            for wheel in (small, big):
                run(registry, wheel)
        finally:
            registry.stop()


def run(registry: Registry, wheel: Path) -> None:
    size_mb = wheel.stat().st_size / 1e6
    report = inspect_wheel(wheel)
    target = store(registry, f"bench/{report.name}")
    started = time.perf_counter()
    first = publish(target, "v1", [wheel], [report])
    publish_seconds = time.perf_counter() - started
    second = publish(store(registry, f"bench/{report.name}"), "v1", [wheel], [report])
    # a foreign image: the same layer and a config, but no wheelpin annotations
    original = json.loads(target.get_manifest(first.digest))
    config = canonical_json(
        {
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [original["layers"][0]["digest"]]},
        }
    )
    target.put_blob(digest_of(config), len(config), lambda: [config])
    manifest = canonical_json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": digest_of(config),
                "size": len(config),
            },
            "layers": original["layers"],
        }
    )
    target.put_manifest("foreign", manifest, MANIFEST_TYPE)
    print(f"{wheel.name}: {size_mb:.1f} MB")
    print(
        f"  publish: {publish_seconds:.2f} s, {first.bytes_uploaded / 1e6:.1f} MB uploaded; "
        f"second publish of the same wheel: {second.status}, {second.bytes_uploaded} bytes uploaded"
    )
    for label, reference in (("wheelpin image (annotations)", "v1"), ("foreign image (layer)", "foreign")):
        reader = store(registry, f"bench/{report.name}")
        started = time.perf_counter()
        info = read_image(reader, reference)
        seconds = time.perf_counter() - started
        fetched = reader.traffic.bytes_downloaded
        assert info.wheels[0].requires_dist == report.requires_dist
        print(
            f"  {label:30s} {fetched / 1024:10.1f} KiB fetched in {seconds:6.3f} s ({reader.traffic.requests} requests)"
        )


if __name__ == "__main__":
    main()

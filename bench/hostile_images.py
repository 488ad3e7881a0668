"""Benchmark: reading a consuming image that a hostile registry serves.
Each class of attack reported against the consumer-image reader, at about the size it
was reported at, must end in under 60 s with a peak RSS under 300 MB, refused in one
sentence (exit 2; 4 for a registry too slow to wait for).

Run from the project root:  python bench/hostile_images.py [--scale 1.0] [--only NAME]
Each case's blobs are built on disk by one child process; a second child serves them as
a registry over loopback HTTP (a hostile one: it serves what it is given, checks nothing,
and can drip); a third reads the image with the real client and reader
(`read_consumer` through `RegistryClient`), its peak RSS from wait4. A reader still
running after `--timeout` seconds is killed; `--memory` caps its address space (so that a
run against an unbounded reader does not take the machine down).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECONDS, RSS = 60.0, 300 << 20
SITE = "usr/lib/python3.12/site-packages"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
REPO = "hostile/image"


# -- building: blobs in FOLDER/blobs, manifests in FOLDER/manifests, what to read in FOLDER/ref


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Layer:
    """A zstd-compressed tar written as a stream: its file, diff_id and size."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / f"layer.{time.monotonic_ns()}"
        self._file = self.path.open("wb")
        self._zstd = zstandard.ZstdCompressor(level=1).stream_writer(self._file, closefd=False)
        self._tar = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self._tar.update(data)
        self._zstd.write(data)

    def member(self, info: tarfile.TarInfo, data: bytes = b"") -> None:
        info.size = len(data)
        self.write(info.tobuf(tarfile.PAX_FORMAT))
        if data:
            self.write(data + b"\0" * (-len(data) % 512))

    def close(self) -> tuple[Path, str]:
        self.write(b"\0" * 1024)
        self._zstd.close()
        self._file.close()
        return self.path, "sha256:" + self._tar.hexdigest()


def _blob(folder: Path, source: Path | bytes) -> tuple[str, int]:
    data = source if isinstance(source, bytes) else None
    hashed = hashlib.sha256(data) if data is not None else hashlib.file_digest(open(source, "rb"), "sha256")
    digest = "sha256:" + hashed.hexdigest()
    target = folder / "blobs" / digest
    target.parent.mkdir(exist_ok=True)
    if data is not None:
        target.write_bytes(data)
    else:
        Path(source).rename(target)
    return digest, target.stat().st_size


def _image(
    folder: Path,
    layers: list[tuple[Path, str]],
    *,
    config: bytes | None = None,
    config_claim: tuple[str, int] | None = None,
    sizes: list[int] | None = None,
    extra: dict[str, object] | None = None,
) -> str:
    """An image of `layers` (path, diff_id): its manifest's digest, written to FOLDER/ref."""
    entries = []
    diff_ids = []
    for index, (path, diff_id) in enumerate(layers):
        digest, size = _blob(folder, path)
        entries.append({"mediaType": LAYER, "digest": digest, "size": sizes[index] if sizes else size})
        diff_ids.append(diff_id)
    if config_claim is None:
        config = (
            config
            or json.dumps(
                {
                    "architecture": "amd64",
                    "os": "linux",
                    "config": {},
                    "rootfs": {"type": "layers", "diff_ids": diff_ids},
                }
            ).encode()
        )
        config_claim = _blob(folder, config)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            **(extra or {}),
            "config": {"mediaType": CONFIG, "digest": config_claim[0], "size": config_claim[1]},
            "layers": entries,
        }
    ).encode()
    digest = _digest(manifest)
    (folder / "manifests").mkdir(exist_ok=True)
    (folder / "manifests" / digest).write_bytes(manifest)
    (folder / "ref").write_text(digest)
    return digest


def pax_path(folder: Path, size: int) -> None:
    """One PAX `path` record of `size` bytes (900 MB from a 1 MB zstd layer)."""
    layer = _Layer(folder)
    body = b" path=" + b"a" * size + b"\n"
    length = len(body) + len(str(len(body)))
    length += len(str(length)) - len(str(len(body)))
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, length
    layer.write(header.tobuf(tarfile.USTAR_FORMAT))
    layer.write(str(length).encode())
    for start in range(0, len(body), 16 << 20):
        layer.write(body[start : start + (16 << 20)])
    layer.write(b"\0" * (-length % 512))
    layer.member(tarfile.TarInfo("x"))
    _image(folder, [layer.close()])


def long_library_names(folder: Path, count: int) -> None:
    """`count` shared objects whose paths are some 1,000 characters (each under PATH_MAX)."""
    layer = _Layer(folder)
    prefix = "usr/lib/" + ("d" * 240 + "/") * 4
    for index in range(count):
        layer.member(tarfile.TarInfo(f"{prefix}lib{index}.so"))
    _image(folder, [layer.close()])


def many_entries(folder: Path, count: int) -> None:
    """`count` empty files: the tar reader must not keep their headers."""
    layer = _Layer(folder)
    for index in range(count):
        layer.write(tarfile.TarInfo(f"f/{index}").tobuf(tarfile.USTAR_FORMAT))
    _image(folder, [layer.close()])


def config_larger_than_claimed(folder: Path, size: int) -> None:
    """A manifest naming a 500-byte config whose blob is `size` bytes."""
    digest = "sha256:" + "c" * 64
    (folder / "blobs").mkdir(exist_ok=True)
    (folder / "blobs" / (digest + ".gen")).write_text(json.dumps({"size": size}))
    _image(folder, [], config_claim=(digest, 500))


def huge_manifest(folder: Path, size: int) -> None:
    """A manifest of `size` bytes (an annotation as long), served as it is."""
    _image(folder, [], extra={"annotations": {"x": "y" * size}})


def claims_huge_size(folder: Path, inflated: int, claim: int = 10**13) -> None:
    """A zstd blob of zeros inflating to `inflated` bytes, its manifest claiming `claim` bytes."""
    frame = zstandard.ZstdCompressor(level=3).compress(bytes(64 << 20))
    path = folder / "zeros"
    with path.open("wb") as out:
        for _ in range(max(1, inflated // (64 << 20))):
            out.write(frame)
    _image(folder, [(path, "sha256:" + "0" * 64)], sizes=[claim])


def whiteouts(folder: Path, count: int) -> None:
    """`count` deep shared objects, then `count` whiteouts of other deep paths above them
    (190 folders deep: as deep as a layer's summary may keep 40,000 of)."""
    deep = "/".join(["a"] * 190)
    below, above = _Layer(folder), _Layer(folder)
    for index in range(count):
        below.member(tarfile.TarInfo(f"{deep}/lib{index}.so"))
        above.member(tarfile.TarInfo(f"{deep}/b/.wh.lib{index}.so"))
    _image(folder, [below.close(), above.close()])


def requires_flood(folder: Path, count: int) -> None:
    """`count` METADATA files of 1 MiB of Requires-Dist each."""
    layer = _Layer(folder)
    lines = b"".join(b"Requires-Dist: pkg%d>=1.0\n" % index for index in range(40_000))[: (1 << 20) - 64]
    lines = lines[: lines.rindex(b"\n") + 1]
    for index in range(count):
        data = b"Metadata-Version: 2.1\nName: d%d\nVersion: 1\n" % index + lines
        layer.member(tarfile.TarInfo(f"{SITE}/d{index}-1.dist-info/METADATA"), data)
    _image(folder, [layer.close()])


def slow_registry(folder: Path, size: int) -> None:
    """A good layer of `size` bytes that the registry drips, 1 KiB every 5 s."""
    layer = _Layer(folder)
    layer.member(tarfile.TarInfo("data"), os.urandom(size))
    _image(folder, [layer.close()])
    (folder / "slow").write_text("1024 5")


def cases(scale: float) -> dict[str, Callable[[Path], None]]:
    def n(value: float) -> int:
        return max(1, int(value * scale))

    return {
        "pax-path-900MB": lambda folder: pax_path(folder, n(900 << 20)),
        "400k-library-names-of-1000": lambda folder: long_library_names(folder, n(400_000)),
        "1M-entries": lambda folder: many_entries(folder, n(1_000_000)),
        "config-1GiB-claimed-500B": lambda folder: config_larger_than_claimed(folder, n(1 << 30)),
        "manifest-200MB": lambda folder: huge_manifest(folder, n(200 << 20)),
        "zstd-64GiB-claimed-1e13": lambda folder: claims_huge_size(folder, n(64 << 30)),
        "zstd-64GiB-claimed-60GiB": lambda folder: claims_huge_size(folder, n(64 << 30), claim=60 << 30),
        "whiteouts-40k-x-40k": lambda folder: whiteouts(folder, n(40_000)),
        "900-METADATA-of-1MiB": lambda folder: requires_flood(folder, n(900)),
        "drip-1KiB-every-5s": lambda folder: slow_registry(folder, n(1 << 20)),
    }


# -- serving: a registry that serves what FOLDER holds, checking nothing


def serve(folder: Path, port_file: Path) -> None:
    slow = (folder / "slow").read_text().split() if (folder / "slow").exists() else None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self.do_GET(body=False)

        def do_GET(self, body: bool = True) -> None:
            kind, _, name = self.path.rpartition("/")
            chunks: Iterator[bytes]
            if kind.endswith("/manifests"):
                path = folder / "manifests" / name
                size, chunks, media = path.stat().st_size, iter([path.read_bytes()]), MANIFEST
            elif (folder / "blobs" / (name + ".gen")).exists():
                size = json.loads((folder / "blobs" / (name + ".gen")).read_text())["size"]
                media = "application/json"
                chunks = (b"{" + b" " * (min(1 << 20, size - start) - 1) for start in range(0, size, 1 << 20))
            elif (folder / "blobs" / name).exists():
                path = folder / "blobs" / name
                size, media = path.stat().st_size, "application/octet-stream"
                chunks = iter(functools.partial(path.open("rb").read, 1 << 20), b"")
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(size))
            self.send_header("Docker-Content-Digest", name)
            self.end_headers()
            if not body:
                return
            try:
                for chunk in chunks:
                    if slow and kind.endswith("/blobs") and media != "application/json":
                        for start in range(0, len(chunk), int(slow[0])):
                            self.wfile.write(chunk[start : start + int(slow[0])])
                            self.wfile.flush()
                            time.sleep(float(slow[1]))
                    else:
                        self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]  # a reader that stops
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()


# -- reading: the real client and reader, in a child of its own


def read(host: str, folder: Path) -> int:
    from bot.adapters.consumerread import LayerCache, read_consumer
    from bot.adapters.imagestore import RegistryRepository
    from bot.adapters.registry import RegistryClient
    from bot.core.errors import WheelpinError

    store = RegistryRepository(RegistryClient(host), REPO)
    try:
        image = read_consumer(store, (folder / "ref").read_text(), cache=LayerCache(folder / "cache"))
    except WheelpinError as exc:
        print(exc.message, file=sys.stderr)
        return exc.exit_code
    print(f"read: {len(image.files.libraries)} libraries, {len(image.files.dists)} dists", file=sys.stderr)
    return 0


def measured(command: list[str], *, timeout: float, memory: int) -> tuple[int | str, float, int, str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(
            command,
            stderr=stderr,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
            preexec_fn=limit,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        code: int | str
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - started > timeout:
                child.kill()
                _pid, status, usage = os.wait4(child.pid, 0)
                code = "kill"
                break
            time.sleep(0.05)
        stderr.seek(0)
        said = (stderr.read().strip().splitlines() or [""])[-1][:110]
    return code, time.perf_counter() - started, usage.ru_maxrss * 1024, said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="size of each case (1.0: as reported)")
    parser.add_argument("--only", help="run only the cases whose name holds this")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a reader is killed")
    parser.add_argument("--memory", type=int, default=4096, help="MiB of address space a reader may map")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--read", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        cases(args.scale)[args.only](args.build)
        return 0
    if args.serve:
        serve(args.serve, args.serve / "port")
        return 0
    if args.read:
        return read(args.read[0], Path(args.read[1]))
    worst = 0
    print(f"{'case':28} {'build s':>7} {'blobs MB':>8} {'exit':>4} {'s':>6} {'peak RSS MB':>11}  said")
    for name in cases(args.scale):
        if args.only and args.only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="wheelpin-hostile-image-") as temporary:
            folder = Path(temporary)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, __file__, "--scale", str(args.scale), "--only", name, "--build", folder], check=True
            )
            built = time.perf_counter() - started
            stored = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
            server = subprocess.Popen([sys.executable, __file__, "--serve", folder])
            try:
                while not (folder / "port").exists():
                    time.sleep(0.02)
                host = f"127.0.0.1:{(folder / 'port').read_text()}"
                code, seconds, rss, said = measured(
                    [sys.executable, __file__, "--read", host, str(folder)],
                    timeout=args.timeout,
                    memory=args.memory << 20,
                )
            finally:
                server.kill()
                server.wait()
            # refused as an input error (2) or a registry too slow (4), or read within the bounds (0)
            over = seconds > SECONDS or rss > RSS or code not in (0, 2, 4)
            worst |= over
            print(
                f"{name:28} {built:7.1f} {stored:8.1f} {code!s:>4} {seconds:6.1f} {rss / (1 << 20):11.0f}  "
                f"{'OVER ' if over else ''}{said}",
                flush=True,
            )
    print(
        f"bound: each under {SECONDS:g} s and {RSS >> 20} MB peak RSS; read, or refused in one sentence "
        "(exit 2, or 4 for a registry too slow)"
    )
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: the cache folder's bounded parts (bot/adapters/cachebound.py) over many passes.

Run from the project root:  python bench/cache_bounds.py [--passes 60] [--upstreams 12]
    [--layers-max 512KiB] [--builds-max 4MiB] [--mirrors-max 2MiB]
Each pass is one `cachebound.scope()`, as a command or a service's job is, and goes
through the cache's real owners: it fetches a commit of one of `--upstreams` git
repositories into its mirror (adapters/upstream.py), takes a new commit's wheels into the
build cache (adapters/buildcache.py `seed_build`, as a build that was never released would
leave them) and summarises two new image layers into the layer cache
(adapters/layerstream.py, adapters/consumerread.py). Every `--every` passes it prints each
part's bytes on disk (walked, not the stamps' word) against its bound, what it would hold
unbounded, and the evictions so far.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic import ByteSize, TypeAdapter  # noqa: E402

from bot.adapters import cachebound  # noqa: E402
from bot.adapters.buildcache import seed_build  # noqa: E402
from bot.adapters.consumerread import LayerCache  # noqa: E402
from bot.adapters.git import git  # noqa: E402
from bot.adapters.layerstream import read_layer  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.adapters.upstream import UpstreamRepo  # noqa: E402
from bot.commands.demo import MAINTAINER  # noqa: E402
from bot.core.config.model import Upstream  # noqa: E402
from tests.fixtures.wheels import build_wheel  # noqa: E402

PARTS = ("layers", "builds", "upstream")


def on_disk(path: Path) -> int:
    return sum(os.lstat(os.path.join(top, name)).st_size for top, _dirs, files in os.walk(path) for name in files)


def upstream_repo(root: Path, index: int) -> tuple[Path, str]:
    """A git repository with some history (a few hundred kB in its mirror), and its head."""
    repo = root / f"upstream{index}"
    repo.mkdir()
    git(["init", "--quiet", "--initial-branch=main"], cwd=repo)
    for number in range(3):
        (repo / "data.bin").write_bytes(os.urandom(80_000))
        git(["add", "-A"], cwd=repo)
        git(["commit", "--quiet", "-m", f"commit {number}"], cwd=repo, env=MAINTAINER)
    return repo, git(["rev-parse", "HEAD"], cwd=repo).strip()


def layer(number: int) -> tuple[bytes, str]:
    """An uncompressed layer of a few hundred files (Python and libraries) and its digest."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        for index in range(300):
            body = f"# layer {number} file {index}\n".encode() * 4
            info = tarfile.TarInfo(f"usr/lib/python3/dist-packages/pkg{number}/mod{index}.py")
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
            info = tarfile.TarInfo(f"opt/rocm/lib/libx{number}_{index}.so.1")
            archive.addfile(info, io.BytesIO(b""))
    raw = data.getvalue()
    return raw, "sha256:" + hashlib.sha256(raw).hexdigest()


def main() -> None:
    size = TypeAdapter(ByteSize).validate_python
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=60)
    parser.add_argument("--every", type=int, default=15)
    parser.add_argument("--upstreams", type=int, default=12)
    parser.add_argument("--layers-max", type=size, default="512KiB")
    parser.add_argument("--builds-max", type=size, default="4MiB")
    parser.add_argument("--mirrors-max", type=size, default="2MiB")
    args = parser.parse_args()
    configure_logging(level="warning", fmt="console")  # each trim is an info line
    bounds = {"layers": int(args.layers_max), "builds": int(args.builds_max), "upstream": int(args.mirrors_max)}
    with tempfile.TemporaryDirectory(prefix="wheelpin-cache-bench-") as scratch:
        root = Path(scratch)
        cache = root / "cache"
        upstreams = [upstream_repo(root, index) for index in range(args.upstreams)]
        (root / "wheels").mkdir()
        wheel = build_wheel(
            root / "wheels",
            name="demo",
            version="1.0",
            files={"demo/__init__.py": b"", "demo/blob.bin": os.urandom(300_000)},
        )
        cachebound.configure(cache, bounds)
        unbounded = dict.fromkeys(PARTS, 0)
        seen_mirrors: set[int] = set()
        started = time.perf_counter()
        print(
            f"{args.passes} passes; bounds: "
            + ", ".join(f"{part} {bound / 2**20:.1f} MiB" for part, bound in bounds.items())
        )
        for number in range(1, args.passes + 1):
            with cachebound.scope():
                which = number % len(upstreams)
                path, head = upstreams[which]
                mirror = UpstreamRepo(Upstream(repo=str(path), branch="main"), cache=cache, root=root)
                mirror.fetch(head)
                if which not in seen_mirrors:
                    seen_mirrors.add(which)
                    unbounded["upstream"] += on_disk(mirror.mirror)
                commit = hashlib.sha1(str(number).encode()).hexdigest()
                seed_build(cache, f"component{number % 5}", commit, [wheel], provenance="bench")
                unbounded["builds"] += wheel.stat().st_size + len("bench\n") + len(commit) + 1
                layers = LayerCache(cache / "layers")
                for index in range(2):
                    raw, digest = layer(number * 2 + index)
                    summary = read_layer(iter([raw]), size=len(raw), diff_id=digest, what="layer")
                    layers.put(digest, summary, size=len(raw), diff_id=digest)
                    unbounded["layers"] += (cache / "layers" / digest.split(":", 1)[1]).stat().st_size
            if number % args.every == 0 or number == args.passes:
                usage = {part.part: part for part in cachebound.usage()}
                line = "; ".join(
                    f"{part} {on_disk(cache / part) / 2**20:5.2f} MiB of {bounds[part] / 2**20:.1f} "
                    f"({unbounded[part] / 2**20:5.2f} unbounded, {usage[part].evictions} evicted)"
                    for part in PARTS
                )
                within = all(on_disk(cache / part) <= bounds[part] for part in PARTS)
                print(f"after {number:4d} passes: {line}; {'within' if within else 'OVER'} the bounds", flush=True)
        seconds = time.perf_counter() - started
        print(f"{args.passes} passes in {seconds:.1f} s")


if __name__ == "__main__":
    main()

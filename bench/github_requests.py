"""Benchmark: the GitHub requests of a no-op pass for 1, 50 and 200 components, split into
counted and free (304), from the GitHub emulator's own count.

Run from the project root:  python bench/github_requests.py [--sizes 1,50,200]
(needs `npm install --prefix tests` for the emulator's schemas). The downstream of
bench/reconcile_passes.py is served by the emulator; one pass warms the caches, as a
running bot has them, then a no-op pass is counted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from reconcile_passes import setup  # noqa: E402

from bot.adapters.configdisk import load_config  # noqa: E402
from bot.adapters.github import GitHubPlatform  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.app.settings import Settings  # noqa: E402
from bot.app.wiring import Registries  # noqa: E402
from bot.loop.runner import Reconciler  # noqa: E402
from tests.fixtures.github.emulator import GitHubEmulator  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,50,200")
    args = parser.parse_args()
    configure_logging(level="error")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
            root = Path(scratch)
            _upstream, downstream, _names, _head = setup(root, size)
            emulator = GitHubEmulator(root / "github", tokens={"ghs_bench"})
            try:
                emulator.create_repo("rocm", "atom", downstream)
                loaded = load_config(downstream / "wheelpin.toml", root=downstream)
                platform = GitHubPlatform(
                    api_url=emulator.url,
                    token="ghs_bench",
                    owner="rocm",
                    repo="atom",
                    author=loaded.config.defaults.author,
                )
                settings = Settings(cache_dir=root / "cache")
                reconciler = Reconciler(
                    loaded,
                    platform=platform,
                    registries=Registries(settings),
                    cache=settings.cache_dir,
                    local_commands=False,
                )
                reconciler.run()
                counted, free = emulator.counted, emulator.free
                started = time.perf_counter()
                result = reconciler.run()
                seconds = time.perf_counter() - started
                assert all(c.status == "nothing" for c in result.components)
                print(
                    f"{size:4d} components: no-op pass {seconds:6.2f} s; GitHub requests "
                    f"{emulator.counted - counted} counted, {emulator.free - free} free (304)"
                )
            finally:
                emulator.stop()


if __name__ == "__main__":
    main()

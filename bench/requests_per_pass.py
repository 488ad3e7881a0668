"""Benchmark: the outside requests one reconcile pass makes, for 1, 50 and 200 components,
in a no-op pass and in a dry run that finds an update (a new upstream commit, its images
already published).

Run from the project root:  python bench/requests_per_pass.py [--sizes 1,50,200] [--github]
The downstream of bench/reconcile_passes.py, its images in a real loopback registry
(`docker-registry`, as the tests run it) instead of a layout folder, so each registry
request is one the registry answers. Printed per pass: registry requests (by method), git
ls-remote and fetch of the upstream, and the downstream reads and writes the platform was
asked for (each a git command on the local platform, one GitHub request or more on
GitHub); with `--github`, the downstream served by the GitHub emulator, and its own count
of GitHub requests. A pass after a warm-up, as a running bot has its caches; the registry's
content cache is off, so every read of an image is a request the registry counts (the
digest cache would hide a pass reading the same image twice).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from reconcile_passes import commit, publish_all, setup  # noqa: E402

from bot.adapters.configdisk import load_config  # noqa: E402
from bot.adapters.imagestore import DigestCache  # noqa: E402
from bot.adapters.localplatform import LocalPlatform  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.adapters.platform import Platform  # noqa: E402
from bot.adapters.registrywire import Traffic  # noqa: E402
from bot.app.settings import Settings  # noqa: E402
from bot.app.wiring import Registries  # noqa: E402
from bot.commands.demo import PEOPLE  # noqa: E402
from bot.core.image.reference import ImageRef  # noqa: E402
from bot.loop.results import PassResult  # noqa: E402
from bot.loop.runner import Reconciler  # noqa: E402
from tests.fixtures.servers import Registry  # noqa: E402

# The platform's reads and writes of the downstream (adapters/platform.py), counted per call.
PLATFORM_CALLS = (
    "resolve",
    "read_file",
    "branch_heads",
    "branch_commits",
    "skipped_commits",
    "write_branch",
    "publish_proposal",
    "close",
    "say_once",
)


class Counted:
    """A platform whose calls are counted, by name (everything else passes through)."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._platform, name)
        if name not in PLATFORM_CALLS:
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted


class Uncached(Registries):
    """The process's registries without the on-disk content cache: each image read is a request."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.cache = DigestCache(None)


def by_method(traffics: list[Traffic], before: dict[str, int]) -> dict[str, int]:
    now: Counter[str] = Counter()
    for traffic in traffics:
        now.update(traffic.by_method)
    return {
        method: count - before.get(method, 0) for method, count in sorted(now.items()) if count - before.get(method, 0)
    }


def measured(
    run: Callable[[], PassResult], registries: Registries, platform: Counted, github: Callable[[], int] | None
) -> tuple[PassResult, str]:
    methods = by_method(registries.traffics(), {})
    platform.calls.clear()
    asked = github() if github else 0
    result = run()
    said = (
        f"registry {result.requests['registry']} {by_method(registries.traffics(), methods)}, "
        f"git ls-remote {result.requests['git_ls_remote']} fetch {result.requests['git_fetch']}, "
        f"platform {sum(platform.calls.values())} {dict(sorted(platform.calls.items()))}"
    )
    if github:
        said += f", GitHub {github() - asked}"
    return result, said


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,50,200")
    parser.add_argument("--github", action="store_true", help="the downstream on the GitHub emulator")
    args = parser.parse_args()
    configure_logging(level="error")
    with tempfile.TemporaryDirectory(prefix="wheelpin-bench-registry-") as folder:
        server = Registry(Path(folder))
        try:
            for size in (int(s) for s in args.sizes.split(",")):
                with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
                    bench(Path(scratch), size, server.host, on_github=args.github)
        finally:
            server.stop()


def bench(root: Path, size: int, host: str, *, on_github: bool) -> None:
    repository = f"{host}/bench{size}/demo-cache"
    settings = Settings(cache_dir=root / "cache", insecure_registries=host)
    registries = Uncached(settings)
    store = registries.store(ImageRef.parse(repository))
    upstream, downstream, names, _head = setup(root, size, repository=repository, store=store)
    loaded = load_config(downstream / "wheelpin.toml", root=downstream)
    emulator: Any = None
    github: Callable[[], int] | None = None
    if on_github:
        from bot.adapters.github import GitHubPlatform
        from tests.fixtures.github.emulator import GitHubEmulator

        emulator = GitHubEmulator(root / "github", tokens={"ghs_bench"})
        emulator.create_repo("rocm", "atom", downstream)
        inner: Platform = GitHubPlatform(
            api_url=emulator.url, token="ghs_bench", owner="rocm", repo="atom", author=loaded.config.defaults.author
        )
        github = lambda: emulator.counted + emulator.free  # noqa: E731
    else:
        inner = LocalPlatform(downstream, author=loaded.config.defaults.author)
    platform = Counted(inner)
    try:
        reconciler = Reconciler(
            loaded,
            platform=platform,
            registries=registries,
            settle=0,
            cache=settings.cache_dir,
            local_commands=not on_github,
        )
        reconciler.run()  # warm, as a long-running bot is
        noop, said = measured(reconciler.run, registries, platform, github)
        assert all(c.status == "nothing" for c in noop.components), [c.to_json() for c in noop.components][:2]
        print(f"{size:4d} components, no-op pass:          {said}")
        new = commit(upstream, "new work", PEOPLE)
        publish_all(root, names, new, store=store)
        dry, said = measured(lambda: reconciler.run(dry_run=True), registries, platform, github)
        planned = sum(1 for c in dry.components if any(a.kind == "propose" for a in c.actions))
        assert planned == size, [c.to_json() for c in dry.components][:2]
        print(f"{size:4d} components, update found, dry run: {said}")
        real, said = measured(reconciler.run, registries, platform, github)
        assert sum(1 for c in real.components if any(a.kind == "propose" for a in c.actions)) == size
        opened = sum(1 for c in real.components if c.status == "done")  # the rest failed (a rate limit)
        print(f"{size:4d} components, update found, proposed ({opened} done): {said}")
    finally:
        if emulator is not None:
            emulator.stop()


if __name__ == "__main__":
    main()

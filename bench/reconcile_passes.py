"""Benchmark: the cost of a reconcile pass on the local platform, for 1, 50, 200 components.

Run from the project root:  python bench/reconcile_passes.py [--sizes 1,50,200]
For each size it makes an upstream git repository and a downstream one whose Dockerfile
pins N components (all following one upstream branch, images in an OCI layout folder),
then prints: the time of a no-op pass and the outside requests it makes (git ls-remote,
git fetch, registry requests, bytes written), and the time from a new upstream commit
whose images are already published to the proposals (per component).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.adapters.configdisk import load_config  # noqa: E402
from bot.adapters.git import git  # noqa: E402
from bot.adapters.imagestore import ImageStore, LayoutStore  # noqa: E402
from bot.adapters.localplatform import LocalPlatform  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.adapters.publisher import publish  # noqa: E402
from bot.app.settings import Settings  # noqa: E402
from bot.app.wiring import Registries  # noqa: E402
from bot.commands.demo import MAINTAINER, PEOPLE  # noqa: E402
from bot.core.wheel.report import inspect_wheel  # noqa: E402
from bot.loop.runner import Reconciler  # noqa: E402
from tests.fixtures.wheels import build_wheel  # noqa: E402


def commit(repo: Path, message: str, people: dict[str, str]) -> str:
    git(["add", "-A"], cwd=repo)
    git(["commit", "--quiet", "--allow-empty", "-m", message], cwd=repo, env=people)
    return git(["rev-parse", "HEAD"], cwd=repo).strip()


def publish_all(
    root: Path, names: list[str], head: str, *, store: ImageStore | None = None
) -> dict[str, tuple[str, str]]:
    """One image per component for `head` (in the layout folder, or `store`): {name: (tag,
    digest)} and the wheel sha256."""
    wheel = build_wheel(
        root / "wheels" / head[:8],
        name="demo-cache",
        version=f"0.1.0+g{head[:8]}",
        files={"demo_cache/__init__.py": head.encode()},
        requires_dist=["numpy>=2.3"],
    )
    report = inspect_wheel(wheel)
    store = store or LayoutStore(root / "images")
    found = {}
    for name in names:
        result = publish(
            store, f"{name}-g{head[:8]}", [wheel], [report], revision=head, component=name, settle=0
        )  # no other writer here: nothing to wait for
        found[name] = (f"{name}-g{head[:8]}", result.digest)
    found["sha256"] = (report.sha256, "")
    return found


def setup(
    root: Path, size: int, *, repository: str = "oci:../images", store: ImageStore | None = None
) -> tuple[Path, Path, list[str], str]:
    """An upstream, and a downstream pinning `size` components' images in `repository`
    (published to `store`; the layout folder by default)."""
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(["init", "--quiet", "-b", "main"], cwd=upstream)
    head = commit(upstream, "start", PEOPLE)
    names = [f"c{i:03d}" for i in range(size)]
    images = publish_all(root, names, head, store=store)
    downstream = root / "downstream"
    (downstream / "docker").mkdir(parents=True)
    git(["init", "--quiet", "-b", "main"], cwd=downstream)
    lines, config = [], []
    for name in names:
        tag, digest = images[name]
        arg = name.upper()
        pinned = "localhost/demo-cache" if repository.startswith("oci:") else repository
        lines += [f'ARG {arg}_IMAGE="{pinned}:{tag}@{digest}"', f"ARG {arg}_SHA256={images['sha256'][0]}"]
        config.append(f"""[[component]]
name = "{name}"
upstream = {{ repo = "../upstream", branch = "main" }}
wheel = {{ distribution = "demo-cache" }}
build = {{ command = "false" }}
image = {{ repository = "{repository}", tag = "{{component}}-g{{sha8}}" }}
pins = [{{ file = "docker/Dockerfile", image_arg = "{arg}_IMAGE", sha256_arg = "{arg}_SHA256" }}]
""")
    (downstream / "docker/Dockerfile").write_text("\n".join(lines) + "\nFROM scratch\n")
    (downstream / "wheelpin.toml").write_text("\n".join(config))
    commit(downstream, "pins", MAINTAINER)
    return upstream, downstream, names, head


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,50,200")
    args = parser.parse_args()
    configure_logging(level="error")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
            root = Path(scratch)
            upstream, downstream, names, _head = setup(root, size)
            settings = Settings(cache_dir=root / "cache")
            loaded = load_config(downstream / "wheelpin.toml", root=downstream)
            platform = LocalPlatform(downstream, author=loaded.config.defaults.author)
            reconciler = Reconciler(
                loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir
            )
            reconciler.run()  # warm the content cache, as a long-running bot has it
            started = time.perf_counter()
            noop = reconciler.run()
            seconds = time.perf_counter() - started
            assert all(c.status == "nothing" for c in noop.components), [c.to_json() for c in noop.components][:2]
            print(
                f"{size:4d} components: no-op pass {seconds:6.2f} s ({seconds / size * 1000:6.1f} ms each); "
                f"requests {noop.requests}"
            )
            new = commit(upstream, "new work", PEOPLE)
            publish_all(root, names, new)
            started = time.perf_counter()
            proposed = reconciler.run()
            seconds = time.perf_counter() - started
            opened = sum(1 for c in proposed.components if any(a.kind == "propose" for a in c.actions))
            print(
                f"      new commit with images published → {opened} proposals in {seconds:6.2f} s "
                f"({seconds / size * 1000:6.1f} ms each); requests {proposed.requests}"
            )


if __name__ == "__main__":
    main()

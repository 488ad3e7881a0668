"""A pass reads each thing once (loop/context.py `Reads`, loop/observation.py): the image
the base pins is read by the first observation and by none after it in the same pass, the
dry run's plan included, and an image read back after its push is not read again for its
proposal. Counted on the real loopback registry (`docker-registry`), from its access log,
which has one line per request it answered, whatever its log level (distribution writes
it through gorilla/handlers' combined format)."""

from __future__ import annotations

import re
from pathlib import Path

from bot.adapters.configdisk import load_config
from bot.adapters.imagestore import DigestCache
from bot.adapters.localplatform import LocalPlatform
from bot.app.settings import Settings
from bot.app.wiring import Registries
from bot.loop.runner import Reconciler
from tests.app.worlds import NEW_VERSION, make_world
from tests.fixtures.servers import Registry

PATH = "reads-once/demo-cache"


class Uncached(Registries):
    """The process's registries without the on-disk content cache (which would answer a
    second read of a digest without a request, hiding it): each read is a request."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.cache = DigestCache(None)


def manifest_gets(registry: Registry) -> dict[str, int]:
    """Every manifest of PATH the registry was asked for by digest, and how often."""
    log = (registry.folder / "registry.log").read_text(errors="replace")
    found = re.findall(rf'"GET /v2/{re.escape(PATH)}/manifests/(sha256:[0-9a-f]{{64}}) HTTP/1\.1" 200 ', log)
    return {digest: found.count(digest) for digest in set(found)}


def since(before: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    return {digest: count - before.get(digest, 0) for digest, count in now.items() if count > before.get(digest, 0)}


def test_a_pass_reads_the_pinned_image_once_and_a_pushed_image_once(registry: Registry, tmp_path: Path) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/{PATH}")
    pinned = re.search(r"@(sha256:[0-9a-f]{64})", (world.downstream / "docker/Dockerfile").read_text())
    assert pinned is not None
    loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
    settings = Settings(cache_dir=tmp_path / "cache")
    reconciler = Reconciler(
        loaded,
        platform=LocalPlatform(world.downstream, author=loaded.config.defaults.author),
        registries=Uncached(settings),
        cache=settings.cache_dir,
        settle=0,
    )
    world.commit_upstream("one", NEW_VERSION)

    before = manifest_gets(registry)
    dry = reconciler.run(dry_run=True)
    assert [a.kind.value for a in dry.components[0].actions] == ["build", "publish", "propose"]
    assert since(before, manifest_gets(registry)) == {pinned.group(1): 1}

    before = manifest_gets(registry)
    real = reconciler.run()  # observed before its plan and after it: the pinned image read by the first
    done = real.components[0]
    assert [a.kind.value for a in done.actions] == ["build", "publish", "propose"], done.messages
    assert done.status == "done" and done.image is not None
    pushed = done.image.rsplit("@", 1)[1]
    # the pushed image read back once by the publisher's check; the proposal takes its wheels from the push
    assert since(before, manifest_gets(registry)) == {pinned.group(1): 1, pushed: 1}

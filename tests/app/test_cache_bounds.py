"""The cache's bounds as a user meets them: `wheelpin reconcile --once` on the local platform
(real git repositories, a real build, an OCI layout) trims what it used once it ends, by the
WHEELPIN_CACHE_*_MAX settings; and `/metrics` shows each bounded part's bytes, bound and
evictions (bot/app/metrics.py reading bot/adapters/cachebound.py)."""

from __future__ import annotations

from pathlib import Path

from bot.adapters import cachebound
from bot.app.metrics import Metrics
from tests.app.worlds import NEW_VERSION, World, component


def test_a_pass_keeps_its_mirror_under_the_default_bound_and_evicts_it_past_a_bound_of_zero(world: World) -> None:
    cache = Path(world.env["WHEELPIN_CACHE_DIR"])
    world.commit_upstream("work", NEW_VERSION)
    first = world.reconcile()
    assert first.code == 0, first.stderr
    assert [a["kind"] for a in component(first)["actions"]] == ["build", "publish", "propose"]
    (mirror,) = (cache / "upstream").iterdir()
    stamps = cache / cachebound.STAMPS
    assert [stamp.name for stamp in (stamps / "upstream").iterdir() if not stamp.name.startswith(".")] == [mirror.name]
    assert int((stamps / "upstream" / mirror.name).read_text()) > 0  # its size, noted at the pass's end
    # the build folder went once its image held the wheels: its stamp went with it
    assert not [stamp for stamp in (stamps / "builds").iterdir() if not stamp.name.startswith(".")]

    world.commit_upstream("more", {"extra.txt": "more\n"})
    second = world.reconcile(WHEELPIN_CACHE_MIRRORS_MAX="0")  # keep only what a pass uses
    assert second.code == 0, second.stderr
    assert [a["kind"] for a in component(second)["actions"]] == ["build", "publish", "propose"]
    assert list((cache / "upstream").iterdir()) == []  # used by the pass, evicted at its end
    third = world.reconcile(WHEELPIN_CACHE_MIRRORS_MAX="1GiB")  # fetched again when needed
    assert third.code == 0 and component(third)["status"] == "nothing", third.stderr


def test_bad_bound_is_refused_in_one_sentence(world: World) -> None:
    refused = world.reconcile("--dry-run", WHEELPIN_CACHE_BUILDS_MAX="lots")
    assert refused.code == 2 and "WHEELPIN_CACHE_BUILDS_MAX" in refused.stderr, refused.stderr


def test_metrics_show_each_bounded_part(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    entry = cache / "upstream" / "a.git"
    entry.mkdir(parents=True)
    (entry / "HEAD").write_bytes(b"x" * 700)
    cachebound.configure(cache, {"upstream": 500, "layers": 1 << 20})
    try:
        folder = cachebound.bounded(cache / "upstream")
        assert folder is not None
        with cachebound.scope():
            folder.use(entry)
        text = Metrics().render().decode()
    finally:
        cachebound.unconfigure(cache)
    assert 'wheelpin_cache_bytes{cache="upstream"} 0.0' in text  # over its bound: evicted at the pass's end
    assert 'wheelpin_cache_bound_bytes{cache="upstream"} 500.0' in text
    assert 'wheelpin_cache_evictions_total{cache="upstream"} 1.0' in text
    assert 'wheelpin_cache_evicted_bytes_total{cache="upstream"} 700.0' in text
    assert 'wheelpin_cache_bound_bytes{cache="layers"} 1.048576e+06' in text

"""The cache's bounded parts (bot/adapters/cachebound.py) on real folders: least recently
used out first by wheelpin's own stamps, never an entry a pass holds (in another thread, or
in another process sharing the cache folder, as replicas may), entries left by a wheelpin
before bounds stamped by their last change, and nothing stamped in a cache no process
bounds."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters import cachebound
from bot.adapters.cachebound import BoundedFolder, bounded, scope

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cache(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "cache"
    folder.mkdir()
    yield folder
    cachebound.unconfigure(folder)


def mirror(cache: Path, name: str, size: int) -> Path:
    """An entry of the mirrors' part: a folder of two files, `size` bytes in all."""
    entry = cache / "upstream" / f"{name}.git"
    (entry / "objects").mkdir(parents=True)
    (entry / "HEAD").write_bytes(b"r" * 10)
    (entry / "objects" / "pack").write_bytes(b"p" * (size - 10))
    return entry


def used(folder: BoundedFolder, *entries: Path) -> None:
    for entry in entries:
        with scope():
            folder.use(entry)


def test_the_least_recently_used_go_first_until_the_part_is_within_its_bound(cache: Path) -> None:
    cachebound.configure(cache, {"upstream": 2500})
    folder = bounded(cache / "upstream")
    assert folder is not None
    old, middle = mirror(cache, "old", 1000), mirror(cache, "middle", 1000)
    used(folder, old, middle)
    assert folder.measure() == (2000, 2)  # each pass's end noted its entry's size: within the bound
    used(folder, old)  # used again: `middle` is the least recently used now
    new = mirror(cache, "new", 1000)
    used(folder, new)  # over the bound at this pass's end
    assert sorted(path.name for path in folder.entries()) == ["new.git", "old.git"]
    assert folder.measure() == (2000, 2)
    (usage,) = cachebound.usage()
    assert (usage.part, usage.used, usage.bound, usage.entries) == ("upstream", 2000, 2500, 2)
    assert (usage.evictions, usage.evicted_bytes) >= (1, 1000)
    assert not [path for path in folder.stamps.iterdir() if path.name.startswith(cachebound.TRASH)]


def test_an_entry_a_pass_holds_is_never_evicted_in_this_process(cache: Path) -> None:
    cachebound.configure(cache, {"upstream": 0})
    folder = bounded(cache / "upstream")
    assert folder is not None
    held, other = mirror(cache, "held", 1000), mirror(cache, "other", 1000)
    pinned, done = threading.Event(), threading.Event()

    def a_pass() -> None:  # a job in another worker thread, using `held` until told to end
        with scope():
            folder.use(held)
            pinned.set()
            done.wait(30)

    worker = threading.Thread(target=a_pass)
    worker.start()
    try:
        assert pinned.wait(30)
        used(folder, other)  # a bound of 0: all goes that no pass holds
        assert held.exists() and not other.exists()
    finally:
        done.set()
        worker.join(30)
    folder.trim()  # its pass ended: it goes too
    assert not held.exists() and folder.measure() == (0, 0)


PIN = """
import sys
from pathlib import Path
from bot.adapters import cachebound
cache = Path(sys.argv[1])
cachebound.configure(cache, {"builds": 0})
with cachebound.scope():
    folder = cachebound.bounded(cache / "builds")
    folder.use(cache / "builds" / "lmcache" / "abc")
    print("pinned", flush=True)
    sys.stdin.readline()
"""


def test_another_process_sharing_the_cache_keeps_what_its_pass_holds(cache: Path) -> None:
    held = cache / "builds" / "lmcache" / "abc"
    other = cache / "builds" / "mooncake" / "def"
    for entry in (held, other):
        (entry / "out").mkdir(parents=True)
        (entry / "out" / "x.whl").write_bytes(b"w" * 500)
    replica = subprocess.Popen(
        [sys.executable, "-c", PIN, str(cache)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert replica.stdout is not None and replica.stdout.readline() == "pinned\n"
        cachebound.configure(cache, {"builds": 0})
        folder = bounded(cache / "builds")
        assert folder is not None
        folder.trim()
        assert held.exists() and not other.exists()
        assert not (cache / "builds" / "mooncake").exists()  # its component's folder, left empty, too
    finally:
        replica.communicate("\n", timeout=30)
    assert replica.returncode == 0
    folder.trim()  # the other process ended its pass (and let go of its lock with its files)
    assert not held.exists()


def test_entries_from_before_bounds_are_stamped_by_their_last_change(cache: Path) -> None:
    older, newer = mirror(cache, "older", 1000), mirror(cache, "newer", 1000)
    hour_ago = time.time() - 3600
    os.utime(older, (hour_ago, hour_ago))
    cachebound.configure(cache, {"upstream": 1500})
    folder = bounded(cache / "upstream")
    assert folder is not None
    folder.trim()
    assert newer.exists() and not older.exists()
    assert folder.measure() == (1000, 1)


def test_a_cache_no_process_bounds_is_left_as_it_was(cache: Path) -> None:
    entry = mirror(cache, "any", 1000)
    assert bounded(cache / "upstream") is None
    cachebound.configure(cache, {"builds": 10})
    assert bounded(cache / "upstream") is None and bounded(cache / "elsewhere") is None
    assert sorted(path.name for path in (cache / "upstream").iterdir()) == [entry.name]
    assert not (cache / cachebound.STAMPS).exists()


def test_an_entry_planned_and_never_made_leaves_no_part_nor_stamp(cache: Path) -> None:
    cachebound.configure(cache, {"builds": 1000})
    folder = bounded(cache / "builds")
    assert folder is not None
    with scope():  # a dry run: the build's folder is named, never made
        folder.use(cache / "builds" / "lmcache" / "abc")
    assert not (cache / "builds").exists() and folder.measure() == (0, 0)


def test_a_cache_named_through_a_link_is_bounded_as_its_folder(cache: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(cache)  # WHEELPIN_CACHE_DIR through a symlink (or relative): entries are named so too
    cachebound.configure(link, {"upstream": 1500})
    folder = bounded(link / "upstream")
    assert folder is not None and bounded(cache / "upstream") is not None
    first = mirror(cache, "first", 1000)
    used(folder, link / "upstream" / first.name)
    second = mirror(cache, "second", 1000)
    used(folder, link / "upstream" / second.name)
    assert not first.exists() and second.exists()
    (usage,) = cachebound.usage()
    assert (usage.used, usage.evictions) == (1000, 1)


def test_stamps_that_cannot_be_written_never_fail_the_pass(cache: Path) -> None:
    cachebound.configure(cache, {"upstream": 0})
    folder = bounded(cache / "upstream")
    assert folder is not None
    (cache / cachebound.STAMPS).write_text("not a folder")  # a cache folder wheelpin cannot stamp in
    entry = mirror(cache, "kept", 1000)
    used(folder, entry)  # said in the logs, and nothing evicted without its stamp's lock
    assert entry.exists()


def document(number: int) -> tuple[str, bytes]:
    data = f'{{"schemaVersion": 2, "n": {number}}}'.encode().ljust(1000)
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def test_registry_documents_kept_by_digest_are_trimmed_least_recently_read_first(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`content/` (the DigestCache's manifests and configs): a pass that wrote to it walks it
    at its end, oldest read first out, at most once every FILE_TRIM_EVERY seconds; a file
    trimmed is a miss, fetched again by its reader."""
    from bot.adapters.imagestore import DigestCache

    cachebound.configure(cache, {"content": 4000})
    documents = [document(n) for n in range(5)]
    kept = DigestCache(cache / "content")
    assert kept.bounded is not None
    with scope():
        for number, (digest, data) in enumerate(documents[:3]):
            kept.put(digest, data)
            path = cache / "content" / "sha256" / digest.removeprefix("sha256:")
            os.utime(path, (time.time() - 100 + number, time.time() - 100 + number))  # 0 the oldest
        kept.put_derived("wheels-v1", documents[0][0], b"w" * 400)
        assert kept.get(documents[0][0]) == documents[0][1]  # read: the newest now
    walked = kept.bounded.stamps / cachebound.WALKED
    assert walked.read_text() == "3400 4"  # within the bound: nothing trimmed
    # a walk was just made: the next pass writing passes the bound and is not walked yet
    with scope():
        kept.put(*documents[3])
    assert walked.read_text() == "3400 4" and kept.get(documents[1][0]) is not None  # read: newer than 2
    monkeypatch.setattr(cachebound, "FILE_TRIM_EVERY", 0.0)
    with scope():
        kept.put(*documents[4])
    # 5 × 1000 + 400 bytes over 4000: the least recently read (2, then the derived file) went
    assert kept.get(documents[2][0]) is None and kept.get_derived("wheels-v1", documents[0][0]) is None
    assert all(kept.get(digest) == data for digest, data in (documents[0], documents[1], documents[3], documents[4]))
    assert walked.read_text() == "4000 4"
    (usage,) = cachebound.usage()
    assert (usage.part, usage.used, usage.bound, usage.evictions) == ("content", 4000, 4000, 2)


def test_a_pass_that_only_reads_registry_documents_walks_nothing(cache: Path) -> None:
    from bot.adapters.imagestore import DigestCache

    digest, data = document(1)
    DigestCache(cache / "content").put(digest, data)  # kept before bounds: no walk
    cachebound.configure(cache, {"content": 0})
    kept = DigestCache(cache / "content")
    with scope():
        assert kept.get(digest) == data
    assert kept.bounded is not None and not (kept.bounded.stamps / cachebound.WALKED).exists()
    assert kept.get(digest) == data  # a bound of 0 trims at the next walk, not at a read
    (usage,) = cachebound.usage()  # no trim walked it: measured for /metrics, nothing removed
    assert (usage.part, usage.used, usage.entries, usage.evictions) == ("content", len(data), 1, 0)
    assert kept.get(digest) == data

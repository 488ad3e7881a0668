"""Deleting wheel images (the stores' half of `image.prune_after_days`): what the real
registry does with a delete by tag and by digest, with deletes on and off, and the OCI
layout folder, which has no garbage collector of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters.imagestore import LayoutStore, RegistryRepository
from bot.adapters.publisher import publish
from bot.adapters.registry import RegistryClient
from bot.core.wheel.report import inspect_wheel
from tests.fixtures.servers import Registry


def put(store: RegistryRepository | LayoutStore, tag: str, wheel: Path) -> str:
    return publish(store, tag, [wheel], [inspect_wheel(wheel)], settle=0).digest


def test_the_registry_deletes_a_digest_with_every_tag_and_no_tag_alone(
    registry: Registry, small_wheels: tuple[Path, Path]
) -> None:
    store = RegistryRepository(RegistryClient(registry.host), "prune/delete")
    old, new = small_wheels
    digest = put(store, "a", old)
    assert put(store, "b", old) == digest  # the same wheel: the same image, two tags
    kept = put(store, "c", new)
    # distribution/distribution answers a delete by tag UNSUPPORTED (PR #3174): the spec's MAY
    assert store.delete("a") is False
    assert store.tag_digest("a") == digest
    assert store.delete(digest) is True
    assert (store.tag_digest("a"), store.tag_digest("b"), store.tag_digest("c")) == (None, None, kept)
    assert store.delete(digest) is True  # gone already: a 404 is success
    assert sorted(store.list_tags()) == ["c"]


@pytest.fixture(scope="module")
def frozen_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    server = Registry(tmp_path_factory.mktemp("registry-no-deletes"), deletes=False)
    yield server
    server.stop()


def test_a_registry_with_deletes_off_deletes_nothing(
    frozen_registry: Registry, small_wheels: tuple[Path, Path]
) -> None:
    store = RegistryRepository(RegistryClient(frozen_registry.host), "prune/frozen")
    digest = put(store, "a", small_wheels[0])
    assert store.delete(digest) is False  # 405 UNSUPPORTED
    assert store.tag_digest("a") == digest


def test_the_layout_folder_drops_a_tag_and_the_blobs_only_it_used(
    tmp_path: Path, small_wheels: tuple[Path, Path]
) -> None:
    store = LayoutStore(tmp_path / "layout")
    old, new = small_wheels
    gone, kept = put(store, "a", old), put(store, "b", new)
    blobs = tmp_path / "layout" / "blobs" / "sha256"
    before = {path.name for path in blobs.iterdir()}
    assert store.delete("a") is True
    after = {path.name for path in blobs.iterdir()}
    assert gone.split(":")[1] in before - after and kept.split(":")[1] in after
    assert store.list_tags() == ["b"] and store.tag_digest("b") == kept
    assert b"".join(store.get_blob(kept))  # the image kept reads back whole
    assert len(after) == 3  # its manifest, config and one layer
    assert store.delete("a") is True and store.delete(kept) is True
    assert store.list_tags() == [] and not any(blobs.iterdir())

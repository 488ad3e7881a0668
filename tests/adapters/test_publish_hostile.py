"""Publishing under hostile conditions: a wheel swapped after it was
verified, wheels one image cannot hold, a layout folder that cannot be written, and two
publishers racing for one tag of a real registry."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from bot.adapters.imagestore import ImageStore, LayoutStore, RegistryRepository
from bot.adapters.publisher import PublishResult, publish
from bot.adapters.registry import RegistryClient
from bot.core.errors import InputError, RefusedError, VerificationError
from bot.core.wheel.report import inspect_wheel
from tests.cli import wheelpin
from tests.fixtures.servers import Registry
from tests.fixtures.wheels import build_wheel


def registry_store(registry: Registry, repo: str) -> RegistryRepository:
    return RegistryRepository(RegistryClient(registry.host), repo)


def swapped(tmp_path: Path, verified: Path, other: Path) -> Path:
    """A copy of `verified` at a path of its own, to be overwritten with `other` later."""
    path = tmp_path / "given" / verified.name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(verified, path)
    return path


@pytest.mark.parametrize("kind", ["layout", "registry"])
def test_a_wheel_swapped_after_verification_is_refused(
    tmp_path: Path, registry: Registry, kind: str, small_wheels: tuple[Path, Path]
) -> None:
    path = swapped(tmp_path, small_wheels[0], small_wheels[1])
    report = inspect_wheel(path)
    shutil.copyfile(small_wheels[1], path)  # the swap, between verification and publish
    store: ImageStore = (
        LayoutStore(tmp_path / "layout") if kind == "layout" else registry_store(registry, f"hostile/swap-{kind}")
    )
    with pytest.raises(VerificationError, match="changed after it was verified"):
        publish(store, "v1", [path], [report], settle=0)
    assert store.tag_digest("v1") is None


@pytest.mark.parametrize("kind", ["layout", "registry"])
def test_a_wheel_swapped_during_the_upload_is_refused(
    tmp_path: Path, registry: Registry, kind: str, small_wheels: tuple[Path, Path]
) -> None:
    """The layer digest is computed from the verified bytes, then the file is swapped right
    before the layer is streamed: the stream is checked again, so no tag is written."""
    path = swapped(tmp_path, small_wheels[0], small_wheels[1])
    report = inspect_wheel(path)
    store: ImageStore = (
        LayoutStore(tmp_path / "layout") if kind == "layout" else registry_store(registry, f"hostile/swapupload-{kind}")
    )
    real_put_blob = store.put_blob

    def swap_then_put(digest: str, size: int, chunks: Callable[[], Iterable[bytes]], **kw: str | None) -> int:
        shutil.copyfile(small_wheels[1], path)
        return real_put_blob(digest, size, chunks, **kw)

    store.put_blob = swap_then_put  # type: ignore[method-assign]
    with pytest.raises(VerificationError, match="changed after it was verified"):
        publish(store, "v1", [path], [report], settle=0)
    assert store.tag_digest("v1") is None


def test_two_wheels_with_one_file_name_are_refused(
    tmp_path: Path, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    first, second = tmp_path / "a" / small_wheels[0].name, tmp_path / "b" / small_wheels[0].name
    for path in (first, second):
        path.parent.mkdir()
        shutil.copyfile(small_wheels[0], path)
    layout = tmp_path / "layout"
    result = wheelpin("image", "publish", str(first), str(second), "--to", f"oci:{layout}:v1", env=env)
    assert result.code == 2, result.stderr
    assert "one file name" in result.stderr and "Traceback" not in result.stderr
    assert not (layout / "index.json").exists()


def test_wheels_for_two_architectures_are_refused(tmp_path: Path, env: dict[str, str]) -> None:
    wheels = [
        build_wheel(
            tmp_path,
            name="demo-native",
            version="1.0",
            files={"demo_native/x.py": b""},
            tag=f"cp312-cp312-manylinux_2_28_{arch}",
        )
        for arch in ("x86_64", "aarch64")
    ]
    reports = [inspect_wheel(w) for w in wheels]
    with pytest.raises(InputError, match="several architectures"):
        publish(LayoutStore(tmp_path / "direct"), "v1", wheels, reports, settle=0)
    layout = tmp_path / "layout"
    result = wheelpin("image", "publish", *map(str, wheels), "--to", f"oci:{layout}:v1", env=env)
    assert result.code == 2, result.stderr
    assert "several architectures" in result.stderr and "Traceback" not in result.stderr
    assert not layout.exists()


def test_a_layout_path_that_is_a_file_is_refused(
    tmp_path: Path, small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    target = tmp_path / "a-file"
    target.write_bytes(b"keep me")
    result = wheelpin("image", "publish", str(small_wheels[0]), "--to", f"oci:{target}:v1", env=env)
    assert result.code == 2, result.stderr
    assert "is not a directory" in result.stderr and len(result.stderr.strip().splitlines()) >= 1
    assert target.read_bytes() == b"keep me"


def test_a_layout_folder_that_cannot_be_written_is_refused(
    small_wheels: tuple[Path, Path], env: dict[str, str]
) -> None:
    """/proc is a directory nobody, not even root, may create files in."""
    result = wheelpin("image", "publish", str(small_wheels[0]), "--to", "oci:/proc/wheelpin-layout:v1", env=env)
    assert result.code == 2, result.stderr
    assert "cannot be written" in result.stderr and "Traceback" not in result.stderr


def test_two_concurrent_publishers_to_one_tag_one_wins(registry: Registry, tmp_path: Path) -> None:
    """Both pass the guard (the tag is free), both PUT: after the settle each reads the tag
    back; exactly one says published and the other that another writer won."""
    repo, tag = "hostile/race", "v1"
    wheels = [
        build_wheel(
            tmp_path / str(n),
            name="demo-race",
            version=f"1.{n}",
            files={"demo_race/__init__.py": f"v = {n}\n".encode()},
        )
        for n in (1, 2)
    ]
    both_past_the_guard = threading.Barrier(2, timeout=30)
    results: dict[int, PublishResult | BaseException] = {}

    def one(n: int) -> None:
        store = registry_store(registry, repo)
        real_put = store.put_manifest

        def put_after_both(tag: str, data: bytes, media_type: str) -> str:
            both_past_the_guard.wait()
            return real_put(tag, data, media_type)

        store.put_manifest = put_after_both  # type: ignore[method-assign]
        try:
            results[n] = publish(store, tag, [wheels[n]], [inspect_wheel(wheels[n])], settle=1.0)
        except BaseException as exc:  # noqa: BLE001 - the test looks at what each thread saw
            results[n] = exc

    threads = [threading.Thread(target=one, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    published = [r for r in results.values() if isinstance(r, PublishResult)]
    lost = [r for r in results.values() if isinstance(r, RefusedError)]
    assert len(published) == 1 and len(lost) == 1, results
    assert published[0].status == "published"
    winner = published[0].digest
    assert "another writer won" in str(lost[0]) and winner in str(lost[0]) and tag in str(lost[0])
    assert registry_store(registry, repo).tag_digest(tag) == winner

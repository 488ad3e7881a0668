"""Fixtures shared by every test folder: real HIP libraries and real PyPI wheels."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.adapters.github.transport import PacingClock, pace_on
from tests.fixtures import consumerimages, hip, pypi
from tests.fixtures.clocks import FastForward
from tests.fixtures.consumerimages import ConsumerImages
from tests.fixtures.postgres import Postgres
from tests.fixtures.wheels import build_wheel


@dataclass(frozen=True)
class HipArtifacts:
    folder: Path
    plain_objects: dict[str, Path]  # name -> single-source object, plain bundle
    compressed_objects: dict[str, Path]  # name -> single-source object, CCOB bundle
    plain_library: Path  # three sources, plain bundles
    compressed_library: Path  # three sources, CCOB bundles
    mixed_library: Path  # plain and CCOB bundles in one section
    generic_library: Path  # a gfx11-generic object linked with a gfx942 one


SOURCES = {
    "k942": ["gfx942"],
    "k90a": ["gfx90a:xnack-", "gfx942"],
    "k1100": ["gfx1100", "gfx942", "gfx90a:sramecc+:xnack-"],
}


@pytest.fixture(scope="session")
def hip_artifacts(tmp_path_factory: pytest.TempPathFactory) -> HipArtifacts:
    folder = tmp_path_factory.mktemp("hip")
    plain = {name: hip.compile_object(folder, name, archs, value=i) for i, (name, archs) in enumerate(SOURCES.items())}
    compressed = {
        name: hip.compile_object(folder, f"{name}c", archs, compress=True, value=i)
        for i, (name, archs) in enumerate(SOURCES.items())
    }
    generic = hip.compile_object(folder, "kgen", ["gfx11-generic"], value=7)
    return HipArtifacts(
        folder=folder,
        plain_objects=plain,
        compressed_objects=compressed,
        plain_library=hip.link_shared(folder, list(plain.values()), "libplain.so"),
        compressed_library=hip.link_shared(folder, list(compressed.values()), "libcompressed.so"),
        mixed_library=hip.link_shared(folder, [plain["k942"], compressed["k90a"], plain["k1100"]], "libmixed.so"),
        generic_library=hip.link_shared(folder, [generic, plain["k942"]], "libgeneric.so"),
    )


@pytest.fixture(scope="session")
def rocm_wheel(hip_artifacts: HipArtifacts, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel like LMCache's ROCm build: two HIP libraries and a Python module."""
    return build_wheel(
        tmp_path_factory.mktemp("wheels"),
        name="lmcache",
        version="0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1",
        tag="cp312-cp312-manylinux_2_39_x86_64",
        files={
            "lmcache/__init__.py": b"__version__ = '0.5.6'\n",
            "lmcache/c_ops.so": hip_artifacts.plain_library.read_bytes(),
            "lmcache/c_ops_compressed.so": hip_artifacts.compressed_library.read_bytes(),
        },
        requires_dist=["numpy<=2.2.6", "torch==2.10.0a0+git3d3aa83", "redis; extra == 'redis'"],
    )


@pytest.fixture(scope="session")
def cupy_wheel() -> Path:
    return pypi.fetch(pypi.CUPY)


@pytest.fixture(scope="session")
def mooncake_wheel() -> Path:
    return pypi.fetch(pypi.MOONCAKE)


@pytest.fixture(scope="session")
def lmcache_cuda_wheel() -> Path:
    return pypi.fetch(pypi.LMCACHE)


# -- registries ---------------------------------------------------------------------------


from tests.fixtures.servers import Registry, TokenServer  # noqa: E402

USERS = {"alice": "s3cret-Pa55"}


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    server = Registry(tmp_path_factory.mktemp("registry-plain"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def basic_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    server = Registry(tmp_path_factory.mktemp("registry-basic"), auth="htpasswd", users=USERS)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenServer]:
    server = TokenServer(tmp_path_factory.mktemp("token"), USERS)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def token_registry(tmp_path_factory: pytest.TempPathFactory, token_server: TokenServer) -> Iterator[Registry]:
    server = Registry(tmp_path_factory.mktemp("registry-token"), auth="token", token=token_server)
    yield server
    server.stop()


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    """Settings for a CLI run: its own cache and an empty docker config, quick retries."""
    docker = tmp_path / "docker-config"
    docker.mkdir()
    return {
        "WHEELPIN_CACHE_DIR": str(tmp_path / "cache"),
        "DOCKER_CONFIG": str(docker),
        "WHEELPIN_REGISTRY_BACKOFF": "0.05",
        "WHEELPIN_LOG_LEVEL": "info",
    }


@pytest.fixture(scope="session")
def small_wheels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two pure-Python wheels of one package, two commits apart."""
    folder = tmp_path_factory.mktemp("small-wheels")
    old = build_wheel(
        folder,
        name="demo-cache",
        version="0.1.0+g05fc77a0",
        files={"demo_cache/__init__.py": b"v = 1\n"},
        requires_dist=["numpy>=2.3"],
    )
    new = build_wheel(
        folder,
        name="demo-cache",
        version="0.1.1+g3d3aa833",
        files={"demo_cache/__init__.py": b"v = 2\n"},
        requires_dist=["numpy<=2.2.6", "msgspec"],
    )
    return old, new


@pytest.fixture(scope="session")
def consumer_images(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> ConsumerImages:
    """Consuming images built by buildah and pushed to the real registry (ROCm 7 gzip and
    zstd, ROCm 6): tests/fixtures/consumerimages.py."""
    from tests.adapters.test_consumer import push_busybox

    base = push_busybox(registry)
    return consumerimages.build(registry, tmp_path_factory.mktemp("consumers"), f"{registry.host}/base/busybox@{base}")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """Debian's PostgreSQL on a loopback port, for the whole session (tests/fixtures/postgres.py)."""
    server = Postgres()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def pacing_clock() -> Iterator[FastForward]:
    """GitHub writes of this process are paced one second apart (transport.WritePacer) on a
    clock that skips the waits: each test still sees the pacing, in `slept`, without sleeping."""
    clock = FastForward()
    pace_on(PacingClock(clock.sleep, clock.monotonic))
    yield clock
    pace_on(PacingClock())

"""One reading of a wheel image, whoever pushed it: the same wheels published by
wheelpin (annotations), pushed by buildah as `docker build && docker push` would (Docker
v2s2, gzip, labels only), copied by skopeo with zstd layers (OCI, no annotations) and
pushed as `docker buildx build --push` does (an index with a provenance attestation
manifest beside the image, tests/fixtures/foreignpush.py) give
the same facts — version, sha256, python tags, GPU archs, DT_NEEDED, Requires-Dist — and so
the same wheel table and from → to lines, whichever kind is pinned and whichever is new.

The wheels are LMCache's ROCm build as the seed pipelines make it: the HIP library of PyPI
cupy-rocm-7-0 (nine gfx archs), pinned built against ROCm 6, the new one against ROCm 7.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from bot.adapters import imageread
from bot.adapters.imageread import FACTS_FORMAT, read_image
from bot.adapters.imagestore import DigestCache, RegistryRepository
from bot.adapters.publisher import publish
from bot.adapters.registry import RegistryClient
from bot.core.image.oci import WheelEntry
from bot.core.proposal.text import ProposalFacts, body
from bot.core.proposal.wheeldiff import wheel_changes
from bot.core.wheel.report import inspect_wheel
from tests.fixtures import seedwheels
from tests.fixtures.foreignpush import push_foreign
from tests.fixtures.servers import Registry

KINDS = ("wheelpin", "buildah", "skopeo", "buildx")
PINNED, NEW = "3d3aa833" + "1" * 32, "05fc77a0" + "2" * 32


@pytest.fixture(scope="module")
def images(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], str]:
    """(which wheel, kind) → host/path:tag@digest."""
    folder = tmp_path_factory.mktemp("one-reading")
    wheels = {
        "pinned": seedwheels.lmcache_rocm(
            folder / "pinned",
            f"0.5.6.dev98+g{PINNED[:8]}.rocm6.4.1",
            library=seedwheels.hip_library(rocm6=True),
            requires=seedwheels.lmcache_requires(ceilings=False),
        ),
        "new": seedwheels.lmcache_rocm(
            folder / "new",
            f"0.5.7.dev12+g{NEW[:8]}.rocm7.2.4",
            library=seedwheels.hip_library(),
            requires=seedwheels.lmcache_requires(),
        ),
    }
    refs: dict[tuple[str, str], str] = {}
    for (which, wheel), kind in itertools.product(wheels.items(), KINDS):
        tag = f"{which}-{kind}"
        if kind == "wheelpin":
            store = RegistryRepository(RegistryClient(registry.host), "one/lmcache")
            done = publish(store, tag, [wheel], [inspect_wheel(wheel)], settle=0)
            refs[(which, kind)] = f"{registry.host}/one/lmcache:{tag}@{done.digest}"
        else:
            refs[(which, kind)] = push_foreign(
                f"{registry.host}/one/lmcache:{tag}",
                [wheel],
                folder,
                tool=kind,
                labels={"com.amd.atom.lmcache.version": "0.5.x"},
            )
    return refs


def read(registry: Registry, ref: str, cache: Path | None = None) -> imageread.ImageInfo:
    store = RegistryRepository(RegistryClient(registry.host), "one/lmcache", cache=DigestCache(cache))
    return read_image(store, ref.rsplit("@", 1)[1])


def test_every_kind_of_image_gives_the_same_wheel_facts(registry: Registry, images: dict[tuple[str, str], str]) -> None:
    imageread._memo.clear()
    for which in ("pinned", "new"):
        infos = {kind: read(registry, images[(which, kind)]) for kind in KINDS}
        assert [infos[kind].metadata_from for kind in KINDS] == ["annotations", "layers", "layers", "layers"]
        ours = infos["wheelpin"].wheels
        for kind in ("buildah", "skopeo", "buildx"):
            assert infos[kind].wheels == ours, kind
        (entry,) = ours
        assert entry.tags == ("cp312-cp312-manylinux_2_28_x86_64",)
        assert len(entry.archs) == 9 and "gfx942" in entry.archs
        assert entry.needed is not None and f"libamdhip64.so.{6 if which == 'pinned' else 7}" in entry.needed
        assert entry.installed is not None and entry.installed > entry.size  # a HIP library inflates


def test_every_kind_of_image_is_as_large_as_its_manifest_declares(
    registry: Registry, images: dict[tuple[str, str], str]
) -> None:
    """The image's size in a proposal is its config's and layers' bytes as the manifest
    it resolves to declares them, read the same way whoever pushed it; the wheel lies in a
    layer, so the image is about as large as the wheel (a gzip layer a little smaller)."""
    imageread._memo.clear()
    client = RegistryClient(registry.host)
    for kind in KINDS:
        info = read(registry, images[("new", kind)])
        manifest = json.loads(client.get_manifest("one/lmcache", info.digest)[0])
        declared = manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])
        assert info.size == declared, kind
        assert info.to_json()["size"] == declared
        (entry,) = info.wheels
        assert 0.9 * entry.size < info.size < entry.size + 64 * 1024, kind


def sections(pinned: tuple[WheelEntry, ...], new: tuple[WheelEntry, ...]) -> tuple[str, str]:
    """The from → to lines and the wheel table a proposal shows."""
    text = body(
        ProposalFacts(
            component="lmcache",
            upstream="https://github.com/LMCache/LMCache",
            old_commit=PINNED,
            new_commit=NEW,
            version=new[0].version,
            image="x@sha256:0",
            wheels=new,
            changes=wheel_changes(pinned, new),
        )
    )
    parts = {part.split("\n", 1)[0]: part for part in text.split("\n\n")}
    return parts["### From → to"], parts["### Wheels"]


def test_the_proposal_says_the_same_whoever_pushed_either_image(
    registry: Registry, images: dict[tuple[str, str], str]
) -> None:
    imageread._memo.clear()
    said = {
        (old, new): sections(
            read(registry, images[("pinned", old)]).wheels, read(registry, images[("new", new)]).wheels
        )
        for old, new in itertools.product(KINDS, KINDS)
    }
    expected = said[("wheelpin", "wheelpin")]
    for pair, text in said.items():
        assert text == expected, pair
    changes, table = expected
    assert "dropped" not in changes and "not compared" not in changes  # the same nine archs, the same tag
    assert "a ROCm major version change; the image must ship ROCm 7" in changes
    assert "no device code" not in table and "not recorded" not in table
    assert "| cp312-cp312-manylinux_2_28_x86_64 |" in table


def test_an_image_read_from_its_layers_is_read_once(
    registry: Registry, images: dict[tuple[str, str], str], tmp_path: Path
) -> None:
    """Kept by digest in the cache folder (a foreign pinned image is read every pass): a
    second process streams no layer; a damaged or older-format entry is read again."""
    ref = images[("new", "skopeo")]
    imageread._memo.clear()
    first = read(registry, ref, tmp_path / "content")
    assert first.bytes_fetched > 1_000_000  # the wheel itself
    imageread._memo.clear()  # another process: only the cache folder is left
    again = read(registry, ref, tmp_path / "content")
    assert again.wheels == first.wheels and again.bytes_fetched < 64 * 1024
    (entry,) = (tmp_path / "content" / FACTS_FORMAT).iterdir()
    entry.write_text(json.dumps([{"file": "forged.whl"}]))  # damaged: not trusted, read again
    imageread._memo.clear()
    assert read(registry, ref, tmp_path / "content").wheels == first.wheels


def test_a_buildx_index_is_read_as_the_image_beside_its_attestation(
    registry: Registry, images: dict[tuple[str, str], str]
) -> None:
    """The digest pinned is the index's; the reader takes its linux/amd64 image and leaves the
    `unknown/unknown` attestation manifest (an in-toto layer, no wheel) alone."""
    ref = images[("new", "buildx")]
    data, media_type = RegistryClient(registry.host).get_manifest("one/lmcache", ref.rsplit("@", 1)[1])
    index = json.loads(data)
    assert media_type == "application/vnd.oci.image.index.v1+json"
    image, attestation = index["manifests"]
    assert attestation["platform"] == {"architecture": "unknown", "os": "unknown"}
    assert attestation["annotations"]["vnd.docker.reference.digest"] == image["digest"]
    imageread._memo.clear()
    by_index = read(registry, ref)
    assert by_index.wheels == read(registry, f"x@{image['digest']}").wheels
    assert [entry.name for entry in by_index.wheels] == ["lmcache"]

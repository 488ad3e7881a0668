"""The wheel image's bytes: fields BuildKit requires, reproducibility, annotations."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from bot.core.image.oci import (
    CONFIG_TYPE,
    LAYER_TYPE,
    MANIFEST_TYPE,
    WheelEntry,
    architecture_of,
    build_image,
    layer_chunks,
    layer_digest,
    wheels_from_annotations,
)

ENTRY = WheelEntry(
    "lmcache-0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1-cp312-cp312-manylinux_2_39_x86_64.whl",
    "e" * 64,
    1234,
    "lmcache",
    "0.5.6.dev98+g05fc77a0",
    ("numpy<=2.2.6",),
    tags=("cp312-cp312-manylinux_2_39_x86_64",),
)


def image(**kwargs: object):  # type: ignore[no-untyped-def]
    return build_image([ENTRY], layer_digest="sha256:" + "1" * 64, layer_size=4096, architecture="amd64", **kwargs)  # type: ignore[arg-type]


def test_config_has_what_buildkit_requires() -> None:
    config = json.loads(image().config)
    assert config["os"] == "linux" and config["architecture"] == "amd64"
    assert config["rootfs"] == {"type": "layers", "diff_ids": ["sha256:" + "1" * 64]}


def test_manifest_shape_and_annotations() -> None:
    blobs = image(source="https://github.com/LMCache/LMCache", revision="05fc77a0" * 5, component="lmcache")
    manifest = json.loads(blobs.manifest)
    assert manifest["schemaVersion"] == 2 and manifest["mediaType"] == MANIFEST_TYPE
    assert manifest["config"] == {"mediaType": CONFIG_TYPE, "digest": blobs.config_digest, "size": len(blobs.config)}
    assert [layer["mediaType"] for layer in manifest["layers"]] == [LAYER_TYPE]
    annotations = manifest["annotations"]
    assert annotations["org.opencontainers.image.source"] == "https://github.com/LMCache/LMCache"
    assert annotations["org.opencontainers.image.revision"] == "05fc77a0" * 5
    assert annotations["org.opencontainers.image.version"] == ENTRY.version
    assert wheels_from_annotations(annotations) == [ENTRY]
    assert json.loads(blobs.config)["config"]["Labels"] == annotations
    assert len(blobs.manifest) < 64 * 1024


def test_same_input_same_bytes() -> None:
    assert image().manifest == image().manifest and image().manifest_digest == image().manifest_digest
    assert image(revision="a" * 40).manifest_digest != image().manifest_digest


def test_layer_is_reproducible_and_holds_only_the_wheels(tmp_path: Path, small_wheels: tuple[Path, Path]) -> None:
    first = layer_digest(list(small_wheels))
    copies = []
    for wheel in reversed(small_wheels):  # another order, other mtimes and modes
        copy = tmp_path / wheel.name
        shutil.copyfile(wheel, copy)
        os.utime(copy, (1, 1))
        copy.chmod(0o600)
        copies.append(copy)
    assert layer_digest(copies) == first
    archive = tarfile.open(fileobj=io.BytesIO(b"".join(layer_chunks(copies))))
    members = archive.getmembers()
    assert [m.name for m in members] == sorted(w.name for w in small_wheels)
    assert all((m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) == (0, 0, 0, "", "", 0o644) for m in members)
    assert archive.extractfile(members[0]).read() == small_wheels[0].read_bytes()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("names", "arch"),
    [
        (["a-1-cp312-cp312-manylinux_2_39_x86_64.whl"], "amd64"),
        (["a-1-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"], "amd64"),
        (["a-1-cp312-cp312-manylinux_2_39_aarch64.whl"], "arm64"),
        (["a-1-py3-none-any.whl"], "amd64"),
    ],
)
def test_architecture(names: list[str], arch: str) -> None:
    assert architecture_of(names) == arch


def test_mixed_architectures_are_refused() -> None:
    with pytest.raises(ValueError):
        architecture_of(["a-1-cp312-cp312-linux_x86_64.whl", "a-1-cp312-cp312-linux_aarch64.whl"])


def test_foreign_annotations_are_not_ours() -> None:
    assert wheels_from_annotations({"com.amd.atom.lmcache.commit": "x"}) is None
    assert wheels_from_annotations({"io.wheelpin.wheels": "not json"}) is None


def test_an_entry_without_tags_takes_them_from_its_file_name() -> None:
    """Images whose annotations predate the tags: the file name says them, and a file name
    is never taken for a tag (a proposal would then say "python tags dropped: lmcache-…whl")."""
    old = WheelEntry.from_json({k: v for k, v in ENTRY.to_json().items() if k != "tags"})
    assert old.tags == ("cp312-cp312-manylinux_2_39_x86_64",)
    assert old.archs_text == "not recorded"  # nor archs, nor DT_NEEDED: not "no device code"
    assert WheelEntry.from_json({**ENTRY.to_json(), "needed": []}).archs_text == "no device code"

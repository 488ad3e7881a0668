"""The bundle reader against clang-19's own output and clang-offload-bundler's listing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.core.wheel.elf import read_elf
from tests.conftest import SOURCES, HipArtifacts
from tests.fixtures import hip


def elf_report(path: Path):
    with path.open("rb") as stream:
        return read_elf(stream, path.stat().st_size, path.name)


@pytest.mark.parametrize("kind", ["plain", "compressed"])
def test_single_source_objects_match_the_bundler(hip_artifacts: HipArtifacts, kind: str) -> None:
    objects = hip_artifacts.plain_objects if kind == "plain" else hip_artifacts.compressed_objects
    for name, obj in objects.items():
        fatbin = hip.dump_fatbin(obj, hip_artifacts.folder)
        listed = hip.bundler_list(fatbin)
        expected = sorted(line.split("--", 1)[1] for line in listed if line.startswith("hipv4-"))
        report = elf_report(obj)
        assert sorted(report.targets) == expected
        assert sorted(expected) == sorted(SOURCES[name.rstrip("c")] if kind == "plain" else SOURCES[name])
        assert report.bundles == 1
        assert report.compressed_bundles == (1 if kind == "compressed" else 0)
        assert report.gpu == "hip"


@pytest.mark.parametrize(
    ("library", "compressed"),
    [("plain_library", 0), ("compressed_library", 3), ("mixed_library", 1)],
)
def test_linked_libraries_hold_one_bundle_per_source(
    hip_artifacts: HipArtifacts, library: str, compressed: int
) -> None:
    path: Path = getattr(hip_artifacts, library)
    report = elf_report(path)
    assert report.bundles == 3
    assert report.compressed_bundles == compressed
    # every source's targets are found, not only the first bundle's
    assert set(report.archs) == {"gfx942", "gfx90a", "gfx1100"}
    assert "gfx90a:xnack-" in report.targets
    assert "gfx90a:sramecc+:xnack-" in report.targets
    assert report.archs == ("gfx90a", "gfx942", "gfx1100")
    # the bundler itself reads only the first bundle (and fails on several CCOB in a
    # row): that is why the reader walks them all
    fatbin = hip.dump_fatbin(path, hip_artifacts.folder)
    if library == "compressed_library":
        with pytest.raises(subprocess.CalledProcessError):
            hip.bundler_list(fatbin)
    else:
        first = hip.bundler_list(fatbin)
        assert len([line for line in first if line.startswith("hipv4-")]) < len(report.targets)


def test_generic_target_is_reported_as_written(hip_artifacts: HipArtifacts) -> None:
    report = elf_report(hip_artifacts.generic_library)
    assert report.targets == ("gfx942", "gfx11-generic")
    assert report.bundles == 2


def test_host_object_without_device_code(tmp_path: Path) -> None:
    source = tmp_path / "host.c"
    source.write_text("int f(void) { return 1; }\n")
    library = tmp_path / "libhost.so"
    subprocess.run([hip.tool("clang"), "-shared", "-fPIC", str(source), "-o", str(library), "-lm"], check=True)
    report = elf_report(library)
    assert report.gpu is None and report.targets == () and "libm.so.6" in report.needed


def test_a_wanted_arch_in_only_some_gpu_libraries_is_named(hip_artifacts: HipArtifacts, tmp_path: Path) -> None:
    """vLLM wants gfx90a where present: a wheel whose one library has it and another lacks
    it would miss kernels on that GPU. The image records it; the proposal names it."""
    from bot.adapters.configdisk import load_config
    from bot.core.image.oci import WheelEntry
    from bot.core.proposal.assemble import notes
    from bot.core.wheel.report import inspect_wheel
    from tests.fixtures.wheels import build_wheel

    lib90a = hip.link_shared(tmp_path, [hip_artifacts.plain_objects["k90a"]], "lib90a.so")  # gfx90a, gfx942
    lib942 = hip.link_shared(tmp_path, [hip_artifacts.plain_objects["k942"]], "lib942.so")  # gfx942
    wheel = build_wheel(
        tmp_path,
        name="lmcache",
        version="0.5.7+g3d3aa833",
        tag="cp312-cp312-linux_x86_64",
        files={"lmcache/a.so": lib90a.read_bytes(), "lmcache/b.so": lib942.read_bytes()},
    )
    entry = WheelEntry.of_report(inspect_wheel(wheel))
    assert entry.archs == ("gfx90a", "gfx942") and entry.archs_partial == ("gfx90a",)
    assert WheelEntry.from_json(entry.to_json()) == entry
    config = Path(__file__).resolve().parents[3] / "config" / "atom-lmcache"
    component = load_config(config / ".github" / "wheelpin.toml", root=config).config.components[0]
    component = component.model_copy(
        update={"wheel": component.wheel.model_copy(update={"archs_wanted": ["gfx90a", "gfx942", "gfx1100"]})}
    )
    assert notes(component, [entry]) == (
        "gfx1100: no code object, skipped (wheel.archs_wanted)",
        "gfx90a: code objects in only some of the GPU libraries, so some kernels are missing on it "
        "(wheel.archs_wanted)",
    )

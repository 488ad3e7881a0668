"""What a reviewer weighs: each wheel's file size and the size it adds to the image once
installed (the uncompressed sizes the zip's central directory declares, read without
extracting anything), old → new in the proposal, a growth past `wheel.size_growth_warn`
said as a note, and the image's own size beside its reference."""

from __future__ import annotations

import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from bot.adapters.configdisk import load_config
from bot.core.config.model import Component
from bot.core.image.oci import WheelEntry
from bot.core.proposal.assemble import growth_notes
from bot.core.proposal.text import ProposalFacts, body
from bot.core.proposal.wheeldiff import WheelChanges, wheel_changes
from bot.core.sizes import size_text
from bot.core.wheel.report import inspect_wheel
from tests.cli import wheelpin
from tests.fixtures.wheels import build_wheel

CONFIGS = Path(__file__).parents[3] / "config"


def test_the_installed_size_is_the_sum_of_the_members_inflated(tmp_path: Path) -> None:
    wheel = build_wheel(
        tmp_path,
        name="blob",
        version="1.0",
        files={"blob/__init__.py": b"", "blob/zeros.bin": bytes(3_000_000), "blob/text.py": b"x = 1\n" * 1000},
    )
    with zipfile.ZipFile(wheel) as archive:  # every member inflated, to count what installing writes
        written = sum(len(archive.read(info)) for info in archive.infolist())
    report = inspect_wheel(wheel)
    assert report.installed_size == written > 3_000_000 > report.size  # zeros compress well
    data = wheelpin("wheel", "inspect", str(wheel), "--json").json()
    assert (data["size"], data["installed_size"]) == (report.size, written)
    assert WheelEntry.of_report(report).installed == written


def component(share: float | None = None) -> Component:
    found = load_config(
        CONFIGS / "atom-lmcache" / ".github" / "wheelpin.toml", root=CONFIGS / "atom-lmcache"
    ).config.components[0]
    if share is None:
        return found
    return found.model_copy(update={"wheel": found.wheel.model_copy(update={"size_growth_warn": share})})


def entry(size: int, installed: int | None, tag: str = "cp312", version: str = "1.0") -> WheelEntry:
    return WheelEntry(
        f"lmcache-{version}-{tag}-{tag}-manylinux_2_28_x86_64.whl",
        "a" * 64,
        size,
        "lmcache",
        version,
        (),
        ("gfx942",),
        (f"{tag}-{tag}-manylinux_2_28_x86_64",),
        (),
        installed=installed,
    )


def test_a_growth_past_the_configured_share_is_a_note() -> None:
    pinned, new = [entry(20_000_000, 80_000_000)], [entry(22_000_000, 104_000_000, version="1.1")]
    changes = wheel_changes(pinned, new)
    assert component().wheel.size_growth_warn == 0.2  # the default
    (note,) = growth_notes(component(), changes)
    assert note == (
        f"{new[0].file}: installed size grows 30%, 80.0 MB → 104.0 MB, over the 20% wheel.size_growth_warn allows"
    )
    assert growth_notes(component(0.35), changes) == ()
    assert growth_notes(component(0), changes) == ()  # 0: never said
    shrunk = wheel_changes(new, [replace(pinned[0], version="1.2")])
    assert growth_notes(component(0.01), shrunk) == ()
    small = wheel_changes([entry(600, 2_000)], [entry(29_000, 900_000, version="1.1")])  # a pure Python wheel
    assert growth_notes(component(), small) == ()  # far past the share, but under GROWTH_NOTED_FROM


def lmcache_body(
    new: list[WheelEntry], changes: WheelChanges, image_size: int | None = None, pinned_image_size: int | None = None
) -> str:
    """The proposal of lmcache 1.1 with `new` wheels, `changes` from the pinned ones, and the
    sizes of its image and of the pinned one."""
    return body(
        ProposalFacts(
            component="lmcache",
            upstream="https://github.com/LMCache/LMCache",
            old_commit="b" * 40,
            new_commit="c" * 40,
            version="1.1",
            image="r/l:1@sha256:" + "d" * 64,
            wheels=tuple(new),
            changes=changes,
            image_size=image_size,
            pinned_image_size=pinned_image_size,
        )
    )


def test_where_the_pinned_image_does_not_record_installed_sizes_the_file_sizes_are_weighed() -> None:
    pinned, new = [entry(10_000_000, None)], [entry(15_000_000, 40_000_000, version="1.1")]
    changes = wheel_changes(pinned, new)
    assert [note.split(": ", 1)[1] for note in growth_notes(component(), changes)] == [
        "size grows 50%, 10.0 MB → 15.0 MB, over the 20% wheel.size_growth_warn allows"
    ]
    text = lmcache_body(new, changes, image_size=15_002_000, pinned_image_size=None)
    assert f"| `{new[0].file}` | 10.0 MB → 15.0 MB (+50%) | 40.0 MB |" in text
    assert "Image: `r/l:1@sha256:" + "d" * 64 + "`, 15.0 MB\n" in text


def test_a_wheel_of_a_new_python_tag_is_said_alone_and_an_unrecorded_size_says_so() -> None:
    pinned = [entry(10_000_000, 30_000_000, "cp311")]
    new = [entry(10_000_000, 30_000_000, "cp311", "1.1"), entry(12_000_000, None, "cp312", "1.1")]
    changes = wheel_changes(pinned, new)
    assert growth_notes(component(), changes) == ()  # nothing pinned to grow from
    text = lmcache_body(new, changes, image_size=22_004_000, pinned_image_size=10_002_000)
    assert f"| `{new[0].file}` | 10.0 MB (unchanged) | 30.0 MB (unchanged) |" in text
    assert f"| `{new[1].file}` | 12.0 MB | not recorded |" in text
    assert "`, 22.0 MB; the pinned one 10.0 MB\n" in text


def test_each_size_column_says_old_to_new_even_where_the_rounding_hides_the_move() -> None:
    """Both columns as README and docs/reconcile.md say them: old → new with the change; a
    move the rounding hides in bytes, a size under a kB in bytes (never `0.8 kB (+20 bytes)`)."""
    pinned, new = [entry(20_000_000, 812)], [entry(20_000_020, 832, version="1.1")]
    text = lmcache_body(new, wheel_changes(pinned, new))
    assert f"| `{new[0].file}` | 20.0 MB → 20.0 MB (+20 bytes) | 812 bytes → 832 bytes (+2.5%) |" in text


def test_image_show_says_sizes_as_the_proposal_does(tmp_path: Path) -> None:
    """One spelling of a size: `image show` in the proposal's decimal units (size_text)."""
    wheel = build_wheel(tmp_path, name="blob", version="1.0", files={"blob/__init__.py": b"x = 1\n" * 300})
    report = inspect_wheel(wheel)
    layout = f"oci:{tmp_path / 'images'}:blob-1.0"
    assert wheelpin("image", "publish", str(wheel), "--to", layout).code == 0
    shown = wheelpin("image", "show", layout)
    assert shown.code == 0, shown.stderr
    assert f"size {size_text(report.size)}  installed {size_text(report.installed_size)}" in shown.stdout
    assert " kB" in shown.stdout and " KB" not in shown.stdout
    assert size_text(999) == "999 bytes" and size_text(1_000) == "1.0 kB" and size_text(2_500_000) == "2.5 MB"


@pytest.mark.parametrize("value", [-0.1, "a lot"])
def test_a_share_that_cannot_be_is_refused(value: object) -> None:
    from pydantic import ValidationError

    from bot.core.config.model import Wheel

    with pytest.raises(ValidationError):
        Wheel.model_validate({"distribution": "lmcache", "size_growth_warn": value})

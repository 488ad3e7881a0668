"""Which pinned wheel a new one is compared with, in a proposal's from → to and its wheel
table: one wheel each is the same wheel whatever its tags; else the wheel of the same
python tag, and where an image holds several of one python tag (variant wheels of PEP 825,
two platform tags, a free-threaded ABI beside the default one), the one of the same
variant label, platform and ABI too, each row saying which wheel it is. The wheels are real
zips, read as a pass reads them (inspect_wheel, then the image's entry of each)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.core.image.oci import WheelEntry
from bot.core.proposal.wheeldiff import WheelChanges, wheel_changes
from bot.core.sizes import size_text
from bot.core.wheel.hipstub import hip_library
from bot.core.wheel.report import inspect_wheel
from tests.fixtures.proposals import from_to as from_to_lines
from tests.fixtures.proposals import kernels_body
from tests.fixtures.wheels import build_wheel


def kernels(
    folder: Path,
    tag: str = "cp312-cp312-manylinux_2_28_x86_64",
    label: str | None = None,
    *,
    build: int = 1,
    targets: tuple[str, ...] = (),
) -> WheelEntry:
    """A kernels 1.0.0 wheel as its image records it; `label` makes it the variant wheel
    for that GPU (its code and its `amd :: gfx_arch` property), `targets` one for those
    GPUs under that label, another `build` a rebuild of the same wheel with other bytes,
    more of them."""
    targets = targets or (label.removeprefix("amd_") if label else "gfx942",)
    library = hip_library(soname="libkernels.so", needed=["libamdhip64.so.7", "libc.so.6"], targets=targets)
    path = build_wheel(
        folder,
        name="kernels",
        version="1.0.0",
        tag=tag,
        files={"kernels/__init__.py": f"BUILD = {'1' * 40 * build}\n".encode(), "kernels/libkernels.so": library},
        variant=(label, {"amd": {"gfx_arch": list(targets)}}) if label else None,
    )
    return WheelEntry.of_report(inspect_wheel(path))


def from_to(changes: WheelChanges, new: list[WheelEntry]) -> tuple[list[str], str]:
    """The proposal's From → to lines, and its whole text."""
    text = kernels_body(changes, new)
    return from_to_lines(text), text


def sha(entry: WheelEntry) -> str:
    return f"`{entry.sha256[:16]}…`"


def compared_size(changes: WheelChanges, new: WheelEntry) -> int | None:
    """The size of the pinned wheel the new one is compared with."""
    change = changes.size_of(new.file)
    assert change is not None
    return change.old_size


def test_two_variant_wheels_of_one_python_tag_one_rebuilt_are_two_rows(tmp_path: Path) -> None:
    """The image holds the gfx942 and the gfx950 variant of one cp312 wheel; only the gfx950
    one is rebuilt. Each is compared with its own pinned wheel, and the new image listing
    them in another order changes nothing."""
    gfx942 = kernels(tmp_path / "942", label="amd_gfx942")
    gfx950 = kernels(tmp_path / "950", label="amd_gfx950")
    rebuilt = kernels(tmp_path / "950-again", label="amd_gfx950", build=2)
    assert rebuilt.file == gfx950.file and rebuilt.sha256 != gfx950.sha256 and rebuilt.size != gfx950.size
    changes = wheel_changes([gfx942, gfx950], [rebuilt, gfx942])
    assert changes.sha256 == (
        ("cp312 (variant amd_gfx942)", gfx942.sha256, gfx942.sha256),
        ("cp312 (variant amd_gfx950)", gfx950.sha256, rebuilt.sha256),
    )
    assert compared_size(changes, gfx942) == gfx942.size and compared_size(changes, rebuilt) == gfx950.size
    assert (changes.variants, changes.wheels_added, changes.wheels_dropped) == ((), (), ())
    assert (changes.archs_added, changes.archs_dropped, changes.tags_added, changes.tags_dropped) == ((), (), (), ())
    lines, text = from_to(changes, [rebuilt, gfx942])
    assert lines == [
        "- version `1.0.0` → `1.0.0`",
        f"- `cp312 (variant amd_gfx942)` sha256 {sha(gfx942)} → {sha(gfx942)}",
        f"- `cp312 (variant amd_gfx950)` sha256 {sha(gfx950)} → {sha(rebuilt)}",
    ]
    moved = rebuilt.size - gfx950.size
    assert f"| `{rebuilt.file}` | {size_text(gfx950.size)} → {size_text(rebuilt.size)} ({moved:+,} bytes) |" in text
    assert f"| `{gfx942.file}` | {size_text(gfx942.size)} (unchanged) |" in text


def test_a_variant_wheel_dropped_beside_one_that_stays_is_said_once(tmp_path: Path) -> None:
    gfx942 = kernels(tmp_path / "942", label="amd_gfx942")
    gfx950 = kernels(tmp_path / "950", label="amd_gfx950")
    changes = wheel_changes([gfx942, gfx950], [gfx942])
    lines, _ = from_to(changes, [gfx942])
    assert lines == [
        "- ⚠️ **GPU archs dropped: gfx950**",
        "- ⚠️ **variant label of `cp312` changed: `amd_gfx942`, `amd_gfx950` → `amd_gfx942`**",
        "- version `1.0.0` → `1.0.0`",
        f"- `cp312 (variant amd_gfx942)` sha256 {sha(gfx942)} → {sha(gfx942)}",
        f"- `cp312 (variant amd_gfx950)` sha256 {sha(gfx950)} → (none)",
    ]


def test_two_platform_tags_of_one_python_tag_are_two_rows_and_one_dropped_is_loud(tmp_path: Path) -> None:
    older = kernels(tmp_path / "2_28", "cp312-cp312-manylinux_2_28_x86_64")
    newer = kernels(tmp_path / "2_34", "cp312-cp312-manylinux_2_34_x86_64")
    rebuilt = kernels(tmp_path / "2_34-again", "cp312-cp312-manylinux_2_34_x86_64", build=2)
    changes = wheel_changes([older, newer], [rebuilt, older])
    assert changes.sha256 == (
        ("cp312 (manylinux_2_28_x86_64)", older.sha256, older.sha256),
        ("cp312 (manylinux_2_34_x86_64)", newer.sha256, rebuilt.sha256),
    )
    lines, _ = from_to(changes, [rebuilt, older])
    assert lines[1:] == [
        f"- `cp312 (manylinux_2_28_x86_64)` sha256 {sha(older)} → {sha(older)}",
        f"- `cp312 (manylinux_2_34_x86_64)` sha256 {sha(newer)} → {sha(rebuilt)}",
    ]

    changes = wheel_changes([older, newer], [rebuilt])  # the manylinux_2_28 build is gone
    assert (changes.tags_added, changes.tags_dropped) == ((), ())  # cp312 stays: the wheels say what moved
    assert (changes.wheels_dropped, changes.wheels_added) == (("cp312 (manylinux_2_28_x86_64)",), ())
    lines, _ = from_to(changes, [rebuilt])
    assert lines == [
        "- ⚠️ **wheels dropped: `cp312 (manylinux_2_28_x86_64)`**",
        "- version `1.0.0` → `1.0.0`",
        f"- `cp312 (manylinux_2_28_x86_64)` sha256 {sha(older)} → (none)",
        f"- `cp312 (manylinux_2_34_x86_64)` sha256 {sha(newer)} → {sha(rebuilt)}",
    ]

    local = kernels(tmp_path / "linux", "cp312-cp312-linux_x86_64")  # a build not for PyPI beside it
    changes = wheel_changes([newer], [rebuilt, local])
    assert (changes.wheels_dropped, changes.wheels_added) == ((), ("cp312 (linux_x86_64)",))
    lines, _ = from_to(changes, [rebuilt, local])
    assert lines == [
        "- version `1.0.0` → `1.0.0`",
        f"- `cp312 (linux_x86_64)` sha256 (none) → {sha(local)}",
        f"- `cp312 (manylinux_2_34_x86_64)` sha256 {sha(newer)} → {sha(rebuilt)}",
        "- wheels added: `cp312 (linux_x86_64)`",
    ]

    # the manylinux_2_28 build replaced by a linux_x86_64 one: one row, its platform's move said
    changes = wheel_changes([older, newer], [rebuilt, local])
    assert (changes.wheels_dropped, changes.wheels_added) == ((), ())
    assert changes.sha256 == (
        ("cp312 (manylinux_2_28_x86_64 → linux_x86_64)", older.sha256, local.sha256),
        ("cp312 (manylinux_2_34_x86_64)", newer.sha256, rebuilt.sha256),
    )
    assert changes.size_of(local.file) is not None and changes.size_of(local.file).old_size == older.size  # type: ignore[union-attr]


def test_every_wheel_moved_to_a_new_manylinux_floor_is_compared_with_the_one_it_replaces(tmp_path: Path) -> None:
    """A routine manylinux bump of an image of two variant wheels: each row says the move,
    nothing is said dropped, and sizes are compared."""
    olds = [
        kernels(tmp_path / f"old-{g}", "cp312-cp312-manylinux_2_28_x86_64", f"amd_{g}") for g in ("gfx942", "gfx950")
    ]
    news = [
        kernels(tmp_path / f"new-{g}", "cp312-cp312-manylinux_2_34_x86_64", f"amd_{g}", build=2)
        for g in ("gfx950", "gfx942")
    ]
    changes = wheel_changes(olds, news)
    assert (changes.wheels_dropped, changes.wheels_added, changes.variants) == ((), (), ())
    assert changes.sha256 == (
        ("cp312 (manylinux_2_28_x86_64 → manylinux_2_34_x86_64, variant amd_gfx942)", olds[0].sha256, news[1].sha256),
        ("cp312 (manylinux_2_28_x86_64 → manylinux_2_34_x86_64, variant amd_gfx950)", olds[1].sha256, news[0].sha256),
    )
    assert [changes.size_of(new.file).old_size for new in news] == [olds[1].size, olds[0].size]  # type: ignore[union-attr]
    lines, _ = from_to(changes, news)
    assert not [line for line in lines if "dropped" in line or "added" in line]


def test_a_free_threaded_wheel_beside_the_default_one_is_its_own_row(tmp_path: Path) -> None:
    default = kernels(tmp_path / "default", "cp313-cp313-manylinux_2_28_x86_64")
    free = kernels(tmp_path / "free", "cp313-cp313t-manylinux_2_28_x86_64")
    free_again = kernels(tmp_path / "free-again", "cp313-cp313t-manylinux_2_28_x86_64", build=2)
    changes = wheel_changes([free, default], [default, free_again])
    assert changes.sha256 == (
        ("cp313 (cp313)", default.sha256, default.sha256),
        ("cp313 (cp313t)", free.sha256, free_again.sha256),
    )


def test_where_the_python_tag_says_which_wheel_the_rows_are_as_ever(tmp_path: Path) -> None:
    """One wheel each is the same wheel, its platform tag moved or not; one wheel per
    python tag is named by its python tag alone."""
    older = kernels(tmp_path / "2_28", "cp312-cp312-manylinux_2_28_x86_64")
    newer = kernels(tmp_path / "2_34", "cp312-cp312-manylinux_2_34_x86_64")
    changes = wheel_changes([older], [newer])
    assert changes.sha256 == (("cp312", older.sha256, newer.sha256),)
    assert compared_size(changes, newer) == older.size
    lines, _ = from_to(changes, [newer])
    assert lines == ["- version `1.0.0` → `1.0.0`", f"- `cp312` sha256 {sha(older)} → {sha(newer)}"]

    cp311 = kernels(tmp_path / "cp311", "cp311-cp311-manylinux_2_28_x86_64")
    cp311_again = kernels(tmp_path / "cp311-again", "cp311-cp311-manylinux_2_28_x86_64", build=2)
    changes = wheel_changes([cp311, older], [newer, cp311_again])
    assert changes.sha256 == (
        ("cp311", cp311.sha256, cp311_again.sha256),
        ("cp312", older.sha256, newer.sha256),
    )
    lines, _ = from_to(changes, [cp311_again, newer])
    assert lines == [
        "- version `1.0.0` → `1.0.0`",
        f"- `cp311` sha256 {sha(cp311)} → {sha(cp311_again)}",
        f"- `cp312` sha256 {sha(older)} → {sha(newer)}",
    ]


def test_variant_wheels_of_two_platform_tags_one_dropped_is_no_variant_change(tmp_path: Path) -> None:
    """The gfx942 variant for two glibc floors, the older floor dropped: the label stays on
    the other wheel, so no variant line says it moved; the wheel dropped is said by its row."""
    older = kernels(tmp_path / "2_28", "cp312-cp312-manylinux_2_28_x86_64", "amd_gfx942")
    newer = kernels(tmp_path / "2_34", "cp312-cp312-manylinux_2_34_x86_64", "amd_gfx942")
    changes = wheel_changes([older, newer], [newer])
    assert changes.variants == ()
    lines, _ = from_to(changes, [newer])
    assert lines == [
        "- ⚠️ **wheels dropped: `cp312 (manylinux_2_28_x86_64)`**",
        "- version `1.0.0` → `1.0.0`",
        f"- `cp312 (manylinux_2_28_x86_64)` sha256 {sha(older)} → (none)",
        f"- `cp312 (manylinux_2_34_x86_64)` sha256 {sha(newer)} → {sha(newer)}",
    ]


def test_wheels_told_apart_by_their_build_tag_alone_are_paired_by_it(tmp_path: Path) -> None:
    """Two builds of one wheel (PEP 427's build tag, `-1-`, `-2-`), as an image records
    them: each new one is compared with the pinned one of its build tag, by file name."""

    def entry(version: str, build: str) -> WheelEntry:
        return replace(
            kernels(tmp_path / f"{version}-{build}"),
            file=f"kernels-{version}-{build}-cp312-cp312-manylinux_2_28_x86_64.whl",
            sha256=f"{version}{build}".ljust(64, "0"),
        )

    olds, news = [entry("1.0.0", "1"), entry("1.0.0", "2")], [entry("1.1.0", "2"), entry("1.1.0", "1")]
    changes = wheel_changes(olds, news)
    assert (changes.wheels_dropped, changes.wheels_added) == ((), ())
    assert changes.sha256 == (
        (news[1].file, olds[0].sha256, news[1].sha256),
        (news[0].file, olds[1].sha256, news[0].sha256),
    )


GFX90A = "amd :: gfx_arch :: gfx90a"


def variant_lines(lines: list[str]) -> list[str]:
    """The From → to lines of variant labels and properties (a row names a variant too)."""
    return [line for line in lines if "variant label" in line or "variant properties" in line]


def test_a_variant_wheel_beside_another_of_its_python_tag_says_its_properties_that_moved(tmp_path: Path) -> None:
    """The image holds the gfx942 and the gfx950 variant of one cp312 wheel; the gfx942 one
    is rebuilt with code for gfx90a too, and promises it. That wheel's line says so, named
    as its row is; the gfx950 one, unchanged, says nothing; and the way back is loud."""
    gfx942 = kernels(tmp_path / "942", label="amd_gfx942")
    gfx950 = kernels(tmp_path / "950", label="amd_gfx950")
    wider = kernels(tmp_path / "942-90a", label="amd_gfx942", build=2, targets=("gfx90a", "gfx942"))
    assert wider.variant_properties == (GFX90A, "amd :: gfx_arch :: gfx942")
    changes = wheel_changes([gfx942, gfx950], [gfx950, wider])
    assert (changes.wheels_added, changes.wheels_dropped) == ((), ())
    lines, _ = from_to(changes, [gfx950, wider])
    assert lines == [
        "- version `1.0.0` → `1.0.0`",
        f"- `cp312 (variant amd_gfx942)` sha256 {sha(gfx942)} → {sha(wider)}",
        f"- `cp312 (variant amd_gfx950)` sha256 {sha(gfx950)} → {sha(gfx950)}",
        "- GPU archs added: gfx90a",
        f"- variant properties of `cp312 (variant amd_gfx942)` added: `{GFX90A}`",
    ]

    lines, _ = from_to(wheel_changes([wider, gfx950], [gfx950, gfx942]), [gfx950, gfx942])
    assert lines[:2] == [
        "- ⚠️ **GPU archs dropped: gfx90a**",
        f"- ⚠️ **variant properties of `cp312 (variant amd_gfx942)` removed: `{GFX90A}`**",
    ]
    assert len(variant_lines(lines)) == 1


def test_variant_wheels_of_one_label_on_two_platform_floors_each_say_their_own_properties(tmp_path: Path) -> None:
    """Two wheels of one label, told apart by their platform tags: each is named by those."""
    old = [kernels(tmp_path / f"old-{f}", f"cp312-cp312-manylinux_{f}_x86_64", "amd_gfx942") for f in ("2_28", "2_34")]
    new = [
        kernels(tmp_path / "new-2_28", "cp312-cp312-manylinux_2_28_x86_64", "amd_gfx942", build=2),
        kernels(tmp_path / "new-2_34", "cp312-cp312-manylinux_2_34_x86_64", "amd_gfx942", targets=("gfx90a", "gfx942")),
    ]
    changes = wheel_changes(old, new)
    lines, _ = from_to(changes, new)
    assert variant_lines(lines) == [f"- variant properties of `cp312 (manylinux_2_34_x86_64)` added: `{GFX90A}`"]


def test_variant_wheels_rebuilt_with_the_same_properties_say_nothing_of_variants(tmp_path: Path) -> None:
    olds = [kernels(tmp_path / f"old-{g}", label=f"amd_{g}") for g in ("gfx942", "gfx950")]
    news = [kernels(tmp_path / f"new-{g}", label=f"amd_{g}", build=2) for g in ("gfx950", "gfx942")]
    changes = wheel_changes(olds, news)
    assert [new for _row, _old, new in changes.sha256] == [news[1].sha256, news[0].sha256]
    assert changes.variants == ()
    lines, _ = from_to(changes, news)
    assert variant_lines(lines) == []


def test_a_variant_wheel_replaced_by_one_of_another_label_is_a_label_change_not_a_property_change(
    tmp_path: Path,
) -> None:
    """gfx90a's wheel stays, gfx942's gives way to gfx950's: the two are one row (the one
    left on each side), but the properties of two labels' wheels are no change of either, so
    only the label's move is said. A property the staying wheel gains is still said."""
    gfx90a = kernels(tmp_path / "90a", label="amd_gfx90a")
    gfx942 = kernels(tmp_path / "942", label="amd_gfx942")
    gfx950 = kernels(tmp_path / "950", label="amd_gfx950")
    changes = wheel_changes([gfx90a, gfx942], [gfx90a, gfx950])
    assert [row for row, _old, _new in changes.sha256] == [
        "cp312 (variant amd_gfx90a)",
        "cp312 (variant amd_gfx942 → variant amd_gfx950)",
    ]
    assert [variant.properties for variant in changes.variants] == [()]
    lines, _ = from_to(changes, [gfx90a, gfx950])
    assert variant_lines(lines) == [
        "- ⚠️ **variant label of `cp312` changed: `amd_gfx90a`, `amd_gfx942` → `amd_gfx90a`, `amd_gfx950`**",
    ]

    wider = kernels(tmp_path / "90a-942", label="amd_gfx90a", build=2, targets=("gfx90a", "gfx942"))
    lines, _ = from_to(wheel_changes([gfx90a, gfx942], [wider, gfx950]), [wider, gfx950])
    assert variant_lines(lines)[1:] == [
        "- variant properties of `cp312 (variant amd_gfx90a)` added: `amd :: gfx_arch :: gfx942`"
    ]


def test_one_variant_wheel_per_python_tag_says_its_properties_as_ever(tmp_path: Path) -> None:
    """Where the python tag says which wheel, the lines name it alone (and nothing, with one
    wheel each), and a label's move brings the properties that moved with it."""
    cp311 = kernels(tmp_path / "cp311", "cp311-cp311-manylinux_2_28_x86_64", "amd_gfx942")
    gfx942 = kernels(tmp_path / "942", label="amd_gfx942")
    gfx950 = kernels(tmp_path / "950", label="amd_gfx950")
    lines, _ = from_to(wheel_changes([cp311, gfx942], [cp311, gfx950]), [cp311, gfx950])
    assert variant_lines(lines) == [
        "- ⚠️ **variant label of `cp312` changed: `amd_gfx942` → `amd_gfx950`**",
        "- ⚠️ **variant properties of `cp312` removed: `amd :: gfx_arch :: gfx942`**",
        "- variant properties of `cp312` added: `amd :: gfx_arch :: gfx950`",
    ]
    lines, _ = from_to(wheel_changes([gfx942], [gfx950]), [gfx950])
    assert variant_lines(lines) == [
        "- ⚠️ **variant label changed: `amd_gfx942` → `amd_gfx950`**",
        "- ⚠️ **variant properties removed: `amd :: gfx_arch :: gfx942`**",
        "- variant properties added: `amd :: gfx_arch :: gfx950`",
    ]


def test_one_wheel_each_of_another_python_tag_names_both_tags_on_its_sha256_row(tmp_path: Path) -> None:
    """One wheel each is the same wheel whatever its tags, but its sha256 row names the
    python tag each value belongs to: a cp311 wheel's sha256 is never said to be a py3
    wheel's when the pin's wheel became pure Python."""
    cp311 = kernels(tmp_path / "cp311", "cp311-cp311-manylinux_2_28_x86_64")
    py3 = kernels(tmp_path / "py3", "py3-none-any")
    changes = wheel_changes([cp311], [py3])
    assert changes.sha256 == (("cp311 → py3", cp311.sha256, py3.sha256),)
    assert changes.tags_dropped == ("cp311",) and changes.tags_added == ("py3",)
    lines, _ = from_to(changes, [py3])
    assert f"- `cp311 → py3` sha256 {sha(cp311)} → {sha(py3)}" in lines, lines

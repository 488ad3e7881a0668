"""Which wheel's sha256 a pin's sha256 ARG takes (core/pins/sha256.py), through `plan_bump` as
a pass's proposal and `pins bump --image` both take it: the wheel of the pin's python tag,
or the only wheel; and where the image holds several wheels for that key (variant wheels of
PEP 825, two platform tags, cp313 beside the free-threaded cp313t), a refusal before any
text is planned, never the sha256 of whichever wheel came last. The wheels are real zips,
read as a pass reads them (inspect_wheel, then the image's entry of each)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.core.config.model import Component
from bot.core.errors import VerificationError
from bot.core.image.oci import WheelEntry
from bot.core.pins.bump import Sha256Unknown, plan_bump
from bot.core.pins.sha256 import Several, held_sha256s, wheel_sha256s
from bot.core.wheel.report import inspect_wheel
from tests.fixtures.wheels import build_wheel

OLD = "registry.test/rocm/kernels:kernels-g11111111@sha256:" + "1" * 64
NEW = "registry.test/rocm/kernels:kernels-g22222222@sha256:" + "2" * 64
OLD_SHA = "0" * 64


def kernels(folder: Path, tag: str, label: str | None = None) -> WheelEntry:
    """A kernels 1.0.0 wheel of `tag` as its image records it; `label` makes it the variant
    wheel for that GPU (PEP 825: its label in the file name, its properties in variant.json)."""
    path = build_wheel(
        folder / tag / (label or "plain"),
        name="kernels",
        version="1.0.0",
        tag=tag,
        files={"kernels/__init__.py": f"BUILT = {tag!r}, {label!r}\n".encode()},
        variant=(label, {"amd": {"gfx_arch": [label.removeprefix("amd_")]}}) if label else None,
    )
    return WheelEntry.of_report(inspect_wheel(path))


def component(*pins: dict[str, str]) -> Component:
    return Component.model_validate(
        {
            "name": "kernels",
            "upstream": {"repo": "https://github.com/o/kernels", "branch": "main"},
            "wheel": {"distribution": "kernels"},
            "build": {"command": "make"},
            "image": {"repository": "registry.test/rocm/kernels", "tag": "kernels-g{sha8}"},
            "pins": [{"file": "Dockerfile", "image_arg": "KERNELS_IMAGE", **pin} for pin in pins],
        }
    )


def dockerfile(*sha256_args: str) -> str:
    return (
        f'ARG KERNELS_IMAGE="{OLD}"\n'
        + "".join(f"ARG {arg}={OLD_SHA}\n" for arg in sha256_args)
        + "FROM ${KERNELS_IMAGE} AS kernels\n"
    )


CP312 = {"sha256_arg": "KERNELS_SHA256_CP312", "python_tag": "cp312"}
CP311 = {"sha256_arg": "KERNELS_SHA256_CP311", "python_tag": "cp311"}
ONLY = {"sha256_arg": "KERNELS_SHA256"}


def two_of_one_tag(folder: Path, shape: str) -> tuple[str, list[WheelEntry]]:
    """The python tag two wheels share, and the two, in each shape an image can hold them."""
    if shape == "variants":
        return "cp312", [
            kernels(folder, "cp312-cp312-manylinux_2_28_x86_64", "amd_gfx942"),
            kernels(folder, "cp312-cp312-manylinux_2_28_x86_64", "amd_gfx950"),
        ]
    if shape == "platforms":
        return "cp312", [
            kernels(folder, "cp312-cp312-manylinux_2_28_x86_64"),
            kernels(folder, "cp312-cp312-manylinux_2_34_x86_64"),
        ]
    return "cp313", [  # free-threaded: its ABI is cp313t, its python tag cp313 all the same
        kernels(folder, "cp313-cp313-manylinux_2_28_x86_64"),
        kernels(folder, "cp313-cp313t-manylinux_2_28_x86_64"),
    ]


@pytest.mark.parametrize("shape", ["variants", "platforms", "free-threaded"])
def test_a_sha256_arg_of_a_tag_the_image_holds_two_wheels_for_is_refused(tmp_path: Path, shape: str) -> None:
    tag, wheels = two_of_one_tag(tmp_path, shape)
    arg = f"KERNELS_SHA256_{tag.upper()}"
    first, second = sorted(wheel.file for wheel in wheels)
    for order in (wheels, wheels[::-1]):  # neither wheel is taken, whichever comes last
        assert wheel_sha256s(order)[tag] == Several((first, second))
        with pytest.raises(VerificationError) as refused:
            plan_bump(
                component({"sha256_arg": arg, "python_tag": tag}),
                {"Dockerfile": dockerfile(arg)},
                NEW,
                wheel_sha256s(order),
            )
        assert refused.value.message == (
            (  # no python_tag tells variant wheels apart: dropping the ARG is what resolves it
                f"Dockerfile:2: {arg} takes the sha256 of the {tag} wheel, but the image holds 2 variant wheels "
                f"of {tag} (amd_gfx942, amd_gfx950: {first}, {second}), and a sha256 ARG names its wheel by "
                "python tag, never by variant label: drop the pin's sha256_arg (its image pin alone moves to an "
                f"image of any wheels), or have the component's image hold one {tag} wheel"
            )
            if shape == "variants"
            else (
                f"Dockerfile:2: {arg} takes the sha256 of the {tag} wheel, but the image holds 2 {tag} wheels "
                f"({first}, {second}), and a sha256 ARG names its wheel by python tag alone: the component's "
                f"image must hold one {tag} wheel for this pin to be written, or the pin must drop its sha256_arg"
            )
        )
        assert refused.value.problems == (refused.value.message,)


def test_a_sha256_arg_of_no_tag_is_refused_when_the_image_holds_several_wheels(tmp_path: Path) -> None:
    wheels = [kernels(tmp_path, "cp311-cp311-manylinux_2_28_x86_64"), kernels(tmp_path, "cp312-cp312-linux_x86_64")]
    with pytest.raises(VerificationError) as refused:
        plan_bump(component(ONLY), {"Dockerfile": dockerfile("KERNELS_SHA256")}, NEW, wheel_sha256s(wheels))
    assert refused.value.message == (
        "Dockerfile:2: KERNELS_SHA256 takes the sha256 of the image's only wheel, but the image holds 2 wheels "
        "(kernels-1.0.0-cp311-cp311-manylinux_2_28_x86_64.whl, kernels-1.0.0-cp312-cp312-linux_x86_64.whl): "
        "give the pin the python_tag of the wheel its Dockerfile installs (the image must hold one wheel of "
        "that tag), or drop its sha256_arg"
    )


def test_the_refusal_names_the_pin_whose_tag_is_ambiguous_and_no_file_is_planned(tmp_path: Path) -> None:
    """cp311 has one wheel and cp312 two: the cp311 pin would be fine, the cp312 one is
    refused, and the bump plans nothing (its caller writes every file or none)."""
    _, cp312s = two_of_one_tag(tmp_path, "platforms")
    wheels = [kernels(tmp_path, "cp311-cp311-manylinux_2_28_x86_64"), *cp312s]
    text = dockerfile("KERNELS_SHA256_CP311", "KERNELS_SHA256_CP312")
    with pytest.raises(VerificationError, match=r"^Dockerfile:3: KERNELS_SHA256_CP312 takes .* 2 cp312 wheels"):
        plan_bump(component(CP311, CP312), {"Dockerfile": text}, NEW, wheel_sha256s(wheels))


def test_one_wheel_per_tag_takes_each_its_own_sha256(tmp_path: Path) -> None:
    cp311 = kernels(tmp_path, "cp311-cp311-manylinux_2_28_x86_64")
    cp312 = kernels(tmp_path, "cp312-cp312-manylinux_2_28_x86_64")
    for order in ([cp311, cp312], [cp312, cp311]):
        assert wheel_sha256s(order) == {
            "cp311": cp311.sha256,
            "cp312": cp312.sha256,
            None: Several((cp311.file, cp312.file)),
        }
        bump = plan_bump(
            component(CP311, CP312),
            {"Dockerfile": dockerfile("KERNELS_SHA256_CP311", "KERNELS_SHA256_CP312")},
            NEW,
            wheel_sha256s(order),
        )
        assert [(edit.line, edit.new) for edit in bump.edits] == [(1, NEW), (2, cp311.sha256), (3, cp312.sha256)]


def test_the_only_wheel_is_every_key_of_its_own(tmp_path: Path) -> None:
    only = kernels(tmp_path, "cp312-cp312-manylinux_2_28_x86_64", "amd_gfx942")
    assert wheel_sha256s([only]) == {"cp312": only.sha256, None: only.sha256}
    bump = plan_bump(component(ONLY), {"Dockerfile": dockerfile("KERNELS_SHA256")}, NEW, wheel_sha256s([only]))
    assert [(edit.line, edit.new) for edit in bump.edits] == [(1, NEW), (2, only.sha256)]


@pytest.mark.parametrize("shape", ["variants", "platforms", "free-threaded"])
def test_an_image_pin_alone_moves_whatever_wheels_the_image_holds(tmp_path: Path, shape: str) -> None:
    _, wheels = two_of_one_tag(tmp_path, shape)
    bump = plan_bump(component({}), {"Dockerfile": dockerfile()}, NEW, wheel_sha256s(wheels))
    assert [(edit.line, edit.new) for edit in bump.edits] == [(1, NEW)]


def test_a_sha256_given_by_hand_is_taken_as_given(tmp_path: Path) -> None:
    """`pins bump --sha256 cp312=HEX`: the user names the wheel; nothing is read or guessed."""
    given = "f" * 64
    bump = plan_bump(component(CP312), {"Dockerfile": dockerfile("KERNELS_SHA256_CP312")}, NEW, {"cp312": given})
    assert [(edit.line, edit.new) for edit in bump.edits] == [(1, NEW), (2, given)]
    with pytest.raises(Sha256Unknown, match="the cp312 wheel, which the image does not say$") as unknown:
        plan_bump(component(CP312), {"Dockerfile": dockerfile("KERNELS_SHA256_CP312")}, NEW, {"cp311": given})
    assert unknown.value.python_tag == "cp312"  # `pins bump` says how to give it; a pass has no --sha256


def test_an_only_wheel_sha256_arg_moved_to_a_wheel_of_another_python_tag_says_so(tmp_path: Path) -> None:
    """A pin taking the image's only wheel, whose pinned wheel was cp311, bumped to an image
    of one py3 wheel: the bump writes the py3 wheel's sha256 (it installs where the cp311
    one did) and says that the ARG now holds it, file:line and ARG named, where the bump
    reads the pinned image's wheels; the same python tag on both sides says nothing."""
    cp311 = kernels(tmp_path, "cp311-cp311-manylinux_2_28_x86_64")
    py3 = kernels(tmp_path, "py3-none-any")
    text = dockerfile("KERNELS_SHA256").replace(OLD_SHA, cp311.sha256)
    asked: list[str] = []

    def pinned() -> dict[str | None, str | Several]:
        asked.append("pinned")
        return wheel_sha256s([cp311])

    plan = plan_bump(component(ONLY), {"Dockerfile": text}, NEW, wheel_sha256s([py3]), pinned=pinned)
    assert [(edit.what, edit.new) for edit in plan.edits] == [("image", NEW), ("sha256", py3.sha256)]
    assert plan.tags_moved == (
        "Dockerfile:2 KERNELS_SHA256 now holds the py3 wheel's sha256: no cp311 wheel in the image "
        "(the pin takes its only wheel)",
    )
    assert asked == ["pinned"]
    again = kernels(tmp_path / "again", "cp311-cp311-manylinux_2_34_x86_64")  # another cp311 wheel
    assert plan_bump(component(ONLY), {"Dockerfile": text}, NEW, wheel_sha256s([again]), pinned=pinned).tags_moved == ()
    # not known: the pinned image not read, or its wheels not holding the sha256 the ARG holds
    assert plan_bump(component(ONLY), {"Dockerfile": text}, NEW, wheel_sha256s([py3])).tags_moved == ()
    other = dockerfile("KERNELS_SHA256")
    assert plan_bump(component(ONLY), {"Dockerfile": other}, NEW, wheel_sha256s([py3]), pinned=pinned).tags_moved == ()


def test_a_pinned_wheel_whose_file_name_does_not_parse_tells_nothing_and_stops_nothing(tmp_path: Path) -> None:
    """An image another tool pushed may name its wheel so that its version does not parse:
    which wheel the ARG held is then not known, and the bump goes on without a word."""
    cp311 = kernels(tmp_path, "cp311-cp311-manylinux_2_28_x86_64")
    odd = replace(cp311, file="kernels-nightly-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert held_sha256s([odd]) == {} and held_sha256s([cp311])[None] == cp311.sha256
    py3 = kernels(tmp_path, "py3-none-any")
    text = dockerfile("KERNELS_SHA256").replace(OLD_SHA, cp311.sha256)
    plan = plan_bump(component(ONLY), {"Dockerfile": text}, NEW, wheel_sha256s([py3]), pinned=held_sha256s([odd]))
    assert plan.tags_moved == () and [edit.new for edit in plan.edits][-1] == py3.sha256

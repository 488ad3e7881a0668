"""Variant wheels (PEP 825, draft; PEP 817 the wider design): a variant label after the
platform tag in the file name, `*.dist-info/variant.json` mapping it to properties
`namespace :: feature :: value`. wheelpin reads the label and the properties, says them
(`wheel inspect`, its `--json`, the image's wheel entries, the proposal), and holds the
AMD variant provider's `amd :: gfx_arch` properties to the code objects found
(core/checks/variant.py). The wheels are real zips built here, with a HIP library written
by core/wheel/hipstub.py: an x86-64 ELF whose offload bundle holds gfx942 code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.core.checks.rules import WheelRules, kinded_problems
from bot.core.image.oci import WheelEntry, tags_of
from bot.core.proposal.text import ProposalFacts, body
from bot.core.proposal.wheeldiff import wheel_changes
from bot.core.wheel.hipstub import hip_library
from bot.core.wheel.metadata import WheelName, split_variant_label
from bot.core.wheel.report import inspect_wheel
from tests.cli import wheelpin
from tests.fixtures.proposals import from_to as from_to_lines
from tests.fixtures.proposals import kernels_body
from tests.fixtures.servers import Registry
from tests.fixtures.wheels import build_wheel

TAG = "cp312-cp312-manylinux_2_28_x86_64"


def variant_wheel(
    folder: Path,
    label: str | None,
    properties: dict[str, dict[str, list[str]]] | None = None,
    *,
    targets: tuple[str, ...] = ("gfx942",),
) -> Path:
    library = hip_library(soname="libkernels.so", needed=["libamdhip64.so.7", "libc.so.6"], targets=targets)
    return build_wheel(
        folder,
        name="kernels",
        version="1.0.0",
        tag=TAG,
        files={"kernels/__init__.py": b"", "kernels/libkernels.so": library},
        variant=(label, properties or {}) if label is not None else None,
    )


@pytest.mark.parametrize(
    ("filename", "plain", "label"),
    [
        (f"kernels-1.0.0-{TAG}-amd_gfx942.whl", f"kernels-1.0.0-{TAG}.whl", "amd_gfx942"),
        (f"kernels-1.0.0-1-{TAG}-gfx942.whl", f"kernels-1.0.0-1-{TAG}.whl", "gfx942"),  # a build tag too
        (
            "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64-null.whl",
            "numpy-2.3.2-cp313-cp313t-musllinux_1_2_x86_64.whl",
            "null",
        ),  # PEP 825's own example of the null variant
        (f"kernels-1.0.0-1-{TAG}.whl", f"kernels-1.0.0-1-{TAG}.whl", None),  # a build tag, no label
        (f"kernels-1.0.0-{TAG}.whl", f"kernels-1.0.0-{TAG}.whl", None),
    ],
)
def test_the_label_is_taken_off_and_packaging_reads_the_rest(filename: str, plain: str, label: str | None) -> None:
    assert split_variant_label(filename) == (plain, label)
    name = WheelName.parse(filename)
    assert name.variant == label and name.tag_strings == [
        TAG if "kernels" in filename else "cp313-cp313t-musllinux_1_2_x86_64"
    ]
    assert tags_of(filename) == tuple(name.tag_strings)


@pytest.mark.parametrize("label", ["GFX942", "a" * 17, "gfx-942"])
def test_a_label_pep_825_does_not_allow_is_no_wheel_name(label: str) -> None:
    with pytest.raises(ValueError, match="is not a wheel file name"):
        WheelName.parse(f"kernels-1.0.0-{TAG}-{label}.whl")


def test_a_variant_wheel_s_label_and_properties_are_read_and_recorded(tmp_path: Path) -> None:
    wheel = variant_wheel(tmp_path, "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"], "rocm_version": ["7.2"]}})
    report = inspect_wheel(wheel)
    assert report.integrity == () and report.archs == ["gfx942"]
    assert report.variant is not None and report.variant.label == "amd_gfx942"
    assert report.variant.properties == ("amd :: gfx_arch :: gfx942", "amd :: rocm_version :: 7.2")
    assert kinded_problems(report, WheelRules()) == []
    entry = WheelEntry.of_report(report)
    assert (entry.variant, entry.variant_properties) == ("amd_gfx942", report.variant.properties)
    assert WheelEntry.from_json(entry.to_json()) == entry  # what the image's annotation keeps


def test_a_property_promising_a_target_without_code_is_refused_in_one_sentence(tmp_path: Path) -> None:
    wheel = variant_wheel(tmp_path, "amd_mi3xx", {"amd": {"gfx_arch": ["gfx942", "gfx950"]}})
    found = kinded_problems(inspect_wheel(wheel), WheelRules())
    assert [(f.kind, f.text) for f in found] == [
        (
            "variant",
            "variant amd_mi3xx promises gfx942, gfx950, but kernels/libkernels.so has no code for gfx950 "
            "(it carries gfx942)",
        )
    ]
    assert kinded_problems(inspect_wheel(wheel), WheelRules(allow_variant_mismatch=True)) == []


def test_wheel_inspect_shows_the_variant_and_refuses_a_broken_promise(tmp_path: Path) -> None:
    good = variant_wheel(tmp_path / "good", "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
    shown = wheelpin("wheel", "inspect", str(good))
    assert shown.code == 0, shown.stderr
    assert "  variant   amd_gfx942\n    amd :: gfx_arch :: gfx942\n" in shown.stdout
    data = wheelpin("wheel", "inspect", str(good), "--json").json()
    assert data["variant"] == {"label": "amd_gfx942", "properties": ["amd :: gfx_arch :: gfx942"]}

    bad = variant_wheel(tmp_path / "bad", "amd_gfx950", {"amd": {"gfx_archs": ["gfx950"]}})
    refused = wheelpin("wheel", "inspect", str(bad), "--json")
    assert refused.code == 1
    assert refused.json()["problems"] == [
        "variant amd_gfx950 promises gfx950, but kernels/libkernels.so has no code for gfx950 (it carries gfx942)"
    ]
    assert wheelpin("wheel", "inspect", str(bad), "--allow-variant-mismatch").code == 0


def test_other_namespaces_and_the_null_variant_promise_no_gpu_target(tmp_path: Path) -> None:
    x86 = inspect_wheel(variant_wheel(tmp_path / "x86", "x8664v3", {"x86_64": {"level": ["v3"]}}))
    null = inspect_wheel(variant_wheel(tmp_path / "null", "null"))
    assert null.variant is not None and null.variant.properties == ()
    assert kinded_problems(x86, WheelRules()) == kinded_problems(null, WheelRules()) == []


def test_a_variant_wheel_without_its_variant_json_or_label_is_a_problem_of_its_own(tmp_path: Path) -> None:
    plain = variant_wheel(tmp_path / "plain", None)
    renamed = plain.rename(plain.with_name(plain.name.removesuffix(".whl") + "-amd_gfx942.whl"))
    assert inspect_wheel(renamed).integrity == (
        "the file name carries variant label 'amd_gfx942' but kernels-1.0.0.dist-info/variant.json is missing",
    )

    other = variant_wheel(tmp_path / "other", "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
    relabelled = other.rename(other.with_name(other.name.replace("amd_gfx942", "amd_gfx950")))
    assert inspect_wheel(relabelled).integrity == (
        "kernels-1.0.0.dist-info/variant.json does not list the file name's variant label 'amd_gfx950' "
        "under `variants`",
    )
    refused = wheelpin("wheel", "inspect", str(relabelled))
    assert refused.code == 1 and "does not list the file name's variant label" in refused.stdout

    labelled = variant_wheel(tmp_path / "unlabelled", "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
    unlabelled = inspect_wheel(labelled.rename(labelled.with_name(labelled.name.replace("-amd_gfx942", ""))))
    assert unlabelled.variant is None and unlabelled.integrity == ()  # PEP 825: no label, no variant wheel
    assert unlabelled.notes == (
        "kernels-1.0.0.dist-info/variant.json is there but the file name carries no variant "
        "label, so it is no variant wheel",
    )

    bad_value = variant_wheel(tmp_path / "bad", "amd_x", {"amd": {"gfx_arch": ["GFX942"]}})
    assert inspect_wheel(bad_value).integrity == (
        "kernels-1.0.0.dist-info/variant.json has a value amd :: gfx_arch :: 'GFX942' that PEP 825 does not allow",
    )


def test_the_proposal_says_each_variant_wheel_s_label_and_properties(tmp_path: Path) -> None:
    wheel = variant_wheel(tmp_path, "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
    entry = WheelEntry.of_report(inspect_wheel(wheel))
    text = body(
        ProposalFacts(
            component="kernels",
            upstream="https://github.com/o/kernels",
            old_commit=None,
            new_commit="a" * 40,
            version="1.0.0",
            image="r/kernels:1@sha256:" + "b" * 64,
            wheels=(entry,),
        )
    )
    assert (f"Variants:\n- `{wheel.name}`: variant `amd_gfx942`, `amd :: gfx_arch :: gfx942`\n") in text


def test_a_published_variant_wheel_s_image_says_it_and_a_broken_promise_publishes_nothing(
    tmp_path: Path, registry: Registry
) -> None:
    """Through the real loopback registry, as a user publishes and looks: the image
    records the label, the properties and the installed size; `image show` says them and
    the image's own size."""
    env = {"WHEELPIN_CACHE_DIR": str(tmp_path / "cache")}
    bad = variant_wheel(tmp_path / "bad", "amd_gfx950", {"amd": {"gfx_arch": ["gfx950"]}})
    refused = wheelpin("image", "publish", str(bad), "--to", f"{registry.host}/variants/kernels:bad", env=env)
    (said,) = [line for line in refused.stderr.splitlines() if line.startswith("wheelpin:")]
    assert (
        refused.code == 1
        and "variant amd_gfx950 promises gfx950, but kernels/libkernels.so has no code for gfx950 (it carries gfx942)"
        in said
    ), refused.stderr
    assert wheelpin("image", "show", f"{registry.host}/variants/kernels:bad", env=env).code != 0

    good = variant_wheel(tmp_path / "good", "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
    published = wheelpin("image", "publish", str(good), "--to", f"{registry.host}/variants/kernels:good", env=env)
    assert published.code == 0, published.stderr
    shown = wheelpin("image", "show", f"{registry.host}/variants/kernels:good", "--json", env=env).json()
    (recorded,) = shown["wheels"]
    report = inspect_wheel(good)
    assert recorded["variant"] == {"label": "amd_gfx942", "properties": ["amd :: gfx_arch :: gfx942"]}
    assert recorded["installed"] == report.installed_size and shown["size"] > report.size
    text = wheelpin("image", "show", f"{registry.host}/variants/kernels:good", env=env).stdout
    assert "    variant amd_gfx942: amd :: gfx_arch :: gfx942\n" in text and "  installed " in text


def from_to(pinned: list[WheelEntry], new: list[WheelEntry]) -> list[str]:
    """The proposal's From → to lines for a move from `pinned` to `new`."""
    return from_to_lines(kernels_body(wheel_changes(pinned, new), new))


def test_a_change_of_variant_label_is_called_out_with_the_properties_that_moved(tmp_path: Path) -> None:
    pinned = variant_wheel(tmp_path / "old", "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}})
    new = variant_wheel(
        tmp_path / "new", "amd_gfx942_950", {"amd": {"gfx_arch": ["gfx942", "gfx950"]}}, targets=("gfx942", "gfx950")
    )
    lines = from_to([WheelEntry.of_report(inspect_wheel(pinned))], [WheelEntry.of_report(inspect_wheel(new))])
    assert lines[0] == "- ⚠️ **variant label changed: `amd_gfx942` → `amd_gfx942_950`**"
    assert "- variant properties added: `amd :: gfx_arch :: gfx950`" in lines
    assert not any("removed" in line for line in lines)

    narrower = variant_wheel(
        tmp_path / "narrower", "amd_gfx950", {"amd": {"gfx_arch": ["gfx950"]}}, targets=("gfx950",)
    )
    lines = from_to([WheelEntry.of_report(inspect_wheel(new))], [WheelEntry.of_report(inspect_wheel(narrower))])
    assert lines[:3] == [
        "- ⚠️ **GPU archs dropped: gfx942**",  # the code objects found
        "- ⚠️ **variant label changed: `amd_gfx942_950` → `amd_gfx950`**",
        "- ⚠️ **variant properties removed: `amd :: gfx_arch :: gfx942`**",
    ]


def test_a_wheel_that_becomes_a_variant_wheel_says_so_and_nothing_else_of_properties(tmp_path: Path) -> None:
    plain = WheelEntry.of_report(inspect_wheel(variant_wheel(tmp_path / "plain", None)))
    labelled = WheelEntry.of_report(
        inspect_wheel(variant_wheel(tmp_path / "labelled", "amd_gfx942", {"amd": {"gfx_arch": ["gfx942"]}}))
    )
    assert from_to([plain], [labelled])[0] == "- ⚠️ **variant label changed: none (no variant wheel) → `amd_gfx942`**"
    assert from_to([labelled], [plain])[0] == "- ⚠️ **variant label changed: `amd_gfx942` → none (no variant wheel)**"
    assert not any("properties" in line for line in from_to([plain], [labelled]))


def test_no_variant_line_when_the_label_stays_or_neither_wheel_has_one(tmp_path: Path) -> None:
    """A false line costs trust: the same label (even where the pinned image is an older
    one that recorded no variant, and only its file name says it), and two wheels that are
    no variant wheels, say nothing of variants."""
    properties = {"amd": {"gfx_arch": ["gfx942"]}}
    old = WheelEntry.of_report(inspect_wheel(variant_wheel(tmp_path / "old", "amd_gfx942", properties)))
    new = replace(old, sha256="f" * 64, size=old.size + 1)
    assert not any("variant" in line for line in from_to([old], [new]))
    unrecorded = replace(old, variant=None, variant_properties=())  # only the file name says it
    assert not any("variant" in line for line in from_to([unrecorded], [new]))
    plain = WheelEntry.of_report(inspect_wheel(variant_wheel(tmp_path / "plain", None)))
    assert not any("variant" in line for line in from_to([plain], [replace(plain, sha256="f" * 64)]))
    assert wheel_changes([plain], [replace(plain, sha256="f" * 64)]).variants == ()


def test_with_several_wheels_the_python_tag_says_which_variant_moved() -> None:
    def wheel(tag: str, label: str | None, properties: tuple[str, ...] = ()) -> WheelEntry:
        suffix = f"-{label}" if label else ""
        return WheelEntry(
            f"kernels-1.0.0-{tag}-{tag}-manylinux_2_28_x86_64{suffix}.whl",
            "e" * 64,
            1000,
            "kernels",
            "1.0.0",
            (),
            variant=label,
            variant_properties=properties,
        )

    gfx942 = ("amd :: gfx_arch :: gfx942",)
    pinned = [wheel("cp311", "amd_gfx942", gfx942), wheel("cp312", "amd_gfx942", gfx942)]
    new = [wheel("cp311", "amd_gfx942", gfx942), wheel("cp312", "amd_gfx950", ("amd :: gfx_arch :: gfx950",))]
    lines = from_to(pinned, new)
    assert [line for line in lines if "variant" in line] == [
        "- ⚠️ **variant label of `cp312` changed: `amd_gfx942` → `amd_gfx950`**",
        "- ⚠️ **variant properties of `cp312` removed: `amd :: gfx_arch :: gfx942`**",
        "- variant properties of `cp312` added: `amd :: gfx_arch :: gfx950`",
    ]


def test_a_null_variant_with_properties_is_a_problem_of_its_own(tmp_path: Path) -> None:
    """PEP 825 reserves the label `null` for the variant of zero properties, the fallback
    every system fits (and the wheel set rule lets stand beside the variants for it)."""
    wheel = variant_wheel(tmp_path / "null", "null", {"amd": {"gfx_arch": ["gfx942"]}})
    assert inspect_wheel(wheel).integrity == (
        "kernels-1.0.0.dist-info/variant.json gives the null variant the property amd :: gfx_arch :: gfx942, "
        "but PEP 825 reserves the label `null` for the variant with zero properties, which every system fits",
    )

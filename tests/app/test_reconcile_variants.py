"""Variant wheels (PEP 825) through a pass, end to end on the local platform (real git
repositories, the upstream's own build script, an OCI layout folder): an upstream that
builds one wheel per CPU level for one python tag, told apart by their variant label, has
them published in one image and proposed with one row each; `wheel.variants` refuses a
build missing a label it lists, and a sha256 ARG, which names its wheel by python tag alone,
is refused in one sentence saying the variant case."""

from __future__ import annotations

import re

from bot.adapters.git import git
from bot.adapters.imageread import read_image
from bot.adapters.imagestore import LayoutStore
from bot.commands.demo import BUILD_SCRIPT
from tests.app.worlds import BRANCH, World, component

# The demo's build script, building its wheel once per x86-64 level for CPython 3.12, as
# PEP 825's own example labels them: `x8664v3` with the property `x86_64 :: level :: v3`,
# written to `*.dist-info/variant.json` in the PEP's shape (its draft schema URL, the
# namespaces' default priorities, the label's properties) and named after the platform tag.
_EACH_PLATFORM = 'platform = "linux_x86_64" if any(path.endswith(".so") for path in files) else "any"\n'
_HEAD, _TAIL = BUILD_SCRIPT.split(_EACH_PLATFORM)
_VARIANT_JSON = (
    'files[f"{dist}/variant.json"] = json.dumps({"$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json", '
    '"default-priorities": {"namespace": ["x86_64"]}, "variants": {label: {"x86_64": {"level": [level]}}}}).encode()\n'
)
VARIANT_WHEELS = (
    _HEAD.replace("import base64,", "import base64, json,")
    + "sources = dict(files)\n"
    + 'for label, level in (("x8664v3", "v3"), ("x8664v4", "v4")):\n'
    + "    files = dict(sources)\n"
    + '    platform = "linux_x86_64"\n'
    + "".join(
        f"    {line}\n" if line else "\n"
        for line in _TAIL.replace("py3-none-", "cp312-cp312-")
        .replace('{platform}.whl")', '{platform}-{label}.whl")')
        .replace("def digest(data):", _VARIANT_JSON + "def digest(data):")
        .splitlines()
    )
)
NO_SHA256 = ', sha256_arg = "DEMO_WHEEL_SHA256"'


def drop_the_sha256_pin(world: World) -> None:
    dockerfile = world.downstream / "docker" / "Dockerfile"
    dockerfile.write_text("".join(line for line in dockerfile.read_text().splitlines(True) if "SHA256" not in line))
    world.set_config(NO_SHA256, "")  # commits the Dockerfile too


def test_variant_wheels_of_one_python_tag_are_published_in_one_image_and_proposed_one_row_each(
    world: World,
) -> None:
    drop_the_sha256_pin(world)
    world.set_config('distribution = "demo-cache"', 'distribution = "demo-cache", python_tags = ["cp312"]')
    head = world.commit_upstream("a wheel per x86-64 level", {"VERSION": "0.1.1\n", "build_wheel.py": VARIANT_WHEELS})
    proposed = world.reconcile()
    assert component(proposed)["status"] == "done", proposed.stdout + proposed.stderr
    digest = re.search(rf"g{head[:8]}@(sha256:[0-9a-f]{{64}})", world.branch_file())
    assert digest is not None, world.branch_file()
    wheels = read_image(LayoutStore(world.root / "images"), digest.group(1)).wheels
    assert sorted((wheel.file.rsplit("-", 1)[1], wheel.variant_properties) for wheel in wheels) == [
        ("x8664v3.whl", ("x86_64 :: level :: v3",)),
        ("x8664v4.whl", ("x86_64 :: level :: v4",)),
    ]
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "cp312 (variant x8664v3)" in body and "cp312 (variant x8664v4)" in body, body
    assert "- ✅ one wheel each for cp312 and variant label\n" in body


def test_wheel_variants_refuses_a_build_missing_a_label_before_publishing(world: World) -> None:
    drop_the_sha256_pin(world)
    world.set_config(
        'distribution = "demo-cache"', 'distribution = "demo-cache", variants = ["x8664v2", "x8664v3", "x8664v4"]'
    )
    world.commit_upstream("a wheel per x86-64 level", {"VERSION": "0.1.1\n", "build_wheel.py": VARIANT_WHEELS})
    refused = world.reconcile()
    assert refused.code == 1
    message = component(refused)["messages"][-1]
    assert "nothing published" in message and "cp312 has no wheel of variant x8664v2" in message, message
    assert world.branch() is None and len(world.layout_tags()) == 1

    world.set_config('"x8664v2", ', "")
    proposed = world.reconcile()
    assert component(proposed)["status"] == "done", proposed.stdout + proposed.stderr
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "for each python tag, one wheel each of variant x8664v3 and variant x8664v4" in body, body


def test_a_sha256_arg_over_variant_wheels_is_refused_saying_the_variant_case(world: World) -> None:
    world.commit_upstream("a wheel per x86-64 level", {"VERSION": "0.1.1\n", "build_wheel.py": VARIANT_WHEELS})
    refused = world.reconcile()
    said = component(refused)
    assert refused.code == 1 and said["error_kind"] == "verification", refused.stdout
    (sentence,) = said["problems"]
    assert sentence.startswith("docker/Dockerfile:3: DEMO_WHEEL_SHA256 takes the sha256 of the image's only wheel")
    assert "2 variant wheels of cp312 (x8664v3, x8664v4: " in sentence, sentence
    assert (
        "a sha256 ARG names its wheel by python tag, never by variant label: drop the pin's sha256_arg" in sentence
    ), sentence
    assert world.branch() is None  # no sha256 was guessed

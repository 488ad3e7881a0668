"""`config validate --online` against the real things a pass speaks to: a git upstream on
disk, Debian's `docker-registry` on loopback (plain, and with htpasswd auth), a closed
loopback port for a registry or upstream that refuses the connection. Each failing case is
a config offline `config validate` accepts; the sentence it gets is written out in full."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

import pytest

from bot.adapters.configdisk import load_config
from bot.adapters.imageread import FACTS_FORMAT
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.publisher import publish
from bot.adapters.referrers import Subject, attach, fallback_tag, is_attachment_tag
from bot.adapters.registry import RegistryClient
from bot.core.checks.digest import rules_digest
from bot.core.image.oci import MANIFEST_TYPE
from bot.core.wheel.hipstub import hip_library
from bot.core.wheel.report import inspect_wheel
from tests.adapters.test_consumer import push_busybox
from tests.app.worlds import World, make_world
from tests.cli import Result, wheelpin
from tests.fixtures.faultproxy import FaultProxy
from tests.fixtures.foreignpush import push_foreign
from tests.fixtures.servers import Registry, free_port
from tests.fixtures.wheels import build_wheel

ZEROS = "sha256:" + "0" * 64


@pytest.fixture()
def world(tmp_path: Path, registry: Registry) -> World:
    """The demo's upstream and downstream, its first wheel image pushed to the real registry."""
    return make_world(tmp_path, registry=f"{registry.host}/online-{uuid.uuid4().hex[:8]}/demo-cache")


def validate(world: World, *args: str) -> Result:
    return wheelpin("config", "validate", "--repo", str(world.downstream), *args, env=world.env)


def edit(world: World, file: str, old: str, new: str) -> None:
    """Change the working tree (validate reads it there): `old` must be in `file`."""
    path = world.downstream / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))


def pinned(world: World) -> str:
    """The reference the downstream pins, `host/path:tag@sha256:…`."""
    line = next(
        line
        for line in (world.downstream / "docker/Dockerfile").read_text().splitlines()
        if line.startswith("ARG DEMO_WHEEL_IMAGE=")
    )
    return line.split("=", 1)[1].strip('"')


def repository(world: World) -> str:
    return pinned(world).split(":")[0] + ":" + pinned(world).split(":")[1]


def write_arg(world: World, name: str, value: str) -> None:
    """Give the ARG `name` of the Dockerfile's working tree the default `value`."""
    path = world.downstream / "docker/Dockerfile"
    text, count = re.subn(rf"^ARG {name}=.*$", f"ARG {name}={value}", path.read_text(), count=1, flags=re.M)
    assert count == 1
    path.write_text(text)


def sha256_of(file: Path) -> str:
    return hashlib.sha256(file.read_bytes()).hexdigest()


def sentences(result: Result, outcome: str) -> list[str]:
    return [check["sentence"] for check in result.json()["online"]["checks"] if check["outcome"] == outcome]


def assert_offline_valid(world: World) -> None:
    offline = validate(world)
    assert offline.code == 0, offline.stderr


def test_a_good_config_answers_every_check(world: World, registry: Registry) -> None:
    base = push_busybox(registry)
    with (world.downstream / "wheelpin.toml").open("a") as config:
        config.write(f'consumer = {{ image = "{registry.host}/base/busybox@{base}" }}\n')
    result = validate(world, "--online")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"demo-cache: the upstream {world.upstream} answered git ls-remote: branch main at ")
    assert lines[1] == (
        f"demo-cache: the registry {registry.host} answered the tag list of {repository(world)} (1 tag(s))"
    )
    image = pinned(world)
    digest = image.split("@")[1]
    assert lines[2].startswith(
        f"demo-cache: docker/Dockerfile:2: the pinned image {repository(world)}@{digest} is "
        "readable: demo-cache 0.1.0+g"
    )
    assert lines[2].endswith(" (from its annotations)")
    # published with no rules digest (make_downstream), so judged by today's rules from its annotations
    assert lines[3] == (
        "demo-cache: docker/Dockerfile:2: the pinned image's wheel passes today's [wheel] rules, judged from its "
        "annotations"
    )
    assert lines[4] == (
        "demo-cache: docker/Dockerfile:3: the pinned image holds one wheel and DEMO_WHEEL_SHA256 is its sha256"
    )
    assert lines[5] == (
        f"demo-cache: the consuming image {registry.host}/base/busybox@{base} resolves to "
        f"{registry.host}/base/busybox@{base} (1 layer(s), read by the pass)"
    )
    assert (
        lines[6] == f"{world.downstream}/wheelpin.toml: valid, 1 component(s): demo-cache; 6 online check(s) answered"
    )
    document = validate(world, "--online", "--json").json()
    assert document["valid"] is True and document["problems"] == []
    assert document["online"]["answered"] is True
    assert [(c["check"], c["outcome"]) for c in document["online"]["checks"]] == [
        ("upstream", "ok"),
        ("registry", "ok"),
        ("pinned", "ok"),
        ("rules", "ok"),
        ("sha256", "ok"),
        ("consumer", "ok"),
    ]


def test_tags_holding_attached_documents_are_counted_apart(world: World, registry: Registry) -> None:
    """An SBOM attached to the pinned image, as a publish attaches its documents: the loopback
    docker-registry has no referrers API, so the artifact is listed under the fallback tag
    `sha256-<hex>` (distribution-spec's referrers tag schema), which is no image of its own."""
    host, _, path = repository(world).partition("/")
    store = RegistryRepository(RegistryClient(host), path)
    digest = pinned(world).split("@")[1]
    subject = Subject(digest, len(store.get_manifest(digest)), MANIFEST_TYPE)
    attach(store, subject, "application/vnd.cyclonedx+json", b"{}", title="sbom.cdx.json", annotations={}, existing=[])
    assert sorted(store.list_tags()) == sorted([pinned(world).split(":")[2].split("@")[0], fallback_tag(digest)])
    result = validate(world, "--online")
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines()[1] == (
        f"demo-cache: the registry {host} answered the tag list of {repository(world)} "
        "(1 tag(s), and 1 holding attached documents)"
    )
    hexdigest = digest.removeprefix("sha256:")
    assert [is_attachment_tag(f"sha256-{hexdigest}{suffix}") for suffix in ("", ".sig", ".att", ".sbom")] == [True] * 4
    assert not is_attachment_tag(f"sha256-{hexdigest[:12]}") and not is_attachment_tag("demo-cache-sha256-x")


def test_without_online_nothing_is_asked(world: World) -> None:
    """Offline validate stays offline: a config whose registry is a closed port is valid."""
    closed = f"127.0.0.1:{free_port()}"
    host = repository(world).split("/")[0]
    edit(world, "wheelpin.toml", host, closed)
    edit(world, "docker/Dockerfile", host, closed)
    result = validate(world, "--json")
    assert result.code == 0, result.stderr
    assert "online" not in result.json()


def test_a_branch_the_upstream_lacks(world: World) -> None:
    edit(world, "wheelpin.toml", 'branch = "main" }', 'branch = "mian" }')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: the upstream {world.upstream} has no branch mian (upstream.branch)"
    ]
    assert result.json()["problems"] == sentences(result, "problem") and result.json()["valid"] is False


def test_a_tag_pattern_no_tag_matches(world: World) -> None:
    edit(world, "wheelpin.toml", 'branch = "main" }', 'tags = "v*" }')
    assert_offline_valid(world)
    result = validate(world, "--online")
    assert result.code == 2
    assert result.stderr.splitlines() == [
        f"demo-cache: no tag of the upstream {world.upstream} matches v* (upstream.tags)",
        f"wheelpin: {world.downstream}/wheelpin.toml: 1 problem(s) online",
    ]


def test_an_upstream_folder_that_is_no_repository(world: World, tmp_path: Path) -> None:
    """A folder here cannot be a passing fault: offline validate says it already (2), and
    nothing is asked online."""
    (tmp_path / "not-a-repo").mkdir()
    edit(world, "wheelpin.toml", '"../upstream"', f'"{tmp_path / "not-a-repo"}"')
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert result.json()["online"] is None
    (problem,) = result.json()["problems"]
    assert problem.endswith(
        f"demo-cache.upstream.repo: the folder {tmp_path / 'not-a-repo'} is not a git repository: give the path of "
        "the upstream's git repository (a relative one starts at the config's repository) or its URL"
    )


def test_an_upstream_that_refuses_the_connection(world: World) -> None:
    """git over HTTP to a closed loopback port: the outside did not answer, exit 4 as the
    pass's outside failures."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/upstream.git"
    edit(world, "wheelpin.toml", '"../upstream"', f'"{url}"')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 4, result.stderr
    (sentence,) = result.json()["online"]["unanswered"]
    assert sentence.startswith(f"demo-cache: the upstream {url} did not answer git ls-remote: fatal: unable to access")
    assert f"Failed to connect to 127.0.0.1 port {port}" in sentence  # curl's words, through git
    assert result.json()["valid"] is True and result.json()["online"]["answered"] is False


def test_a_registry_that_refuses_the_connection(world: World) -> None:
    closed = f"127.0.0.1:{free_port()}"
    host = repository(world).split("/")[0]
    path = repository(world).split("/", 1)[1]
    edit(world, "wheelpin.toml", host, closed)
    edit(world, "docker/Dockerfile", host, closed)
    assert_offline_valid(world)
    result = validate(world, "--online")
    assert result.code == 4
    assert re.fullmatch(
        re.escape(
            f"demo-cache: the registry {closed} did not answer for the tag list of {closed}/{path} (image.repository): "
            f"{closed} refused the connection, "
        )
        + r"\d+ tries in \d+(\.\d)? s",
        result.stderr.splitlines()[0],
    )
    assert result.stderr.splitlines()[1] == (
        f"demo-cache: docker/Dockerfile:2: the pinned image {pinned(world)} was not asked for: its registry did not "
        "answer the tag list"
    )  # once unanswered is enough: its retries are not waited for again
    assert result.stderr.splitlines()[-1] == (
        f"wheelpin: {world.downstream}/wheelpin.toml: 2 check(s) got no answer; try again"
    )


def test_a_consuming_image_in_the_registry_that_did_not_answer_is_not_asked(world: World, registry: Registry) -> None:
    """The consuming image in the registry whose tag list went unanswered: not asked, as the
    pinned image is not (its retries are not waited out again); one in another registry is."""
    closed = f"127.0.0.1:{free_port()}"
    host = repository(world).split("/")[0]
    path = repository(world).split("/", 1)[1]
    edit(world, "wheelpin.toml", host, closed)
    edit(world, "docker/Dockerfile", host, closed)
    config = world.downstream / "wheelpin.toml"
    config.write_text(config.read_text() + f'consumer = {{ image = "{closed}/base/busybox@{ZEROS}" }}\n')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 4, result.stderr
    assert [(c["check"], c["outcome"]) for c in result.json()["online"]["checks"]] == [
        ("upstream", "ok"),
        ("registry", "unanswered"),
        ("pinned", "unanswered"),
        ("consumer", "unanswered"),
    ]
    assert result.json()["online"]["unanswered"][-1] == (
        f"demo-cache: the consuming image {closed}/base/busybox@{ZEROS} was not asked for: its registry {closed} did "
        f"not answer the tag list of {closed}/{path}"
    )
    base = push_busybox(registry)
    config.write_text(
        config.read_text().replace(f"{closed}/base/busybox@{ZEROS}", f"{registry.host}/base/busybox@{base}")
    )
    elsewhere = validate(world, "--online", "--json")
    assert elsewhere.code == 4, elsewhere.stderr
    (consumer,) = [c for c in elsewhere.json()["online"]["checks"] if c["check"] == "consumer"]
    assert consumer["outcome"] == "ok", consumer


def test_a_registry_that_wants_credentials(world: World, basic_registry: Registry) -> None:
    """The registry the pass would push to asks for credentials none are configured for:
    the same credential lookup as the pass (none in the test's docker config)."""
    host = repository(world).split("/")[0]
    path = repository(world).split("/", 1)[1]
    edit(world, "wheelpin.toml", host, basic_registry.host)
    edit(world, "docker/Dockerfile", host, basic_registry.host)
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    problems = result.json()["problems"]
    assert problems[0] == (
        f"demo-cache: asking the registry {basic_registry.host} for the tag list of {basic_registry.host}/{path} "
        f"(image.repository) failed: {basic_registry.host} needs credentials for repository:{path}:pull (Basic auth); "
        "none are configured"
    )


def test_a_pinned_digest_the_registry_lacks(world: World) -> None:
    digest = pinned(world).split("@")[1]
    edit(world, "docker/Dockerfile", digest, ZEROS)
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: docker/Dockerfile:2: the pinned digest is not in the registry (404): {repository(world)}@{ZEROS}"
    ]


def test_a_consuming_image_that_does_not_resolve(world: World, registry: Registry) -> None:
    with (world.downstream / "wheelpin.toml").open("a") as config:
        config.write(f'consumer = {{ image = "{registry.host}/base/nothing@{ZEROS}" }}\n')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: the consuming image {registry.host}/base/nothing@{ZEROS} is not in its registry (404)"
    ]


def test_the_trusted_roots_a_trust_table_needs(world: World) -> None:
    """`trust` verifies attestations against roots the operator keeps in the cache: their
    absence is where the first pass would stop, so it is said before."""
    from bot.adapters.sigstoreverify import TRUSTED_ROOTS
    from tests.fixtures.attestations import TestSigstore

    workflow = "ROCm/ATOM/.github/workflows/w.yaml"
    with (world.downstream / "wheelpin.toml").open("a") as config:
        config.write(f'trust = {{ attestations = "required", signer_workflow = "{workflow}" }}\n')
    assert_offline_valid(world)
    roots = Path(world.env["WHEELPIN_CACHE_DIR"]) / TRUSTED_ROOTS
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert sentences(result, "problem") == [
        f"demo-cache: trust: {roots}: no trusted root to verify attestations with; `gh attestation "
        f"trusted-root > {roots}` writes GitHub's and Sigstore's (it is read offline)"
    ]
    roots.parent.mkdir(parents=True, exist_ok=True)
    roots.write_text(TestSigstore().trusted_root_text() + "\n")
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stdout
    assert (
        f"demo-cache: trust: 1 trusted root at {roots} to verify attestations by https://github.com/{workflow}@* with"
    ) in sentences(result, "ok")


def test_an_image_whose_wheels_only_its_layers_say_has_its_layers_read(world: World, registry: Registry) -> None:
    """A pinned image another tool pushed (no wheelpin annotations nor labels), of fewer bytes
    than LAYERS_READ_AT_MOST: its layers are read, as `image show` reads them, so its wheels
    are judged as wheelpin's own images' are. busybox holds none: nothing for the sha256 ARG
    to take, no rule to judge."""
    base = push_busybox(registry)
    edit(world, "wheelpin.toml", repository(world), f"{registry.host}/base/busybox")
    edit(world, "docker/Dockerfile", pinned(world), f"{registry.host}/base/busybox:latest@{base}")
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stderr
    (sentence,) = [c["sentence"] for c in result.json()["online"]["checks"] if c["check"] == "pinned"]
    assert sentence == (
        f"demo-cache: docker/Dockerfile:2: the pinned image {registry.host}/base/busybox@{base} is "
        "readable: its layers hold no wheel"
    )
    assert [c["check"] for c in result.json()["online"]["checks"]] == ["upstream", "registry", "pinned"]


# The demo's wheel built for CPython 3.12 on two manylinux platforms, as a build matrix over
# glibc versions yields them: two wheels answering python tag cp312.
TWO_CP312 = ("cp312-cp312-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_34_x86_64")
CP312_PIN = 'sha256_arg = "DEMO_WHEEL_SHA256", python_tag = "cp312"'
# What the pass's set rule (core/checks/wheelset.py) says of two wheels where the config
# lists no python tag, as validate says it of a pinned image holding them
TWO_WHEELS = (
    "today's wheel.python_tags refuses the pinned image's 2 wheels: expected one wheel, found 2 (list "
    "wheel.python_tags for several); the pass refuses its next build if it makes wheels like these"
)


def demo_wheel(folder: Path, tag: str, label: str | None = None) -> Path:
    """A demo-cache 0.1.0 wheel of `tag`; `label` makes it the variant wheel for that GPU
    (PEP 825: its label in the file name, its properties in variant.json)."""
    return build_wheel(
        folder / tag / (label or "plain"),
        name="demo-cache",
        version="0.1.0",
        tag=tag,
        files={"demo_cache/__init__.py": f"BUILT = {tag!r}, {label!r}\n".encode()},
        variant=(label, {"amd": {"gfx_arch": [label.removeprefix("amd_")]}}) if label else None,
    )


def pin_an_image_of(world: World, wheels: list[Path], *, rules: bool = True, revision: str | None = None) -> list[str]:
    """Publish the image of `wheels` to the world's repository (the real registry), as a pass
    would under the component's rules (`rules`: their digest annotated) for the commit
    `revision`, and pin it in the Dockerfile's working tree; the wheels' file names, sorted."""
    host, _, path = repository(world).partition("/")
    (component,) = load_config(world.downstream / "wheelpin.toml", root=world.downstream).config.components
    result = publish(
        RegistryRepository(RegistryClient(host), path),
        "demo-cache-v0.1.0-g22222222",
        wheels,
        [inspect_wheel(wheel) for wheel in wheels],
        component="demo-cache",
        revision=revision,
        rules=rules_digest(component) if rules else None,
        settle=0,
    )
    edit(world, "docker/Dockerfile", pinned(world), f"{repository(world)}:demo-cache-v0.1.0-g22222222@{result.digest}")
    return sorted(wheel.name for wheel in wheels)


@pytest.mark.parametrize("shape", ["platforms", "variants"])
def test_a_sha256_arg_whose_python_tag_the_pinned_image_holds_two_wheels_of(
    world: World, tmp_path: Path, shape: str
) -> None:
    """The pass's proposal refuses to write a sha256 ARG several wheels answer
    (core/pins/sha256.py): said of the image pinned today, in the refusal's own words."""
    wheels = (
        [demo_wheel(tmp_path, tag) for tag in TWO_CP312]
        if shape == "platforms"
        else [demo_wheel(tmp_path, TWO_CP312[0], label) for label in ("amd_gfx942", "amd_gfx950")]
    )
    first, second = pin_an_image_of(world, wheels)
    edit(world, "wheelpin.toml", 'sha256_arg = "DEMO_WHEEL_SHA256"', CP312_PIN)
    assert_offline_valid(world)
    sentence = (
        (
            "demo-cache: docker/Dockerfile:3: DEMO_WHEEL_SHA256 takes the sha256 of the cp312 wheel, but the pinned "
            f"image holds 2 cp312 wheels ({first}, {second}), and a sha256 ARG names its wheel by python tag alone: "
            "the component's image must hold one cp312 wheel for this pin to be written, or the pin must drop its "
            "sha256_arg"
        )
        if shape == "platforms"
        else (
            "demo-cache: docker/Dockerfile:3: DEMO_WHEEL_SHA256 takes the sha256 of the cp312 wheel, but the pinned "
            f"image holds 2 variant wheels of cp312 (amd_gfx942, amd_gfx950: {first}, {second}), and a sha256 ARG "
            "names its wheel by python tag, never by variant label: drop the pin's sha256_arg (its image pin alone "
            "moves to an image of any wheels), or have the component's image hold one cp312 wheel"
        )
    )
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert result.json()["problems"] == sentences(result, "problem") == [sentence]
    (check,) = [c for c in result.json()["online"]["checks"] if c["check"] == "sha256"]
    assert check["asked"] == f"the cp312 wheel of {pinned(world)} for DEMO_WHEEL_SHA256"
    text = validate(world, "--online")
    assert text.code == 2
    assert text.stderr.splitlines() == [sentence, f"wheelpin: {world.downstream}/wheelpin.toml: 1 problem(s) online"]


def test_a_pinned_image_of_variant_wheels_is_held_to_the_variant_set_rules(world: World, tmp_path: Path) -> None:
    """Variant wheels (PEP 825) of one python tag are one wheel per label to the pass's set
    rule, so an image of them pinned today passes it; `wheel.variants` naming a label the
    image lacks is a problem, as the pass would refuse its next build for it."""
    wheels = [
        build_wheel(
            tmp_path / label,
            name="demo-cache",
            version="0.1.0",
            tag=TWO_CP312[0],
            files={"demo_cache/__init__.py": b""},
            variant=(label, {"x86_64": {"level": [label.removeprefix("x8664")]}}),
        )
        for label in ("x8664v3", "x8664v4")
    ]
    pin_an_image_of(world, wheels, rules=False)
    edit(world, "wheelpin.toml", ', sha256_arg = "DEMO_WHEEL_SHA256"', "")
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stdout
    assert [c["sentence"] for c in result.json()["online"]["checks"] if c["check"] == "rules"] == [
        "demo-cache: docker/Dockerfile:2: the pinned image's 2 wheels pass today's [wheel] rules, judged from "
        "its annotations"
    ]
    edit(world, "wheelpin.toml", 'distribution = "demo-cache"', 'distribution = "demo-cache", variants = ["x8664v3"]')
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stdout
    assert result.json()["problems"] == [
        "demo-cache: docker/Dockerfile:2: today's wheel.variants refuses the pinned image's 2 wheels: "
        "demo_cache-0.1.0-cp312-cp312-manylinux_2_28_x86_64-x8664v4.whl is of variant x8664v4, which "
        "wheel.variants does not list; the pass refuses its next build if it makes wheels like these"
    ]


def test_a_sha256_arg_without_python_tag_and_a_pinned_image_of_two_wheels(world: World, tmp_path: Path) -> None:
    """A pin naming no python tag takes the image's only wheel: two, of two python tags, are
    refused as a pass's bump refuses them."""
    cp311, cp312 = pin_an_image_of(
        world, [demo_wheel(tmp_path, "cp311-cp311-manylinux_2_28_x86_64"), demo_wheel(tmp_path, TWO_CP312[0])]
    )
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert result.json()["problems"] == [
        "demo-cache: docker/Dockerfile:3: DEMO_WHEEL_SHA256 takes the sha256 of the image's only wheel, but the "
        f"pinned image holds 2 wheels ({cp311}, {cp312}): give the pin the python_tag of the wheel its Dockerfile "
        "installs (the image must hold one wheel of that tag), or drop its sha256_arg"
    ]


def test_several_wheels_of_an_image_made_under_other_rules_are_no_forecast(world: World, tmp_path: Path) -> None:
    """Several wheels answering a sha256 pin are judged only of an image wheelpin published
    under the component's rules as they are: one pushed by another tool (its wheels read
    from its layers) or made under other rules says nothing of the wheels the next build
    makes, which the pass judges."""
    pin_an_image_of(
        world,
        [demo_wheel(tmp_path, "cp311-cp311-manylinux_2_28_x86_64"), demo_wheel(tmp_path, TWO_CP312[0])],
        rules=False,
    )
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stderr
    assert "sha256" not in [c["check"] for c in result.json()["online"]["checks"]]
    # the set of wheels is a forecast whoever made the image: the config and the build decide it
    assert result.json()["problems"] == [f"demo-cache: docker/Dockerfile:2: {TWO_WHEELS}"]


def test_several_wheels_of_an_image_another_tool_pushed_are_no_forecast(world: World, tmp_path: Path) -> None:
    """As another tool pushes one (buildah: Docker's manifest, gzip layers, no wheelpin
    annotation): validate reads its two wheels from its layers and still judges nothing of
    the sha256 pin, since the pass will pin an image wheelpin publishes."""
    wheels = [demo_wheel(tmp_path, "cp311-cp311-manylinux_2_28_x86_64"), demo_wheel(tmp_path, TWO_CP312[0])]
    ref = push_foreign(f"{repository(world)}:latest", wheels, tmp_path)
    edit(world, "docker/Dockerfile", pinned(world), ref)
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stderr
    checks = {c["check"]: c["sentence"] for c in result.json()["online"]["checks"]}
    assert checks["pinned"].endswith("readable: demo-cache 0.1.0, demo-cache 0.1.0 (from its layers)")
    assert "sha256" not in checks
    assert result.json()["problems"] == [f"demo-cache: docker/Dockerfile:2: {TWO_WHEELS}"]


def test_one_wheel_of_the_pins_python_tag_is_fine(world: World, tmp_path: Path) -> None:
    wheel = demo_wheel(tmp_path, TWO_CP312[0])
    pin_an_image_of(world, [wheel])
    write_arg(world, "DEMO_WHEEL_SHA256", sha256_of(wheel))
    edit(world, "wheelpin.toml", 'sha256_arg = "DEMO_WHEEL_SHA256"', CP312_PIN)
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stdout
    assert [c["sentence"] for c in result.json()["online"]["checks"] if c["check"] == "sha256"] == [
        "demo-cache: docker/Dockerfile:3: the pinned image holds one cp312 wheel and DEMO_WHEEL_SHA256 is its sha256"
    ]


def test_a_sha256_arg_that_is_not_the_pinned_wheels_sha256(world: World) -> None:
    """The image pinned today holds one wheel, but the ARG its Dockerfile checks that wheel
    against holds another value (`sha256sum -c` in the demo's Dockerfile would fail): a
    problem naming both values and the bump that writes it, which then makes it fine."""
    right = next(
        line.split("=", 1)[1]
        for line in (world.downstream / "docker/Dockerfile").read_text().splitlines()
        if line.startswith("ARG DEMO_WHEEL_SHA256=")
    )
    write_arg(world, "DEMO_WHEEL_SHA256", "0" * 64)
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stdout
    assert result.json()["problems"] == [
        "demo-cache: docker/Dockerfile:3: ARG DEMO_WHEEL_SHA256 holds 000000000000…, but the pinned image's wheel "
        f"has sha256 {right[:12]}…, so the build's sha256 check of that wheel fails: `wheelpin pins bump "
        f"--component demo-cache --image {pinned(world)}` writes the pin and its sha256 from that image"
    ]
    bumped = wheelpin(
        "pins",
        "bump",
        "--repo",
        str(world.downstream),
        "--component",
        "demo-cache",
        "--image",
        pinned(world),
        env=world.env,
    )
    assert bumped.code == 0, bumped.stderr
    again = validate(world, "--online", "--json")
    assert again.code == 0, again.stdout
    write_arg(world, "DEMO_WHEEL_SHA256", right.upper())  # sha256sum -c reads either case
    assert validate(world, "--online").code == 0
    write_arg(world, "DEMO_WHEEL_SHA256", '""')
    empty = validate(world, "--online", "--json")
    assert empty.code == 2 and empty.json()["problems"][0].startswith(
        "demo-cache: docker/Dockerfile:3: ARG DEMO_WHEEL_SHA256 holds an empty value, but the pinned image's wheel "
    ), empty.stdout


def pin_cp311_beside_cp312(world: World, cp311: Path) -> None:
    """Mooncake's shape: the image ARG's pins for cp312 and for cp311, each with its sha256
    ARG, the cp311 one holding `cp311`'s sha256."""
    edit(
        world,
        "wheelpin.toml",
        'sha256_arg = "DEMO_WHEEL_SHA256" }',
        f"{CP312_PIN} }},\n  "
        + (
            '{ file = "docker/Dockerfile", image_arg = "DEMO_WHEEL_IMAGE", sha256_arg = "DEMO_WHEEL_SHA256_CP311", '
            'python_tag = "cp311" }'
        ),
    )
    edit(
        world,
        "docker/Dockerfile",
        "ARG DEMO_WHEEL_SHA256=",
        f"ARG DEMO_WHEEL_SHA256_CP311={sha256_of(cp311)}\nARG DEMO_WHEEL_SHA256=",
    )


def test_pins_sharing_an_image_are_judged_each_from_one_read(world: World, registry: Registry, tmp_path: Path) -> None:
    """Two pins of one image, a sha256 ARG each (cp311, cp312): the image is read once (its
    manifest requested once, through a proxy that counts; its annotations say its wheels),
    each ARG judged on its own: one cp311 wheel is fine, two cp312 wheels are not."""
    wheels = [demo_wheel(tmp_path, "cp311-cp311-manylinux_2_28_x86_64")] + [
        demo_wheel(tmp_path, tag) for tag in TWO_CP312
    ]
    names = pin_an_image_of(world, wheels)
    pin_cp311_beside_cp312(world, wheels[0])
    proxy = FaultProxy(registry.host)
    try:
        edit(world, "wheelpin.toml", registry.host, proxy.host)
        edit(world, "docker/Dockerfile", registry.host, proxy.host)
        assert_offline_valid(world)
        result = validate(world, "--online", "--json")
    finally:
        proxy.stop()
    assert result.code == 2
    judged = [(c["outcome"], c["sentence"]) for c in result.json()["online"]["checks"] if c["check"] == "sha256"]
    assert judged == [
        (
            "problem",
            "demo-cache: docker/Dockerfile:4: DEMO_WHEEL_SHA256 takes the sha256 of the cp312 wheel, but the pinned "
            f"image holds 2 cp312 wheels ({names[1]}, {names[2]}), and a sha256 ARG names its wheel by python tag "
            "alone: the component's image must hold one cp312 wheel for this pin to be written, or the pin must "
            "drop its sha256_arg",
        ),
        (
            "ok",
            "demo-cache: docker/Dockerfile:3: the pinned image holds one cp311 wheel and "
            "DEMO_WHEEL_SHA256_CP311 is its sha256",
        ),
    ]
    digest = pinned(world).split("@")[1]
    manifest_gets = [path for method, path, _ in proxy.seen if method == "GET" and "/manifests/" in path]
    assert manifest_gets == [f"/v2/{repository(world).split('/', 1)[1]}/manifests/{digest}"]
    assert not [path for method, path, _ in proxy.seen if "/blobs/" in path]  # its annotations say the wheels


def test_online_asks_nothing_of_a_config_with_offline_problems(world: World) -> None:
    edit(world, "docker/Dockerfile", "ARG DEMO_WHEEL_IMAGE=", "ARG DEMO_WHEEL_IMG=")
    result = validate(world, "--online", "--json")
    assert result.code == 2
    assert result.json()["online"] is None and result.json()["valid"] is False
    (problem,) = result.json()["problems"]
    assert problem.endswith(
        "demo-cache.pins[0].image_arg: docker/Dockerfile: ARG DEMO_WHEEL_IMAGE is not declared "
        "(ARGs here: DEMO_WHEEL_IMG, DEMO_WHEEL_SHA256; did you mean DEMO_WHEEL_IMG?)"
    )


WORKFLOW = "wheel.yaml"
WORKFLOW_TEXT = """\
name: wheel
run-name: wheel ${{ inputs.commit }}
on:
  workflow_dispatch:
    inputs:
      commit: { required: true }
jobs:
  build: { runs-on: ubuntu-latest, steps: [ { run: "true" } ] }
"""


@pytest.mark.parametrize("pushed", [True, False], ids=["on-github", "only-here"])
def test_the_workflow_is_on_the_base_branch_on_github(world: World, tmp_path: Path, pushed: bool) -> None:
    """With --github-repo and GitHub's settings, the file of build.workflow is looked for on
    the base branch of the repository on GitHub (the emulator, tests/fixtures/github), where
    the pass dispatches it: a workflow written here but never pushed is a problem."""
    from bot.adapters.git import git
    from tests.app.worlds import HUMAN
    from tests.fixtures.github.emulator import GitHubEmulator

    config = world.downstream / "wheelpin.toml"
    build = next(line for line in config.read_text().splitlines() if line.startswith("build = "))
    edit(world, "wheelpin.toml", build, f'build = {{ workflow = "{WORKFLOW}", inputs = {{ commit = "{{sha}}" }} }}')
    (world.downstream / ".github/workflows").mkdir(parents=True)
    (world.downstream / f".github/workflows/{WORKFLOW}").write_text(WORKFLOW_TEXT)
    if pushed:
        git(["add", "-A"], cwd=world.downstream)
        git(["commit", "--quiet", "-m", "the wheel workflow"], cwd=world.downstream, env=HUMAN)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    try:
        emulator.create_repo("rocm", "atom", world.downstream)
        env = {**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "t"}
        result = wheelpin(
            "config",
            "validate",
            "--repo",
            str(world.downstream),
            "--online",
            "--github-repo",
            "rocm/atom",
            "--json",
            env=env,
        )
        assert emulator.errors == []
    finally:
        emulator.stop()
    (check,) = [c for c in result.json()["online"]["checks"] if c["check"] == "workflow"]
    if pushed:
        assert result.code == 0, result.stderr
        assert check["sentence"] == f"demo-cache: .github/workflows/{WORKFLOW} is on rocm/atom's branch main"
    else:
        assert result.code == 2
        assert (
            result.json()["problems"]
            == [check["sentence"]]
            == [
                f"demo-cache: .github/workflows/{WORKFLOW} is not on rocm/atom's branch main, where the pass "
                "dispatches it (build.workflow)"
            ]
        )


def test_github_is_asked_only_online(world: World) -> None:
    result = validate(world, "--github-repo", "rocm/atom")
    assert result.code == 2
    assert result.stderr == "wheelpin: --github-repo goes with --online (GitHub is asked only then)\n"


def test_a_tag_the_template_does_not_give_is_said_once_for_the_pins_sharing_it(world: World, tmp_path: Path) -> None:
    """Mooncake's shape: one image ARG, a pin per python tag. A bootstrap `:latest` on that
    ARG is one thing the first bump replaces: one warning at the ARG's line, not one a pin."""
    cp311, cp312 = (demo_wheel(tmp_path, f"{tag}-{tag}-manylinux_2_28_x86_64") for tag in ("cp311", "cp312"))
    pin_an_image_of(world, [cp311, cp312])
    edit(world, "docker/Dockerfile", ":demo-cache-v0.1.0-g22222222@", ":latest@")
    pin_cp311_beside_cp312(world, cp311)
    write_arg(world, "DEMO_WHEEL_SHA256", sha256_of(cp312))
    for args in ((), ("--online",)):
        result = validate(world, *args)
        assert result.code == 0, result.stderr
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
        assert len(warnings) == 1, warnings
        assert warnings[0].endswith(
            "docker/Dockerfile:2: tag 'latest' does not fit the tag template "
            "'demo-cache-v{version_base}-g{sha8}' of component demo-cache: the first bump replaces it"
        ), warnings


def test_a_misspelt_distribution_is_a_problem_once_the_pinned_wheel_says_its_name(world: World) -> None:
    """`wheel.distribution` compared with the pinned image's wheel as the pass's name check
    compares a built wheel's (PEP 503 names: `Demo_Cache` is `demo-cache`): a name the
    upstream's build does not give fails the pass after its next build, so the pre-flight
    says it now."""
    edit(world, "wheelpin.toml", 'distribution = "demo-cache"', 'distribution = "Demo_Cache"')
    assert validate(world, "--online").code == 0
    edit(world, "wheelpin.toml", 'distribution = "Demo_Cache"', 'distribution = "demo-cahce"')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stdout
    version = next(c for c in result.json()["online"]["checks"] if c["check"] == "pinned")["sentence"]
    version = version.split("readable: demo-cache ", 1)[1].split(" ")[0]
    assert result.json()["problems"] == [
        f"demo-cache: docker/Dockerfile:2: the pinned image's wheel is demo-cache {version}, but "
        "wheel.distribution says demo-cahce, so the pass refuses the wheels its next build makes "
        "(the distribution names compared as PEP 503 normalizes them)"
    ]
    (check,) = [c for c in result.json()["online"]["checks"] if c["check"] == "distribution"]
    assert check["outcome"] == "problem"
    # the rules check judged the others: it does not say the wheel passes the [wheel] rules
    (rules,) = [c for c in result.json()["online"]["checks"] if c["check"] == "rules"]
    assert rules["outcome"] == "ok"
    assert rules["sentence"].startswith(
        "demo-cache: docker/Dockerfile:2: the pinned image's wheel passes today's other [wheel] rules "
        "(all but wheel.distribution), judged from its "
    ), rules["sentence"]


def device_wheel(folder: Path) -> Path:
    """A demo-cache 0.1.0 wheel (no commit in its version) shipping the demo's HIP library: a
    real x86-64 ELF needing libamdhip64.so.7 with code objects for gfx942 and gfx950
    (core/wheel/hipstub.py), for CPython 3.12 on manylinux_2_28."""
    return build_wheel(
        folder / "device",
        name="demo-cache",
        version="0.1.0",
        tag=TWO_CP312[0],
        files={
            "demo_cache/__init__.py": b"",
            "demo_cache/_demo_hip.so": hip_library(
                soname="_demo_hip.so", needed=["libamdhip64.so.7"], targets=("gfx942", "gfx950")
            ),
        },
    )


RULES = 'wheel = { distribution = "demo-cache" }'
# Typos that offline validate accepts (each is a well-formed value) and the pass refuses
# after a build: a glob with the HIP runtime's digits swapped, an arch of another GPU than
# the build's, a python tag of no CPython, a glibc older than the manylinux tag's.
TYPOS = (
    'wheel = { distribution = "demo-cache", archs = ["gfx942", "gfx90a"], require_needed = ["libamdhip46.so*"], '
    'python_tags = ["cp321"], max_glibc = "2.17" }'
)
CP321 = 'python_tag = "cp321"'
RIGHT = (
    'wheel = { distribution = "demo-cache", archs = ["gfx942", "gfx950"], require_needed = ["libamdhip64.so*"], '
    'python_tags = ["cp312"], max_glibc = "2.28", version_carries_commit = false }'
)


def test_todays_rules_the_pinned_wheel_breaks_are_said_each_in_its_own_sentence(world: World, tmp_path: Path) -> None:
    """The pinned image's wheel judged by the pass's own checks from what its annotations
    record: while the config's rules are those it was published under (its rules digest),
    it passed them and nothing is judged again; once they are edited, each rule it breaks
    is one sentence, a problem where the config and the build decide it (exit 2), a
    warning for the commit its version carries, which the next commit's build may."""
    wheel = device_wheel(tmp_path)
    (name,) = pin_an_image_of(world, [wheel], revision="2" * 40)
    write_arg(world, "DEMO_WHEEL_SHA256", sha256_of(wheel))
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stdout
    (check,) = [c for c in result.json()["online"]["checks"] if c["check"] == "rules"]
    (component,) = load_config(world.downstream / "wheelpin.toml", root=world.downstream).config.components
    assert check == {
        "component": "demo-cache",
        "check": "rules",
        "asked": f"the wheels of {pinned(world)} against today's [wheel] rules",
        "outcome": "ok",
        "sentence": "demo-cache: docker/Dockerfile:2: the pinned image's wheel passed today's [wheel] rules when "
        f"wheelpin published it (its rules digest {rules_digest(component)} is today's)",
    }
    assert result.json()["warnings"] == []  # its version carries no commit, but it passed these rules

    edit(world, "wheelpin.toml", RULES, TYPOS)
    edit(
        world,
        "wheelpin.toml",
        'sha256_arg = "DEMO_WHEEL_SHA256"',
        'sha256_arg = "DEMO_WHEEL_SHA256", python_tag = "cp321"',
    )
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stdout
    where = "demo-cache: docker/Dockerfile:2: today's wheel."
    refused = "the pass refuses its next build if it makes wheels like these"
    assert result.json()["problems"] == [
        f"{where}python_tags refuses the pinned image's wheel: expected one wheel for cp321, found 0; "
        f"{name} is for none of the python tags cp321; {refused}",
        f"{where}archs refuses the pinned image's wheel: {name}: the wheel has no code for gfx90a (it carries "
        f"gfx942, gfx950); {refused}",
        f"{where}require_needed refuses the pinned image's wheel: {name}: no ELF file in the wheel needs a library "
        f"matching libamdhip46.so*; {refused}",
        f"{where}max_glibc refuses the pinned image's wheel: {name}: platform tag manylinux_2_28_x86_64 needs glibc "
        f"2.28 or newer, the images have 2.17 (wheel.max_glibc); {refused}",
    ]
    assert result.json()["warnings"] == [
        f"{where}version_carries_commit refuses the pinned image's wheel: {name}: version 0.1.0 carries no commit "
        "(expected g22222222); the next commit's build may carry its commit: a build of a release tag's commit "
        "often carries none (set version_carries_commit = false for an upstream whose every build is of a tag)"
    ]
    text = validate(world, "--online")
    assert text.code == 2
    assert f"warning: {result.json()['warnings'][0]}" in text.stderr.splitlines()

    edit(world, "wheelpin.toml", TYPOS, RIGHT)
    edit(world, "wheelpin.toml", CP321, 'python_tag = "cp312"')
    result = validate(world, "--online", "--json")
    assert result.code == 0, result.stdout
    assert [c["sentence"] for c in result.json()["online"]["checks"] if c["check"] == "rules"] == [
        "demo-cache: docker/Dockerfile:2: the pinned image's wheel passes today's [wheel] rules, judged from its "
        "annotations"
    ]
    assert result.json()["warnings"] == []


@pytest.mark.parametrize("tool", ["buildah", "skopeo"])
def test_the_wheel_of_an_image_another_tool_pushed_is_read_from_its_layer(
    world: World, tmp_path: Path, tool: str
) -> None:
    """An image pushed as another tool pushes it (buildah: Docker's manifest and a gzip
    layer; skopeo: OCI media types and a zstd layer; no wheelpin annotation nor label): its
    layer is read (it is far under LAYERS_READ_AT_MOST) and its wheel judged as a wheel of
    wheelpin's own image is; with no revision label, its commit is not."""
    wheel = device_wheel(tmp_path)
    ref = push_foreign(f"{repository(world)}:{tool}", [wheel], tmp_path, tool=tool)
    edit(world, "docker/Dockerfile", pinned(world), ref)
    write_arg(world, "DEMO_WHEEL_SHA256", sha256_of(wheel))
    edit(world, "wheelpin.toml", RULES, 'wheel = { distribution = "demo-cache", require_needed = ["libamdhip46.so*"] }')
    assert_offline_valid(world)
    result = validate(world, "--online", "--json")
    assert result.code == 2, result.stdout
    checks = {c["check"]: c for c in result.json()["online"]["checks"]}
    assert checks["pinned"]["sentence"].endswith("readable: demo-cache 0.1.0 (from its layers)")
    assert checks["sha256"]["outcome"] == "ok"
    assert result.json()["problems"] == [
        "demo-cache: docker/Dockerfile:2: today's wheel.require_needed refuses the pinned image's wheel: "
        f"{wheel.name}: no ELF file in the wheel needs a library matching libamdhip46.so*; the pass refuses its "
        "next build if it makes wheels like these"
    ]
    assert "warning" not in [c["outcome"] for c in result.json()["online"]["checks"]]  # its commit: not judged


def test_layers_past_the_bound_are_left_to_the_pass(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image whose wheels only its layers say, declaring more bytes than
    LAYERS_READ_AT_MOST (lowered here under the demo image's few kB): nothing of its layers
    is fetched, the pinned check says why, and no rule is judged."""
    from bot.app.settings import Settings
    from bot.app.wiring import Registries
    from bot.commands import preflight
    from bot.commands.repo import load

    wheel = device_wheel(tmp_path)
    ref = push_foreign(f"{repository(world)}:big", [wheel], tmp_path)
    edit(world, "docker/Dockerfile", pinned(world), ref)
    monkeypatch.setattr(preflight, "LAYERS_READ_AT_MOST", 1000)
    registries = Registries(Settings(cache_dir=tmp_path / "fresh-cache"))
    checks = preflight.online_checks(
        load(config=None, repo=world.downstream), registries, cache=tmp_path / "fresh-cache"
    )
    (said,) = [check for check in checks if check.check == "pinned"]
    assert said.outcome == "ok"
    size = said.sentence.split("only by its layers (", 1)[1].split(")", 1)[0]
    assert said.sentence.endswith(
        f"readable: its wheels are said only by its layers ({size}), more than the 1.0 kB validate reads of "
        "them; the pass reads them"
    )
    assert [check.check for check in checks] == ["upstream", "registry", "pinned"]
    assert not [path for path in (tmp_path / "fresh-cache").rglob("*") if FACTS_FORMAT in str(path)]  # none read

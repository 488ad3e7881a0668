"""A pass on the local platform attaches the provenance and SBOM of the image it publishes:
signed (with the operator's key from the environment) on the real registry, where
docker-registry 2.8's lack of a referrers API leaves the fallback tag to list them, and
unsigned in the OCI layout folder; `image show` and `image verify` read them back, a
second pass adds nothing, and the proposal links them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from bot.adapters.git import git
from bot.adapters.imagestore import LayoutStore
from bot.adapters.provenance import attached_to
from bot.adapters.registry import RegistryClient
from tests.app.worlds import BRANCH, NEW_VERSION, World, component, make_world
from tests.cli import wheelpin
from tests.fixtures.servers import Registry


def pinned_image(world: World) -> str:
    """The image the proposal pins: host/repo:tag@digest."""
    found = re.search(r'ARG DEMO_WHEEL_IMAGE="([^"]+)"', world.branch_file())
    assert found is not None
    return found.group(1)


def test_a_signed_pass_on_the_registry(registry: Registry, tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = tmp_path / "wheelpin.pub"
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    world = make_world(tmp_path, registry=f"{registry.host}/prov-pass/demo-cache")
    world.env["WHEELPIN_SIGNING_KEY"] = pem
    head = world.commit_upstream("work", NEW_VERSION)
    result = world.reconcile()
    assert result.code == 0, result.stderr
    ref, digest = pinned_image(world).rsplit("@", 1)

    shown = wheelpin("image", "show", f"{ref}@{digest}", "--json", env=world.env)
    assert shown.code == 0, shown.stderr
    attached = shown.json()["attached"]
    assert [(item["kind"], item["signed"]) for item in attached] == [("provenance", True), ("sbom", False)]
    # docker-registry 2.8 has no referrers API: the pass wrote the fallback tag
    assert digest.replace(":", "-") in RegistryClient(registry.host).list_tags("prov-pass/demo-cache")

    verified = wheelpin("image", "verify", f"{ref}@{digest}", "--key", str(public), "--json", env=world.env)
    assert verified.code == 0, verified.stderr
    assert verified.json()["external_parameters"]["revision"] == head
    assert "`build.command` in a clean checkout of" in verified.json()["build"]

    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert f"attached: signed SLSA provenance `{registry.host}/prov-pass/demo-cache@{attached[0]['digest']}`" in message
    assert f"SBOM `{registry.host}/prov-pass/demo-cache@{attached[1]['digest']}`" in message
    assert "wheelpin image verify" in message

    assert component(world.reconcile())["status"] == "nothing"
    again = wheelpin("image", "show", f"{ref}@{digest}", "--json", env=world.env)
    assert [item["digest"] for item in again.json()["attached"]] == [item["digest"] for item in attached]


def test_an_unsigned_pass_into_the_layout_folder(world: World) -> None:
    world.commit_upstream("work", NEW_VERSION)
    result = world.reconcile()
    assert result.code == 0, result.stderr
    digest = pinned_image(world).rsplit("@", 1)[1]
    assert digest.replace(":", "-") in world.layout_tags()
    index = json.loads((world.root / "images" / "index.json").read_text())
    fallback = next(
        m
        for m in index["manifests"]
        if m["annotations"]["org.opencontainers.image.ref.name"] == digest.replace(":", "-")
    )
    listed = json.loads((world.root / "images" / "blobs" / "sha256" / fallback["digest"][7:]).read_text())
    assert [m["artifactType"] for m in listed["manifests"]] == [
        "application/vnd.in-toto+json",
        "application/vnd.cyclonedx+json",
    ]
    shown = wheelpin("image", "show", f"oci:{world.root / 'images'}@{digest}", env=world.env)
    assert shown.code == 0, shown.stderr
    assert "attached provenance sha256:" in shown.stdout and ", unsigned" in shown.stdout
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "; attached: SLSA provenance `oci:" in message and "image verify" not in message


def test_an_image_left_without_its_documents_gets_them_when_it_is_proposed(world: World) -> None:
    """A pass stopped between the push and the attaching (or an older wheelpin published the
    image): the next proposal of that image attaches them, as its annotations say it is ours."""
    world.commit_upstream("work", NEW_VERSION)
    assert world.reconcile().code == 0
    digest = pinned_image(world).rsplit("@", 1)[1]
    layout = LayoutStore(world.root / "images")
    assert layout.delete(digest.replace(":", "-")) and digest.replace(":", "-") not in world.layout_tags()
    git(["branch", "-D", BRANCH], cwd=world.downstream)  # so that the same image is proposed again
    again = world.reconcile()
    assert again.code == 0, again.stderr
    assert [a["kind"] for a in component(again)["actions"]] == ["propose"]
    assert [item.kind for item in attached_to(layout, digest)] == ["provenance", "sbom"]
    assert "; attached: SLSA provenance `oci:" in git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)


def test_losing_wheelpin_s_signed_statement_is_a_trust_downgrade(world: World, tmp_path: Path) -> None:
    """With the operator's key, the pinned image carries wheelpin's signed provenance; the
    next commit's image pushed by someone else without the key (its statement unsigned) is
    refused as a trust downgrade, and proposed only with trust.allow_downgrade, said loudly."""
    from tests.fixtures.wheels import build_wheel

    key = ec.generate_private_key(ec.SECP256R1())
    signing = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    unsigned_env = dict(world.env)
    world.env["WHEELPIN_SIGNING_KEY"] = signing
    world.commit_upstream("work", NEW_VERSION)
    assert world.reconcile().code == 0
    git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream)  # the signed image is pinned now

    head = world.commit_upstream("more", {"demo_cache/more.py": "y = 2\n"})
    wheel = build_wheel(
        tmp_path / "theirs",
        name="demo-cache",
        version=f"0.1.1+g{head[:8]}.rocm7.2.4",
        files={"demo_cache/__init__.py": b"x = 1\n"},
        requires_dist=["numpy>=2.3"],
    )
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    pushed = wheelpin("image", "publish", str(wheel), "--to", f"oci:{world.root / 'images'}:{tag}", env=unsigned_env)
    assert pushed.code == 0, pushed.stderr

    refused = world.reconcile()
    assert refused.code == 1
    said = component(refused)["messages"][-1]
    assert (
        "trust downgrade: the pinned image carries wheelpin's provenance statement signed by the operator's key" in said
    )
    assert "trust.allow_downgrade = true accepts that" in said
    assert tag not in world.branch_file()

    world.set_config(
        'wheel = { distribution = "demo-cache" }',
        'trust = { allow_downgrade = true }\nwheel = { distribution = "demo-cache" }',
    )
    accepted = world.reconcile("--retry-failed")
    assert accepted.code == 0, accepted.stderr
    assert tag in world.branch_file()
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert (
        "TRUST DOWNGRADE, allowed by trust.allow_downgrade: the pinned image carries wheelpin's provenance "
        "statement signed by the operator's key"
    ) in message

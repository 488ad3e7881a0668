"""Provenance and SBOM attached to published images (adapters/provenance.py,
adapters/referrers.py) on the real loopback registry, Debian's docker-registry 2.8, which
has no referrers API (so the distribution-spec's fallback tag is what lists them), on the
same registry given the API by a proxy (tests/fixtures/referrersproxy.py), and on an OCI
layout folder; `image verify`'s checks against a good key, a wrong key and a
statement signed for another image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from bot.adapters.imagestore import ImageStore, LayoutStore, RegistryRepository
from bot.adapters.provenance import attach_provenance, attached_to, verify_attached
from bot.adapters.publisher import publish
from bot.adapters.referrers import Subject, attach, fallback_tag, list_referrers, read_document
from bot.adapters.registry import RegistryClient
from bot.core.errors import VerificationError
from bot.core.image.oci import MANIFEST_TYPE
from bot.core.provenance import dsse
from bot.core.provenance.bundle import BUNDLE_TYPE, bundle_bytes, envelope_of
from bot.core.provenance.sbom import SBOM_TYPE
from bot.core.provenance.statement import PAYLOAD_TYPE, SLSA_PROVENANCE, BuildFacts, statement_bytes
from bot.core.wheel.report import inspect_wheel
from tests.fixtures.referrersproxy import ReferrersProxy
from tests.fixtures.servers import Registry


def published(store: ImageStore, tag: str, wheel: Path) -> BuildFacts:
    result = publish(
        store,
        tag,
        [wheel],
        [inspect_wheel(wheel)],
        source="https://github.com/o/u",
        revision="05fc77a0" * 5,
        component="demo",
        settle=0,
    )
    return BuildFacts(
        repository=store.name,
        digest=result.digest,
        tag=tag,
        wheels=result.wheels,
        source="https://github.com/o/u",
        revision="05fc77a0" * 5,
        component="demo",
        build="`build.command` in a clean checkout of 05fc77a0 on host",
        verification={"result": "passed"},
    )


def test_the_registry_without_a_referrers_api_lists_them_under_the_fallback_tag(
    registry: Registry, small_wheels: tuple[Path, Path]
) -> None:
    store = RegistryRepository(RegistryClient(registry.host), "prov/fallback")
    facts = published(store, "a", small_wheels[0])
    key = ec.generate_private_key(ec.SECP256R1())
    done, sent = attach_provenance(store, facts, key)
    assert [(item.kind, item.signed, item.status) for item in done] == [
        ("provenance", True, "attached"),
        ("sbom", False, "attached"),
    ]
    assert sent > 0
    # docker-registry 2.8 answers the referrers API 404: the fallback tag holds the index
    assert fallback_tag(facts.digest) in store.list_tags()
    index = json.loads(store.get_manifest(fallback_tag(facts.digest)))
    assert {entry["artifactType"] for entry in index["manifests"]} == {BUNDLE_TYPE, SBOM_TYPE}
    listed = attached_to(store, facts.digest)
    assert [item.digest for item in listed] == [item.digest for item in done]
    artifact = json.loads(store.get_manifest(done[0].digest))
    assert artifact["subject"]["digest"] == facts.digest and artifact["artifactType"] == BUNDLE_TYPE
    assert artifact["config"] == {
        "mediaType": "application/vnd.oci.empty.v1+json",
        "size": 2,
        "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    }
    sbom = json.loads(read_document(store, list_referrers(store, facts.digest)[1], 1 << 20))
    (component,) = sbom["components"]
    assert component["hashes"] == [{"alg": "SHA-256", "content": facts.wheels[0].sha256}]
    assert {"name": "wheelpin:requires_dist", "value": "numpy>=2.3"} in component["properties"]
    statement = verify_attached(store, facts.digest, key.public_key())
    assert statement["subject"][0]["digest"]["sha256"] == facts.digest.removeprefix("sha256:")


def test_republishing_the_same_image_adds_no_second_copy(registry: Registry, small_wheels: tuple[Path, Path]) -> None:
    store = RegistryRepository(RegistryClient(registry.host), "prov/again")
    key = ed25519.Ed25519PrivateKey.generate()
    first, _ = attach_provenance(store, published(store, "a", small_wheels[0]), key)
    again = published(store, "b", small_wheels[0])  # another tag, the same image
    second, sent = attach_provenance(store, again, key)
    assert [item.digest for item in second] == [item.digest for item in first]
    assert {item.status for item in second} == {"present"} and sent == 0
    # another build of the same image (another host said): the statement of the first stays
    other = BuildFacts(**{**again.__dict__, "build": "run https://github.com/o/u/actions/runs/7 of build.yaml"})
    third, sent = attach_provenance(store, other, key)
    assert {item.status for item in third} == {"present"} and sent == 0
    assert len(list_referrers(store, again.digest)) == 2


def test_the_layout_folder_carries_them_too(tmp_path: Path, small_wheels: tuple[Path, Path]) -> None:
    store = LayoutStore(tmp_path / "layout")
    facts = published(store, "a", small_wheels[0])
    done, _ = attach_provenance(store, facts, None)
    assert [(item.kind, item.artifact_type, item.signed) for item in done] == [
        ("provenance", PAYLOAD_TYPE, False),
        ("sbom", SBOM_TYPE, False),
    ]
    assert store.list_tags() == sorted(["a", fallback_tag(facts.digest)])
    statement = json.loads(read_document(store, list_referrers(store, facts.digest)[0], 1 << 20))
    assert statement["predicate"]["buildDefinition"]["externalParameters"]["revision"] == "05fc77a0" * 5
    assert attach_provenance(store, facts, None)[1] == 0
    with pytest.raises(VerificationError, match="carries no signed provenance"):
        verify_attached(store, facts.digest, ec.generate_private_key(ec.SECP256R1()).public_key())


def test_verify_refuses_a_wrong_key_and_a_statement_signed_for_another_image(
    registry: Registry, small_wheels: tuple[Path, Path]
) -> None:
    store = RegistryRepository(RegistryClient(registry.host), "prov/verify")
    key = ec.generate_private_key(ec.SECP256R1())
    facts = published(store, "a", small_wheels[1])
    attach_provenance(store, facts, key)
    with pytest.raises(VerificationError, match="no signature of the envelope was made by the key given"):
        verify_attached(store, facts.digest, ec.generate_private_key(ec.SECP256R1()).public_key())
    # the same key signs a statement whose subject is another image, attached to this one
    other = published(store, "b", small_wheels[0])
    lying = bundle_bytes(dsse.sign(PAYLOAD_TYPE, statement_bytes(other), key))
    target = RegistryRepository(RegistryClient(registry.host), "prov/tampered")
    image = published(target, "a", small_wheels[1])
    subject = Subject(image.digest, len(target.get_manifest(image.digest)), MANIFEST_TYPE)
    attach(
        target,
        subject,
        BUNDLE_TYPE,
        lying,
        title="lying.sigstore.json",
        annotations={},
        existing=list_referrers(target, image.digest),
    )
    with pytest.raises(VerificationError, match=f"its subject names {other.digest}, not the image {image.digest}"):
        verify_attached(target, image.digest, key.public_key())
    assert envelope_of(lying)["payloadType"] == PAYLOAD_TYPE


def test_a_registry_with_the_referrers_api_lists_them_itself(
    registry: Registry, small_wheels: tuple[Path, Path]
) -> None:
    proxy = ReferrersProxy(registry.host)
    try:
        store = RegistryRepository(RegistryClient(proxy.host), "prov/api")
        facts = published(store, "a", small_wheels[0])
        key = ec.generate_private_key(ec.SECP256R1())
        done, _ = attach_provenance(store, facts, key)
        assert fallback_tag(facts.digest) not in store.list_tags()  # OCI-Subject said it is listed
        assert not [seen for seen in proxy.seen if seen[0] == "PUT" and "/manifests/sha256-" in seen[1]]
        assert [item.digest for item in attached_to(store, facts.digest)] == [item.digest for item in done]
        assert verify_attached(store, facts.digest, key.public_key())["predicateType"] == SLSA_PROVENANCE
        again, sent = attach_provenance(store, facts, key)
        assert {item.status for item in again} == {"present"} and sent == 0
    finally:
        proxy.stop()

"""The provenance documents' bytes (core/provenance): the DSSE pre-authentication encoding
against the DSSE spec's published vector, signatures both ways, and statement and SBOM
bytes that depend on the image alone."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from bot.core.image.oci import WheelEntry
from bot.core.provenance import dsse
from bot.core.provenance.bundle import BUNDLE_TYPE, bundle_bytes, envelope_of
from bot.core.provenance.sbom import sbom_bytes
from bot.core.provenance.statement import (
    PAYLOAD_TYPE,
    SLSA_PROVENANCE,
    STATEMENT_TYPE,
    BuildFacts,
    checked_statement,
    statement_bytes,
)

# github.com/secure-systems-lab/dsse protocol.md, "Test Vectors": the body, type, PAE, the
# P-256 key (X, Y) and the signature (raw r‖s, base64) it publishes.
VECTOR_TYPE = "http://example.com/HelloWorld"
VECTOR_BODY = b"hello world"
VECTOR_PAE = b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
VECTOR_X = 46950820868899156662930047687818585632848591499744589407958293238635476079160
VECTOR_Y = 5640078356564379163099075877009565129882514886557779369047442380624545832820
VECTOR_D = 97358161215184420915383655311931858321456579547487070936769975997791359926199
VECTOR_SIG = "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA=="

DIGEST = "sha256:" + "ab" * 32
WHEEL = WheelEntry(
    "demo_cache-0.1.0-py3-none-any.whl",
    "cd" * 32,
    1234,
    "demo-cache",
    "0.1.0",
    ("numpy>=2.3",),
    ("gfx942", "gfx950"),
    ("py3-none-any",),
    ("libamdhip64.so.7",),
)


def test_pae_is_the_specs_example() -> None:
    assert dsse.pae(VECTOR_TYPE, VECTOR_BODY) == VECTOR_PAE
    assert dsse.pae("", b"") == b"DSSEv1 0  0 "


def test_the_specs_published_signature_verifies_over_our_pae_and_fails_over_another_body() -> None:
    raw = base64.b64decode(VECTOR_SIG)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public = ec.EllipticCurvePublicNumbers(VECTOR_X, VECTOR_Y, ec.SECP256R1()).public_key()
    envelope = {
        "payload": base64.b64encode(VECTOR_BODY).decode(),
        "payloadType": VECTOR_TYPE,
        "signatures": [{"sig": base64.b64encode(der).decode()}],
    }
    assert dsse.verify(envelope, public) == (VECTOR_TYPE, VECTOR_BODY)
    with pytest.raises(ValueError, match="no signature"):
        dsse.verify({**envelope, "payload": base64.b64encode(b"hello world!").decode()}, public)
    with pytest.raises(ValueError, match="no signature"):
        dsse.verify({**envelope, "payloadType": "http://example.com/Other"}, public)
    private = ec.derive_private_key(VECTOR_D, ec.SECP256R1())
    assert private.public_key().public_numbers() == public.public_numbers()


@pytest.mark.parametrize(
    "make",
    [lambda: ec.generate_private_key(ec.SECP256R1()), ed25519.Ed25519PrivateKey.generate],
    ids=["p256", "ed25519"],
)
def test_a_signed_bundle_verifies_with_its_key_alone_and_is_reproducible(make) -> None:  # type: ignore[no-untyped-def]
    key = make()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    loaded = dsse.load_signing_key(pem, "the test key")
    public = dsse.load_public_key(dsse.public_pem(loaded), "its public key")
    data = bundle_bytes(dsse.sign(PAYLOAD_TYPE, b'{"x":1}', loaded))
    assert data == bundle_bytes(dsse.sign(PAYLOAD_TYPE, b'{"x":1}', loaded))  # RFC 6979 / Ed25519
    bundle = json.loads(data)
    assert bundle["mediaType"] == BUNDLE_TYPE
    assert bundle["verificationMaterial"] == {"publicKey": {"hint": dsse.key_hint(public)}, "tlogEntries": []}
    assert dsse.verify(envelope_of(data), public) == (PAYLOAD_TYPE, b'{"x":1}')
    with pytest.raises(ValueError, match="no signature"):
        dsse.verify(envelope_of(data), make().public_key())


def test_keys_wheelpin_cannot_use_are_said_without_their_bytes() -> None:
    with pytest.raises(ValueError, match=r"^WHEELPIN_SIGNING_KEY: not a PEM private key$"):
        dsse.load_signing_key(
            b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n", "WHEELPIN_SIGNING_KEY"
        )
    p384 = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(ValueError, match="ECDSA P-256 or Ed25519"):
        dsse.load_signing_key(p384, "key.pem")
    with pytest.raises(ValueError, match="not a bundle|not a Sigstore bundle"):
        envelope_of(b'{"mediaType": "x"}')


def facts(**changes: object) -> BuildFacts:
    given: dict[str, object] = dict(
        repository="127.0.0.1:5000/lmcache",
        digest=DIGEST,
        tag="v1",
        wheels=(WHEEL,),
        source="https://github.com/o/u",
        revision="05fc77a0" * 5,
        component="lmcache",
        rules="0123456789abcdef",
        build="run https://github.com/o/u/actions/runs/1",
        verification={"result": "passed"},
    )
    return BuildFacts(**{**given, **changes})  # type: ignore[arg-type]


def test_the_statement_names_the_image_its_source_and_build_in_reproducible_bytes() -> None:
    data = statement_bytes(facts())
    assert data == statement_bytes(facts())
    statement = checked_statement(data, DIGEST)
    assert statement["_type"] == STATEMENT_TYPE and statement["predicateType"] == SLSA_PROVENANCE
    definition = statement["predicate"]["buildDefinition"]
    assert definition["externalParameters"] == {
        "repository": "https://github.com/o/u",
        "revision": "05fc77a0" * 5,
        "component": "lmcache",
        "tag": "v1",
    }
    assert definition["resolvedDependencies"] == [
        {"uri": "git+https://github.com/o/u@" + "05fc77a0" * 5, "digest": {"gitCommit": "05fc77a0" * 5}}
    ]
    assert definition["internalParameters"]["build"] == "run https://github.com/o/u/actions/runs/1"
    assert statement["predicate"]["runDetails"]["byproducts"][0]["digest"] == {"sha256": "cd" * 32}
    with pytest.raises(ValueError, match="not the image"):
        checked_statement(data, "sha256:" + "ef" * 32)
    with pytest.raises(ValueError, match="predicate type"):
        checked_statement(data.replace(b"slsa.dev/provenance/v1", b"slsa.dev/provenance/v0.2"), DIGEST)


def test_the_statement_names_the_run_attempt_that_built_the_wheels_and_no_other_metadata() -> None:
    """SLSA's `runDetails.metadata.invocationId`, in the GitHub Actions workflow build type's
    form (slsa-framework.github.io/github-actions-buildtypes/workflow/v1, "Metadata"), where
    a workflow run built the wheels; the same facts give the same bytes, and a build that was
    no run writes the statement it wrote before (an image republished adds no second copy)."""
    attempt = "https://github.com/o/u/actions/runs/1/attempts/2"
    data = statement_bytes(facts(invocation=attempt))
    assert data == statement_bytes(facts(invocation=attempt))
    assert checked_statement(data, DIGEST)["predicate"]["runDetails"]["metadata"] == {"invocationId": attempt}
    assert data != statement_bytes(facts(invocation=attempt.replace("/2", "/3")))
    local = checked_statement(statement_bytes(facts(build="`build.command` on host")), DIGEST)
    assert local["predicate"]["runDetails"]["metadata"] == {}
    assert b'"metadata":{}' in statement_bytes(facts())


def test_the_sbom_lists_each_wheel_with_its_facts_and_no_time() -> None:
    data = sbom_bytes("127.0.0.1:5000/lmcache", DIGEST, [WHEEL])
    assert data == sbom_bytes("127.0.0.1:5000/lmcache", DIGEST, [WHEEL])
    bom = json.loads(data)
    assert bom["bomFormat"] == "CycloneDX" and "timestamp" not in bom.get("metadata", {})
    (wheel,) = bom["components"]
    assert wheel["purl"] == "pkg:pypi/demo-cache@0.1.0?file_name=demo_cache-0.1.0-py3-none-any.whl"
    properties = {(item["name"], item["value"]) for item in wheel["properties"]}
    assert {
        ("wheelpin:gpu_arch", "gfx942"),
        ("wheelpin:gpu_arch", "gfx950"),
        ("wheelpin:python_tag", "py3-none-any"),
        ("wheelpin:needed", "libamdhip64.so.7"),
        ("wheelpin:requires_dist", "numpy>=2.3"),
    } == properties
    assert bom["metadata"]["component"]["type"] == "container"


def test_the_sbom_says_a_wheel_s_installed_size_and_variant() -> None:
    from dataclasses import replace

    variant = replace(WHEEL, installed=5678, variant="amd_mi3xx", variant_properties=("amd :: gfx_arch :: gfx942",))
    (wheel,) = json.loads(sbom_bytes("127.0.0.1:5000/lmcache", DIGEST, [variant]))["components"]
    properties = {(item["name"], item["value"]) for item in wheel["properties"]}
    assert {
        ("wheelpin:installed_bytes", "5678"),
        ("wheelpin:variant_label", "amd_mi3xx"),
        ("wheelpin:variant_property", "amd :: gfx_arch :: gfx942"),
    } <= properties

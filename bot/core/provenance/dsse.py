"""DSSE envelopes (github.com/secure-systems-lab/dsse, protocol.md and envelope.md): the
signature over an in-toto statement, with the operator's key.

The signature is over the pre-authentication encoding
    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
(LEN in ASCII decimal, no leading zeros), never over the body alone. Keys: ECDSA P-256
with SHA-256 (the signature DER-encoded, as cosign and sigstore-python write it, its
nonce deterministic as RFC 6979 makes it) or Ed25519, PEM-encoded (PKCS#8 or, for ECDSA,
SEC1; the public key as SubjectPublicKeyInfo).
A key's bytes are never put in an error or a log line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

SigningKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey = ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey


def pae(payload_type: str, body: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(body), body)


def load_signing_key(pem: bytes, where: str) -> SigningKey:
    """The private key in `pem`; ValueError naming `where` (a file, a variable), never the key."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except TypeError:
        raise ValueError(f"{where}: the key is encrypted; give it unencrypted (kept as a secret)") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"{where}: not a PEM private key") from None
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key
    if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
        return key
    raise ValueError(f"{where}: wheelpin signs with ECDSA P-256 or Ed25519 keys, not {type(key).__name__}")


def load_public_key(pem: bytes, where: str) -> PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"{where}: not a PEM public key") from None
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        return key
    raise ValueError(f"{where}: wheelpin verifies ECDSA P-256 or Ed25519 keys, not {type(key).__name__}")


def public_pem(key: SigningKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_hint(key: PublicKey) -> str:
    """An unauthenticated hint naming the key (the bundle's `publicKey.hint`, the
    signature's `keyid`): the sha256 of its DER SubjectPublicKeyInfo, as hex."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signature: bytes
    keyid: str

    def to_json(self) -> dict[str, Any]:
        """envelope.md's JSON: payload and sig in standard base64."""
        return {
            "payload": base64.b64encode(self.payload).decode(),
            "payloadType": self.payload_type,
            "signatures": [{"keyid": self.keyid, "sig": base64.b64encode(self.signature).decode()}],
        }


def sign(payload_type: str, payload: bytes, key: SigningKey) -> Envelope:
    message = pae(payload_type, payload)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        signature = key.sign(message)
    else:
        # RFC 6979 nonces: the same statement and key give the same signature, so a
        # republished image's bundle has the same digest and is found attached already
        signature = key.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    return Envelope(payload_type, payload, signature, key_hint(key.public_key()))


def verify(envelope: dict[str, Any], key: PublicKey) -> tuple[str, bytes]:
    """(payloadType, payload) of a JSON envelope one of whose signatures `key` made over its
    PAE; ValueError, one sentence, otherwise. The keyid is a hint only (protocol.md: it
    MUST NOT be used for security decisions): every signature is tried."""
    payload_type = envelope.get("payloadType")
    signatures = envelope.get("signatures")
    if not isinstance(payload_type, str) or not isinstance(signatures, list) or not signatures:
        raise ValueError("the envelope has no payloadType or no signature")
    payload = _decoded(envelope.get("payload"), "payload")
    message = pae(payload_type, payload)
    for item in signatures:
        signature = _decoded(item.get("sig") if isinstance(item, dict) else None, "signature")
        try:
            if isinstance(key, ed25519.Ed25519PublicKey):
                key.verify(signature, message)
            else:
                key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        return payload_type, payload
    raise ValueError("no signature of the envelope was made by the key given")


def _decoded(text: object, what: str) -> bytes:
    """Standard or URL-safe base64: protocol.md says verifiers MUST accept either."""
    if not isinstance(text, str):
        raise ValueError(f"the envelope's {what} is missing")
    try:
        return base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the envelope's {what} is not base64") from None

"""The Sigstore bundle v0.3 that carries a signed statement, as cosign 3 writes one for a
key it was given (`cosign attest --key`): `verificationMaterial.publicKey.hint` names the
key, there is no certificate, and the content is a `dsseEnvelope`. The JSON is made and
read with sigstore-models, the pydantic models of Sigstore's protobuf-specs
(sigstore_bundle.proto), so its field names and base64 are the spec's.

No transparency-log entry is written (`tlogEntries` empty): a key the operator holds is
the trust here, as with `cosign attest --key … --tlog-upload=false`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from sigstore_models.bundle.v1 import Bundle

from .dsse import Envelope

BUNDLE_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"  # protobuf-specs' media type for v0.3


def bundle_bytes(envelope: Envelope) -> bytes:
    """The bundle's JSON, its keys sorted (the same envelope: the same bytes). It is made in
    the protobuf JSON shape and read by the models, which refuse any field out of place."""
    document = {
        "mediaType": BUNDLE_TYPE,
        "verificationMaterial": {"publicKey": {"hint": envelope.keyid}, "tlogEntries": []},
        "dsseEnvelope": envelope.to_json(),
    }
    model = Bundle.from_dict(document)
    return json.dumps(model.to_dict(), sort_keys=True, separators=(",", ":")).encode()


def envelope_of(data: bytes) -> dict[str, Any]:
    """The DSSE envelope (envelope.md's JSON) a bundle holds; ValueError, one sentence, for
    anything that is not a Sigstore bundle with a DSSE envelope."""
    try:
        model = Bundle.from_json(data)
    except ValidationError:
        raise ValueError("the attached document is not a Sigstore bundle") from None
    if model.dsse_envelope is None:
        raise ValueError("the Sigstore bundle holds a message signature, not a DSSE envelope")
    envelope: dict[str, Any] = model.dsse_envelope.to_dict()
    return envelope

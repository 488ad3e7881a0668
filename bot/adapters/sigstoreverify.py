"""One GitHub artifact attestation verified offline (docs/design.md §1.3, `trust`): a Sigstore
bundle as GitHub's attestations API gives it, checked with sigstore-python against the
trusted roots kept in the cache, for one wheel's sha256. Nothing is fetched: no TUF update,
no transparency-log query; what the bundle carries (certificate, SCT, log entry with its
inclusion proof, checkpoint and signed entry timestamp, or RFC 3161 timestamps) is checked
against the roots the operator put there.

What passes: the certificate chains to a root's CA at a time the log (or a timestamp
authority) vouches for, its SCT is a root's CT log's, the log entry is included under a
signed checkpoint, the DSSE signature is the certificate's key's, the certificate is GitHub
Actions' OIDC identity of the configured workflow at an accepted ref, and the signed
statement is an in-toto v1 SLSA provenance naming the wheel's sha256 as a subject. Anything
else is a `NotAttested` with one sentence; nothing unchecked passes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.asn1 import decode_der
from sigstore.errors import Error as SigstoreError
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier
from sigstore.verify.policy import AllOf, Identity, OIDCIssuer, VerificationPolicy
from sigstore_models.trustroot import v1 as trustroot_v1

from ..core.errors import ConfigError
from ..core.provenance.statement import PAYLOAD_TYPE, checked_statement
from ..core.trust.decide import Signer
from ..core.trust.policy import ACTIONS_ISSUER, Trust

# where the roots are kept in the cache: what `gh attestation trusted-root` prints (one
# trusted root per line: Sigstore's public-good instance, GitHub's own for private repositories)
TRUSTED_ROOTS = Path("trust") / "trusted_root.jsonl"
# https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md, https://slsa.dev/spec/v1.0/provenance
# https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md: the run's URL
RUN_INVOCATION_URI = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.21")
MAX_ROOTS = 16


class NotAttested(Exception):
    """One attestation that does not establish the wheel's provenance, and why (one sentence)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class TrustedRoots:
    roots: tuple[TrustedRoot, ...]
    path: Path

    @classmethod
    def load(cls, cache: Path) -> TrustedRoots:
        """The roots kept at `cache`/trust/trusted_root.jsonl; a missing or unreadable file is
        a config error naming how to fill it."""
        path = cache / TRUSTED_ROOTS
        how = f"`gh attestation trusted-root > {path}` writes GitHub's and Sigstore's (it is read offline)"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: no trusted root to verify attestations with; {how}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot be read ({exc}); {how}") from None
        lines = [line for line in text.splitlines() if line.strip()]
        documents = [text] if text.lstrip().startswith("{") and _one_document(text) else lines
        if not documents or len(documents) > MAX_ROOTS:
            raise ConfigError(f"{path}: holds {len(documents)} trusted roots (1 to {MAX_ROOTS} are read); {how}")
        roots = []
        for number, document in enumerate(documents, 1):
            try:  # what TrustedRoot.from_file does with a file's bytes, for each line
                roots.append(TrustedRoot(trustroot_v1.TrustedRoot.from_json(document)))
            except (ValueError, SigstoreError) as exc:
                raise ConfigError(f"{path}: trusted root {number} is not one ({_first_line(exc)}); {how}") from None
        return cls(tuple(roots), path)


def _one_document(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def policy(trust: Trust) -> VerificationPolicy:
    """The certificate identity `trust` accepts: GitHub Actions' issuer, and the signer
    workflow at `signer_ref` (sigstore's `Identity`), or at any branch or tag."""
    if trust.signer_ref is not None:
        return Identity(identity=trust.identity, issuer=ACTIONS_ISSUER)
    return AllOf([OIDCIssuer(ACTIONS_ISSUER), _WorkflowAtAnyRef(trust)])


class _WorkflowAtAnyRef:
    """The signer workflow at any branch or tag (never a pull request's merge ref)."""

    def __init__(self, trust: Trust) -> None:
        self.trust = trust

    def verify(self, cert: x509.Certificate) -> None:
        from sigstore.errors import VerificationError

        if not any(self.trust.accepts(uri) for uri in _uris(cert)):
            raise VerificationError(f"certificate identity is not {self.trust.identity}")


def verify(bundle: Mapping[str, Any], sha256: str, trust: Trust, roots: TrustedRoots) -> Signer:
    """Who signed `bundle` for the wheel of `sha256`, or NotAttested saying why not."""
    try:
        parsed = Bundle.from_json(json.dumps(bundle))
    except (SigstoreError, ValueError) as exc:
        raise NotAttested(f"not a Sigstore bundle ({_first_line(exc)})") from None
    cert = parsed.signing_certificate
    identities = _uris(cert)
    if not any(trust.accepts(uri) for uri in identities):
        raise NotAttested(f"signed by {', '.join(identities) or 'no workflow'}, not {trust.identity}")
    checked = policy(trust)
    faults: list[str] = []
    for root in roots.roots:
        try:
            payload_type, payload = Verifier(trusted_root=root).verify_dsse(parsed, checked)
        except SigstoreError as exc:
            faults.append(_first_line(exc))
            continue
        return _signer(cert, payload_type, payload, sha256)
    said = faults[0] if len(faults) == 1 else f"no trusted root of {roots.path} verifies it: {faults[0]}"
    raise NotAttested(f"its signature does not verify ({said})")


def _signer(cert: x509.Certificate, payload_type: str, payload: bytes, sha256: str) -> Signer:
    """The verified statement read: an in-toto v1 SLSA provenance with `sha256` among its subjects."""
    if payload_type != PAYLOAD_TYPE:
        raise NotAttested(f"it signs a {payload_type}, not an in-toto statement")
    try:
        checked_statement(payload, sha256, what="the wheel")
    except ValueError as exc:
        raise NotAttested(f"its signed statement: {exc}") from None
    identity = next(uri for uri in _uris(cert))
    return Signer(identity=identity, run=_extension_text(cert, RUN_INVOCATION_URI) or "(no run named)")


def _uris(cert: x509.Certificate) -> list[str]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return list(names.get_values_for_type(x509.UniformResourceIdentifier))


def _extension_text(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> str | None:
    """A Fulcio extension's UTF8String (the 1.3.6.1.4.1.57264.1.8+ ones are DER-encoded)."""
    try:
        value = cert.extensions.get_extension_for_oid(oid).value
    except x509.ExtensionNotFound:
        return None
    if not isinstance(value, x509.UnrecognizedExtension):
        return None
    try:
        return decode_der(str, value.value)
    except ValueError:
        return None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(part) for part in exc.args) if exc.args else type(exc).__name__
    return text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__

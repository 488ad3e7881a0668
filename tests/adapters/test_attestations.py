"""GitHub attestations read through the emulator and verified offline by sigstore-python
against the tests' own Sigstore (tests/fixtures/attestations.py): what passes, and each way
an attestation fails to establish who built a wheel."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.github.attestations import AttestationsReader
from bot.adapters.github.client import Client
from bot.adapters.sigstoreverify import TRUSTED_ROOTS, NotAttested, TrustedRoots, verify
from bot.core.errors import ConfigError
from bot.core.trust.policy import Trust
from tests.fixtures.attestations import TestSigstore, statement
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.openapi import validate_recorded

WORKFLOW = "ROCm/ATOM/.github/workflows/lmcache-rocm-wheel.yaml"
SHA = hashlib.sha256(b"a wheel").hexdigest()
WHEEL = "lmcache-0.3.9-cp312-cp312-linux_x86_64.whl"
REQUIRED = Trust(attestations="required", signer_workflow=WORKFLOW, signer_ref="refs/heads/main")


@pytest.fixture(scope="module")
def sigstore() -> TestSigstore:
    return TestSigstore()


@pytest.fixture
def roots(sigstore: TestSigstore, tmp_path: Path) -> TrustedRoots:
    path = tmp_path / TRUSTED_ROOTS
    path.parent.mkdir(parents=True)
    path.write_text(sigstore.trusted_root_text() + "\n")
    return TrustedRoots.load(tmp_path)


def test_a_valid_attestation_names_the_workflow_at_its_ref_and_the_run(
    sigstore: TestSigstore, roots: TrustedRoots
) -> None:
    bundle = sigstore.bundle(
        {WHEEL: SHA}, workflow=WORKFLOW, run_url="https://github.com/ROCm/ATOM/actions/runs/77/attempts/2"
    )
    signer = verify(bundle, SHA, REQUIRED, roots)
    assert signer.workflow == f"{WORKFLOW}@refs/heads/main"
    assert signer.run == "https://github.com/ROCm/ATOM/actions/runs/77/attempts/2"
    # without signer_ref: any branch or tag of the workflow
    assert verify(
        sigstore.bundle({WHEEL: SHA}, workflow=WORKFLOW, ref="refs/tags/v0.3.9"),
        SHA,
        Trust(attestations="required", signer_workflow=WORKFLOW),
        roots,
    ).workflow.endswith("@refs/tags/v0.3.9")


@pytest.mark.parametrize(
    ("signed", "said"),
    [
        (
            {"workflow": "ROCm/ATOM/.github/workflows/other.yaml"},
            f"signed by https://github.com/ROCm/ATOM/.github/workflows/other.yaml@refs/heads/main, "
            f"not https://github.com/{WORKFLOW}@refs/heads/main",
        ),
        (
            {"workflow": "someone/fork/.github/workflows/lmcache-rocm-wheel.yaml"},
            "signed by https://github.com/someone/fork/",
        ),
        ({"ref": "refs/heads/dev"}, f"signed by https://github.com/{WORKFLOW}@refs/heads/dev, not"),
    ],
)
def test_another_workflow_or_ref_is_refused(
    sigstore: TestSigstore, roots: TrustedRoots, signed: dict[str, str], said: str
) -> None:
    bundle = sigstore.bundle({WHEEL: SHA}, **{"workflow": WORKFLOW, **signed})
    with pytest.raises(NotAttested) as caught:
        verify(bundle, SHA, REQUIRED, roots)
    assert caught.value.why.startswith(said), caught.value.why


def test_a_pull_request_s_run_is_refused_even_when_any_ref_is(sigstore: TestSigstore, roots: TrustedRoots) -> None:
    """The lesson of a digest an unmerged pull request's CI pushed: refs/pull/… never counts."""
    bundle = sigstore.bundle({WHEEL: SHA}, workflow=WORKFLOW, ref="refs/pull/12/merge")
    with pytest.raises(NotAttested, match=r"@refs/pull/12/merge, not .*@\*"):
        verify(bundle, SHA, Trust(attestations="required", signer_workflow=WORKFLOW), roots)


def test_a_statement_about_another_digest_is_refused(sigstore: TestSigstore, roots: TrustedRoots) -> None:
    """Validly signed, but for other bytes: listed under the wheel's digest all the same."""
    bundle = sigstore.bundle({WHEEL: hashlib.sha256(b"other bytes").hexdigest()}, workflow=WORKFLOW)
    with pytest.raises(NotAttested, match=f"its subject names .*, not the wheel sha256:{SHA[:12]}"):
        verify(bundle, SHA, REQUIRED, roots)


def test_a_tampered_subject_breaks_the_signature(sigstore: TestSigstore, roots: TrustedRoots) -> None:
    bundle = sigstore.bundle({WHEEL: hashlib.sha256(b"other bytes").hexdigest()}, workflow=WORKFLOW)
    payload = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    payload["subject"][0]["digest"]["sha256"] = SHA  # rewritten after signing
    bundle["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    with pytest.raises(NotAttested, match="its signature does not verify"):
        verify(bundle, SHA, REQUIRED, roots)


def test_a_bundle_of_another_sigstore_or_issuer_is_refused(sigstore: TestSigstore, roots: TrustedRoots) -> None:
    stranger = TestSigstore()  # same shape, keys nobody trusts here
    with pytest.raises(NotAttested, match="its signature does not verify"):
        verify(stranger.bundle({WHEEL: SHA}, workflow=WORKFLOW), SHA, REQUIRED, roots)
    with pytest.raises(NotAttested, match="its signature does not verify.*OIDCIssuer"):
        verify(
            sigstore.bundle({WHEEL: SHA}, workflow=WORKFLOW, issuer="https://token.example.org"), SHA, REQUIRED, roots
        )


def test_a_valid_signature_over_something_else_than_provenance_is_refused(
    sigstore: TestSigstore, roots: TrustedRoots
) -> None:
    sbom = {
        **statement({WHEEL: SHA}, workflow=WORKFLOW, ref="refs/heads/main", run_url="x"),
        "predicateType": "https://cyclonedx.org/bom",
    }
    with pytest.raises(NotAttested, match="its predicate type is .*, not https://slsa.dev/provenance/v1"):
        verify(sigstore.bundle({}, workflow=WORKFLOW, payload=sbom), SHA, REQUIRED, roots)


def test_a_bundle_without_its_log_entry_is_not_one(sigstore: TestSigstore, roots: TrustedRoots) -> None:
    """As a private repository's attestations are (GitHub's own Sigstore: a timestamp, no log
    entry): sigstore-python verifies none without its entry, so they are refused, not passed."""
    bundle = sigstore.bundle({WHEEL: SHA}, workflow=WORKFLOW)
    bundle["verificationMaterial"]["tlogEntries"] = []
    with pytest.raises(NotAttested, match="not a Sigstore bundle"):
        verify(bundle, SHA, REQUIRED, roots)


def test_a_broken_inclusion_proof_is_refused(sigstore: TestSigstore, roots: TrustedRoots) -> None:
    bundle = sigstore.bundle({WHEEL: SHA}, workflow=WORKFLOW)
    proof = bundle["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]
    proof["hashes"][0] = base64.b64encode(b"\0" * 32).decode()
    with pytest.raises(NotAttested, match="inclusion proof"):
        verify(bundle, SHA, REQUIRED, roots)


def test_the_trusted_roots_are_the_operator_s_to_give(sigstore: TestSigstore, tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match="no trusted root to verify attestations with; `gh attestation trusted-root > .*trusted_root.jsonl`",
    ):
        TrustedRoots.load(tmp_path)
    path = tmp_path / TRUSTED_ROOTS
    path.parent.mkdir(parents=True)
    path.write_text("{not json\n")
    with pytest.raises(ConfigError, match="trusted root 1 is not one"):
        TrustedRoots.load(tmp_path)
    # as `gh attestation trusted-root` prints them: one a line, the one that signed anywhere
    other = TestSigstore()
    path.write_text(other.trusted_root_text() + "\n" + sigstore.trusted_root_text() + "\n")
    loaded = TrustedRoots.load(tmp_path)
    assert len(loaded.roots) == 2
    assert verify(sigstore.bundle({WHEEL: SHA}, workflow=WORKFLOW), SHA, REQUIRED, loaded).run
    path.write_text(json.dumps(sigstore.trusted_root(), indent=2))  # one document over several lines
    assert len(TrustedRoots.load(tmp_path).roots) == 1


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[GitHubEmulator]:
    made = GitHubEmulator(tmp_path / "github", tokens={"t"})
    source = tmp_path / "source"
    from bot.adapters.git import git

    git(["init", "--quiet", "-b", "main", str(source)])
    git(
        ["-c", "user.name=a", "-c", "user.email=a@example.org", "commit", "--quiet", "--allow-empty", "-m", "x"],
        cwd=source,
    )
    made.create_repo("ROCm", "ATOM", source)
    yield made
    made.stop()


def test_the_reader_follows_the_cursor_pages_and_takes_a_404_as_none(emulator: GitHubEmulator) -> None:
    bundles: list[dict[str, Any]] = [{"mediaType": "x", "n": n} for n in range(130)]
    for bundle in bundles:
        emulator.attest("ROCm", "ATOM", SHA, bundle)
    reader = AttestationsReader(Client(emulator.url, token="t"))
    listed = list(reader.listed("ROCm/ATOM", SHA))
    assert [item.bundle for item in listed] == bundles  # two pages of 100 and 30, in order
    assert all(item.bundle_url and item.bundle_url.endswith(".json.sn") for item in listed)
    assert list(reader.listed("ROCm/ATOM", hashlib.sha256(b"unattested").hexdigest())) == []
    pages = [r for r in emulator.recorded if r.template.endswith("/attestations/{subject_digest}")]
    assert len(pages) == 2 and validate_recorded(pages) == 2  # GitHub's OpenAPI shape

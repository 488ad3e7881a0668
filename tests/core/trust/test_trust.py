"""core/trust: the `trust` table as a config accepts it, and the decision of a bump from the
provenance found for the new wheels and the pinned ones."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.core.trust.decide import (
    Found,
    Signer,
    Source,
    checked_after_build,
    judge,
    needs_pinned,
    provenance_of,
    statement_downgrade,
)
from bot.core.trust.policy import Trust

WORKFLOW = "ROCm/ATOM/.github/workflows/lmcache-rocm-wheel.yaml"
SIGNER = Signer(
    f"https://github.com/{WORKFLOW}@refs/heads/main", "https://github.com/ROCm/ATOM/actions/runs/9/attempts/1"
)
GOOD = Found("a.whl", "a" * 64, SIGNER)
NONE = Found("b.whl", "b" * 64, None, "GitHub lists no attestation of sha256:bbbbbbbbbbbb… in ROCm/ATOM")


def test_the_table_needs_a_signer_workflow_unless_off() -> None:
    assert not Trust().checked
    with pytest.raises(ValidationError, match="signer_workflow: attestations = 'required' needs the workflow"):
        Trust(attestations="required")  # type: ignore[arg-type]
    for bad in (
        {"signer_workflow": "ROCm/ATOM/lmcache.yaml"},
        {"signer_workflow": WORKFLOW, "signer_ref": "main"},
        {"signer_workflow": WORKFLOW, "attestations": "maybe"},
    ):
        with pytest.raises(ValidationError):
            Trust(**{"attestations": "optional", **bad})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ref", "identity", "accepted"),
    [
        ("refs/heads/main", f"https://github.com/{WORKFLOW}@refs/heads/main", True),
        ("refs/heads/main", f"https://github.com/{WORKFLOW}@refs/heads/main2", False),
        (None, f"https://github.com/{WORKFLOW}@refs/tags/v1.0", True),
        (None, f"https://github.com/{WORKFLOW}@refs/pull/3/merge", False),
        (None, f"https://github.com/{WORKFLOW}x@refs/heads/main", False),
        (None, "https://github.com/ROCm/ATOM/.github/workflows/other.yaml@refs/heads/main", False),
    ],
)
def test_which_identities_are_the_signer(ref: str | None, identity: str, accepted: bool) -> None:
    trust = Trust(attestations="required", signer_workflow=WORKFLOW, signer_ref=ref)  # type: ignore[arg-type]
    assert trust.accepts(identity) is accepted
    assert trust.repository == "ROCm/ATOM"


def test_provenance_is_every_wheel_s() -> None:
    assert provenance_of([GOOD]).source == Source.ATTESTATION
    assert provenance_of([GOOD, NONE]).source == Source.NONE and provenance_of([GOOD, NONE]).missing == (NONE,)
    assert provenance_of([]).source == Source.NONE


def test_decisions() -> None:
    required = Trust(attestations="required", signer_workflow=WORKFLOW)  # type: ignore[arg-type]
    optional = Trust(attestations="optional", signer_workflow=WORKFLOW)  # type: ignore[arg-type]
    allowing = optional.model_copy(update={"allow_downgrade": True})
    attested, bare = provenance_of([GOOD]), provenance_of([NONE])
    assert judge(Trust(), bare, attested).refused is None  # off: nothing looked at
    assert judge(required, attested, None).verification == (
        f"built by {WORKFLOW}@refs/heads/main, run https://github.com/ROCm/ATOM/actions/runs/9/attempts/1",
    )
    assert judge(required, bare, None).refused == (
        f"no valid attestation by https://github.com/{WORKFLOW}@*: b.whl: {NONE.problem}"
    )
    assert not needs_pinned(required, bare) and needs_pinned(optional, bare) and not needs_pinned(optional, attested)
    downgrade = judge(optional, bare, attested)
    assert downgrade.refused is not None and downgrade.refused.startswith(
        "trust downgrade: the pinned image's wheels were attested (built by "
    )
    allowed = judge(allowing, bare, attested)
    assert allowed.refused is None and allowed.notes[0].startswith("TRUST DOWNGRADE, allowed by trust.allow_downgrade")
    quiet = judge(optional, bare, bare)  # nothing to lose: let through, and said
    assert quiet.refused is None and quiet.notes[0].startswith("not attested: no valid attestation by")
    # the image digest's own attestation is said, never required
    image = Found("sha256:0123456789ab…", "c" * 64, SIGNER, listed=1)
    assert (
        judge(required, attested, None, image)
        .verification[1]
        .startswith("the image sha256:0123456789ab… is attested too: built by ")
    )
    bad_image = Found("sha256:0123456789ab…", "c" * 64, None, "attestation 1: signed by someone", listed=1)
    assert judge(required, attested, None, bad_image).notes == (
        "the image sha256:0123456789ab… has an attestation that does not verify: attestation 1: signed by someone",
    )
    unlisted = Found("sha256:0123456789ab…", "c" * 64, None, "GitHub lists none")
    assert judge(required, attested, None, unlisted) == judge(required, attested, None)
    assert checked_after_build(Trust()) is None
    assert checked_after_build(required) == (
        f"each wheel's GitHub attestation (signed by https://github.com/{WORKFLOW}@*, required)"
    )


def test_losing_wheelpin_s_own_signed_statement() -> None:
    off = Trust()
    allowing = off.model_copy(update={"allow_downgrade": True})
    new = "registry/x:tag@sha256:…"
    refused = statement_downgrade(off, pinned_signed=True, new_signed=False, new=new)
    assert refused.refused is not None and refused.refused.startswith("trust downgrade: the pinned image carries")
    assert new in refused.refused and refused.refused.endswith("trust.allow_downgrade = true accepts that")
    allowed = statement_downgrade(allowing, pinned_signed=True, new_signed=False, new=new)
    assert allowed.refused is None and allowed.notes[0].startswith("TRUST DOWNGRADE, allowed by trust.allow_downgrade")
    for pinned_signed, new_signed in ((True, True), (False, False), (False, True)):
        kept = statement_downgrade(off, pinned_signed=pinned_signed, new_signed=new_signed, new=new)
        assert kept.refused is None and kept.notes == ()

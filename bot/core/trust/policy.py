"""A component's `trust` table: whether its wheels must carry a GitHub artifact attestation
(`actions/attest-build-provenance`: SLSA provenance in a Sigstore bundle) signed by a given
workflow, and whether a bump may lose the provenance the pinned image had. Checked before a
bump by loop/trustcheck.py; decided by core/trust/decide.py."""

# No `from __future__ import annotations`: pydantic reads these annotations (see core/config/model.py).

import re
from enum import StrEnum
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

# https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect:
# the issuer of every GitHub Actions OIDC token, which Fulcio writes into the certificate
ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
WORKFLOW = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/\.github/workflows/[^/@\s]+\.ya?ml$"
PULL_REFS = "refs/pull/"  # a pull request's merge ref: code nobody merged


class Attestations(StrEnum):
    REQUIRED = "required"  # a wheel without a valid attestation is refused
    OPTIONAL = "optional"  # checked and said; losing one the pinned image had is a downgrade
    OFF = "off"  # not looked for


class Trust(BaseModel):
    """`trust = { attestations = "required", signer_workflow = "OWNER/REPO/.github/workflows/F.yaml" }`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attestations: Annotated[
        Attestations,
        Field(
            description="required: refuse a wheel without a valid GitHub attestation by signer_workflow; optional: "
            "check and say it, and refuse losing the pinned image's; off: do not look"
        ),
    ] = Attestations.OFF
    signer_workflow: Annotated[
        str | None,
        Field(
            pattern=WORKFLOW,
            description="OWNER/REPO/.github/workflows/FILE.yaml: the workflow whose GitHub Actions "
            "identity must have signed the attestation (its repository is asked)",
        ),
    ] = None
    signer_ref: Annotated[
        str | None,
        Field(
            pattern=r"^refs/(heads|tags)/\S+$",
            description="the ref that workflow must have run at (refs/heads/main); unset: any branch or tag, "
            "never a pull request's refs/pull/…",
        ),
    ] = None
    allow_downgrade: Annotated[
        bool,
        Field(
            description="accept a new image without verified provenance when the pinned one had it "
            "(said loudly in the proposal)"
        ),
    ] = False

    @model_validator(mode="after")
    def _signer(self) -> Self:
        if self.attestations != Attestations.OFF and self.signer_workflow is None:
            raise ValueError(
                f"signer_workflow: attestations = {self.attestations.value!r} needs the workflow "
                "that signs them (OWNER/REPO/.github/workflows/FILE.yaml)"
            )
        return self

    @property
    def checked(self) -> bool:
        return self.attestations != Attestations.OFF

    @property
    def repository(self) -> str:
        """OWNER/REPO of the signer workflow: where GitHub lists its attestations."""
        assert self.signer_workflow is not None
        return self.signer_workflow.split("/.github/", 1)[0]

    @property
    def identity(self) -> str:
        """The certificate identity expected, as GitHub's `job_workflow_ref` claim reads:
        https://github.com/OWNER/REPO/.github/workflows/F.yaml@REF (REF: `signer_ref`, or
        `*` for any branch or tag)."""
        assert self.signer_workflow is not None
        return f"https://github.com/{self.signer_workflow}@{self.signer_ref or '*'}"

    def accepts(self, identity: str) -> bool:
        """Whether a certificate's identity (a SAN URI) is the signer workflow at an accepted ref."""
        if self.signer_ref is not None:
            return identity == self.identity
        prefix = self.identity[:-1]
        ref = identity[len(prefix) :] if identity.startswith(prefix) else ""
        return bool(re.fullmatch(r"refs/(heads|tags)/\S+", ref)) and not ref.startswith(PULL_REFS)

"""The in-toto Statement v1 with a SLSA Provenance v1 predicate that wheelpin writes for each
image it publishes, and the checks `image verify` makes of one read back.

Shapes followed:
- in-toto Statement v1 (github.com/in-toto/attestation spec/v1/statement.md): `_type`
  "https://in-toto.io/Statement/v1", `subject` a list of ResourceDescriptors naming the
  image by its sha256, `predicateType`, `predicate`; media type application/vnd.in-toto+json.
- SLSA Provenance v1 (slsa.dev/spec/v1.0/provenance): `buildDefinition` (buildType,
  externalParameters, internalParameters, resolvedDependencies) and `runDetails`
  (builder.id and version, metadata, byproducts). `metadata.invocationId` is the GitHub
  Actions run attempt that built the wheels, in the form the GitHub Actions workflow build
  type gives it (slsa-framework.github.io/github-actions-buildtypes/workflow/v1, "Metadata":
  https://github.com/OWNER/REPO/actions/runs/RUN_ID/attempts/RUN_ATTEMPT); absent for
  a build that was no such run.

No time of this run is written: the bytes depend on the image and its build alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ... import PROJECT_URL, __version__
from ..image.oci import WheelEntry, canonical_json

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"  # the DSSE payloadType of an in-toto statement
# What `buildDefinition.externalParameters` means is defined by the build type: docs/provenance.md.
BUILD_TYPE = f"{PROJECT_URL}/blob/main/docs/provenance.md#build-type-v1"


@dataclass(frozen=True)
class BuildFacts:
    """What the statement says of one published image."""

    repository: str  # where the image lives: host/repo, or oci:FOLDER
    digest: str  # the image manifest's sha256 digest: the statement's subject
    tag: str
    wheels: tuple[WheelEntry, ...]
    source: str | None = None  # the upstream repository
    revision: str | None = None  # the upstream commit
    component: str | None = None
    rules: str | None = None  # verify.rules_digest of the component
    build: str | None = None  # who built the wheels: a run's URL, a command and host, a reused run, adopted
    invocation: str | None = None  # the CI run attempt that built them (runDetails.metadata.invocationId)
    verification: Mapping[str, Any] = field(default_factory=dict)


def statement(facts: BuildFacts) -> dict[str, Any]:
    external: dict[str, Any] = {"tag": facts.tag}
    if facts.source:
        external["repository"] = facts.source
    if facts.revision:
        external["revision"] = facts.revision
    if facts.component:
        external["component"] = facts.component
    internal: dict[str, Any] = {"verification": dict(facts.verification)}
    if facts.rules:
        internal["rules"] = facts.rules
    if facts.build:
        internal["build"] = facts.build
    dependencies = []
    if facts.source and facts.revision:
        dependencies.append({"uri": f"git+{facts.source}@{facts.revision}", "digest": {"gitCommit": facts.revision}})
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": facts.repository, "digest": {"sha256": facts.digest.removeprefix("sha256:")}}],
        "predicateType": SLSA_PROVENANCE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": external,
                "internalParameters": internal,
                "resolvedDependencies": dependencies,
            },
            "runDetails": {
                "builder": {"id": PROJECT_URL, "version": {"wheelpin": __version__}},
                "metadata": {"invocationId": facts.invocation} if facts.invocation else {},
                "byproducts": [
                    {"name": wheel.file, "digest": {"sha256": wheel.sha256}, "mediaType": "application/zip"}
                    for wheel in facts.wheels
                ],
            },
        },
    }


def statement_bytes(facts: BuildFacts) -> bytes:
    """The statement as it is attached and signed: canonical JSON (sorted keys, no spaces)."""
    return canonical_json(statement(facts))


def checked_statement(payload: bytes, digest: str, what: str = "the image") -> dict[str, Any]:
    """The statement `payload` holds, when it is an in-toto Statement v1 whose predicate is
    SLSA Provenance v1 and whose subject names `digest` (`what`: the image, or a wheel whose
    GitHub attestation it is); else ValueError, one sentence."""
    try:
        document = json.loads(payload)
    except ValueError:
        raise ValueError("the statement is not JSON") from None
    if not isinstance(document, dict) or document.get("_type") != STATEMENT_TYPE:
        raise ValueError(f"the payload is not an in-toto Statement v1 (its _type is not {STATEMENT_TYPE})")
    if document.get("predicateType") != SLSA_PROVENANCE:
        raise ValueError(f"its predicate type is {document.get('predicateType')!r}, not {SLSA_PROVENANCE}")
    subjects = document.get("subject")
    named = sorted(_subject_digests(subjects if isinstance(subjects, list) else []))
    wanted = "sha256:" + digest.removeprefix("sha256:").lower()
    if wanted not in named:
        raise ValueError(f"its subject names {', '.join(named) or 'no digest'}, not {what} {wanted}")
    return document


def _subject_digests(subjects: Sequence[Any]) -> set[str]:
    return {
        f"sha256:{item['digest']['sha256'].lower()}"
        for item in subjects
        if isinstance(item, dict)
        and isinstance(item.get("digest"), dict)
        and isinstance(item["digest"].get("sha256"), str)
    }

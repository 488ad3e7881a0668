"""`trust`, end to end on the local platform: a real build, the OCI layout, the GitHub
emulator's attestations API serving bundles of the tests' own Sigstore
(tests/fixtures/attestations.py), verified offline by the pass against the trusted root in
its cache. Each pass runs dry first (World.reconcile), the plan held to what it did."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.git import git
from bot.adapters.sigstoreverify import TRUSTED_ROOTS
from tests.app.test_reconcile_github import WORKFLOW as ACTIONS_BUILD
from tests.app.test_reconcile_github import workflow_build
from tests.app.worlds import BRANCH, NEW_VERSION, World, component, make_world, on_github, runner_build
from tests.cli import Result, wheelpin
from tests.fixtures.attestations import TestSigstore
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.openapi import validate_recorded

WORKFLOW = "ROCm/ATOM/.github/workflows/lmcache-rocm-wheel.yaml"
IDENTITY = f"https://github.com/{WORKFLOW}@refs/heads/main"
RUN = "https://github.com/ROCm/ATOM/actions/runs/4242/attempts/1"


@pytest.fixture(scope="module")
def sigstore() -> TestSigstore:
    return TestSigstore()


@dataclass
class Attested:
    world: World
    emulator: GitHubEmulator
    sigstore: TestSigstore
    asked: list[str]  # the digests looked up

    def trust(self, table: str) -> None:
        self.world.set_config("pins = [", f"trust = {table}\npins = [")

    def attest(
        self, which: Any, *, subjects: dict[str, str] | None = None, workflow_of: Any = None, **signed: Any
    ) -> None:
        """Each digest `which` accepts gets a bundle of `subjects` (default: that digest), by
        the workflow `workflow_of` names for it (default: WORKFLOW), signed as `signed` says."""

        def attester(owner: str, repo: str, sha256: str) -> list[dict[str, Any]]:
            self.asked.append(sha256)
            if (owner, repo) != ("ROCm", "ATOM") or not which(sha256):
                return []
            workflow = workflow_of(sha256) if workflow_of is not None else signed.get("workflow", WORKFLOW)
            return [self.sigstore.bundle(subjects or {"wheel.whl": sha256}, **{**signed, "workflow": workflow})]

        self.emulator.attester = attester

    def body(self) -> str:
        return git(["log", "-1", "--format=%B", BRANCH], cwd=self.world.downstream)

    def pinned_sha256(self) -> str:
        text = (self.world.downstream / "docker" / "Dockerfile").read_text()
        found = re.search(r"^ARG DEMO_WHEEL_SHA256=([0-9a-f]{64})$", text, re.MULTILINE)
        assert found is not None
        return found.group(1)


@pytest.fixture
def attested(tmp_path: Path, sigstore: TestSigstore) -> Iterator[Attested]:
    world = make_world(tmp_path)
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    emulator.create_repo("ROCm", "ATOM", world.upstream)
    roots = Path(world.env["WHEELPIN_CACHE_DIR"]) / TRUSTED_ROOTS
    roots.parent.mkdir(parents=True, exist_ok=True)
    roots.write_text(sigstore.trusted_root_text() + "\n")
    world.env.update(WHEELPIN_GITHUB_API_URL=emulator.url, WHEELPIN_GITHUB_TOKEN="t")
    yield Attested(world, emulator, sigstore, [])
    emulator.stop()
    assert not emulator.errors


def test_required_and_valid_proposes_with_who_built_it(attested: Attested) -> None:
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}", signer_ref = "refs/heads/main" }}')
    attested.attest(lambda sha256: True)
    attested.world.commit_upstream("work", NEW_VERSION)
    text = wheelpin(
        "reconcile", "--once", "--dry-run", "--repo", str(attested.world.downstream), env=attested.world.env
    )
    assert f"each wheel's GitHub attestation (signed by {IDENTITY}, required)" in text.stdout, text.stdout
    assert attested.asked == []  # a dry run reads no attestation: it has no wheel yet
    result = attested.world.reconcile()
    assert result.code == 0, result.stderr
    assert [a["kind"] for a in component(result)["actions"]] == ["build", "publish", "propose"]
    body = attested.body()
    assert f"- ✅ built by {WORKFLOW}@refs/heads/main, run {RUN}\n" in body
    # the new wheel once (before publishing, remembered for the proposal), then the image's digest
    wheel, image = attested.asked
    assert f"sha256:{image}" in attested.world.branch_file()
    assert f"- ✅ the image sha256:{image[:12]}… is attested too: built by {WORKFLOW}@refs/heads/main" in body


def test_an_image_attestation_that_does_not_verify_is_said(attested: Attested) -> None:
    """Where the workflow attests the image too, a bad one is said; the wheels decide."""
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(
        lambda sha256: True,
        workflow_of=lambda sha256: WORKFLOW if not attested.asked[1:] else "ROCm/ATOM/.github/workflows/nightly.yaml",
    )
    attested.world.commit_upstream("work", NEW_VERSION)
    result = attested.world.reconcile()
    assert result.code == 0, result.stderr
    notes = attested.body().split("### ⚠️ Notes\n", 1)[1].split("###", 1)[0]
    assert (
        "has an attestation that does not verify: attestation 1: signed by https://github.com/ROCm/ATOM/"
        ".github/workflows/nightly.yaml@refs/heads/main" in notes
    )


def test_required_and_none_refuses_in_one_sentence_and_publishes_nothing(attested: Attested) -> None:
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: False)
    attested.world.commit_upstream("work", NEW_VERSION)
    tags = attested.world.layout_tags()
    result = attested.world.reconcile()
    assert result.code == 1 and attested.world.branch() is None
    assert attested.world.layout_tags() == tags
    said = " ".join(component(result)["messages"])
    assert re.search(
        rf"no valid attestation by https://github.com/{re.escape(WORKFLOW)}@\*: "
        r"demo_cache-0\.1\.1\+g\S+-py3-none-any\.whl: GitHub lists no attestation of sha256:[0-9a-f]{12}… "
        r"in ROCm/ATOM",
        said,
    ), said


def test_another_workflow_s_attestation_is_refused(attested: Attested) -> None:
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: True, workflow="ROCm/ATOM/.github/workflows/nightly.yaml")
    attested.world.commit_upstream("work", NEW_VERSION)
    result = attested.world.reconcile()
    assert result.code == 1 and attested.world.branch() is None
    said = " ".join(component(result)["messages"])
    assert (
        "attestation 1: signed by https://github.com/ROCm/ATOM/.github/workflows/nightly.yaml@refs/heads/main, "
        f"not https://github.com/{WORKFLOW}@*"
    ) in said, said


def test_an_attestation_of_other_bytes_is_refused(attested: Attested) -> None:
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: True, subjects={"wheel.whl": "0" * 64})
    attested.world.commit_upstream("work", NEW_VERSION)
    result = attested.world.reconcile()
    assert result.code == 1 and attested.world.branch() is None
    assert "its signed statement: its subject names" in " ".join(component(result)["messages"])


def test_a_trust_downgrade_is_refused_unless_allowed_and_then_said_loudly(attested: Attested) -> None:
    pinned = attested.pinned_sha256()
    attested.trust(f'{{ attestations = "optional", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: sha256 == pinned)  # the pinned wheel was attested, the new one is not
    attested.world.commit_upstream("work", NEW_VERSION)
    refused = attested.world.reconcile()
    assert refused.code == 1 and attested.world.branch() is None
    said = " ".join(component(refused)["messages"])
    assert (
        f"trust downgrade: the pinned image's wheels were attested (built by {WORKFLOW}@refs/heads/main, "
        f"run {RUN}), the new ones have no valid attestation"
    ) in said, said
    assert "trust.allow_downgrade = true accepts that" in said

    attested.world.set_config('attestations = "optional"', 'attestations = "optional", allow_downgrade = true')
    allowed = attested.world.reconcile()
    assert allowed.code == 0, allowed.stderr
    body = attested.body()
    notes = body.split("### ⚠️ Notes\n", 1)[1].split("###", 1)[0]
    assert "**TRUST DOWNGRADE, allowed by trust.allow_downgrade: the pinned image's wheels were attested" in notes
    assert any("TRUST DOWNGRADE" in note for note in component(allowed)["notes"])


def test_on_github_the_pull_request_says_which_run_built_it(tmp_path: Path, sigstore: TestSigstore) -> None:
    """The GitHub platform: the wheel built by a dispatched run, attested by the signer
    workflow (the emulator plays attest-build-provenance), read with the platform's own
    client; every answer held to GitHub's OpenAPI description."""
    world = make_world(tmp_path)
    world.set_config("build = { command = [", ACTIONS_BUILD)
    world.set_config(
        "pins = [",
        f'trust = {{ attestations = "required", signer_workflow = "{WORKFLOW}", '
        'signer_ref = "refs/heads/main" }\npins = [',
    )
    roots = Path(world.env["WHEELPIN_CACHE_DIR"]) / TRUSTED_ROOTS
    roots.parent.mkdir(parents=True, exist_ok=True)
    roots.write_text(sigstore.trusted_root_text())
    with on_github(world, tmp_path, actions=True) as gh:
        gh.emulator.create_repo("ROCm", "ATOM", world.upstream)
        gh.emulator.actions = workflow_build(world, tmp_path)
        gh.emulator.attester = lambda owner, repo, sha256: [sigstore.bundle({"wheel.whl": sha256}, workflow=WORKFLOW)]
        world.commit_upstream("one", NEW_VERSION)
        assert [a.kind for a in gh.reconciler.run().components[0].actions] == ["build", "wait"]
        second = gh.reconciler.run().components[0]
        assert [a.kind for a in second.actions] == ["fetch", "publish", "propose"], second.to_json()
        (pull,) = gh.repo.pulls.values()
        assert f"- ✅ built by {WORKFLOW}@refs/heads/main, run {RUN}\n" in pull.body
        listed = [r for r in gh.emulator.recorded if r.template.endswith("/attestations/{subject_digest}")]
        assert listed and validate_recorded(gh.emulator.recorded) > len(listed)


def test_an_attestations_api_that_does_not_answer_is_transient_never_a_verdict(attested: Attested) -> None:
    """GitHub failing (502 after the client's retries) is tried again by the next pass: nothing
    is published meanwhile, and the commit is not recorded as refused."""
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: True)
    attested.emulator.faults.append(("GET", r"/attestations/", 502, 5))  # the client's five attempts
    attested.world.commit_upstream("work", NEW_VERSION)
    tags = attested.world.layout_tags()
    # no dry run before it: a dry run foresees no outside failure (tests/fixtures/dryreal.py)
    failed = wheelpin("reconcile", "--once", "--json", "--repo", str(attested.world.downstream), env=attested.world.env)
    assert failed.code == 4 and component(failed)["error_kind"] == "transient", failed.stdout
    assert attested.world.layout_tags() == tags and attested.world.branch() is None
    again = attested.world.reconcile()
    assert again.code == 0, again.stderr
    assert f"- ✅ built by {WORKFLOW}@" in attested.body()


def publish_by_hand(attested: Attested, *more: str, version: str = "0.1.1") -> tuple[Result, str]:
    """`wheelpin image publish --component` of a wheel a CI runner built from a new upstream
    commit (of `version`), to the component's layout folder under the tag its template
    gives; and the image's reference."""
    world = attested.world
    head = world.commit_upstream("work", {"VERSION": f"{version}\n"})
    (wheel,) = runner_build(world, world.root, head)
    to = f"oci:{world.root / 'images'}:demo-cache-v{version}-g{head[:8]}"
    args = (str(wheel), "--to", to, "--component", "demo-cache", "--repo", str(world.downstream), "--revision", head)
    return wheelpin("image", "publish", *args, *more, env=world.env), to


def written(world: World) -> tuple[bytes, list[str]]:
    """The layout's index and blobs: a refused publish leaves both as they were."""
    images = world.root / "images"
    blobs = sorted(str(path.relative_to(images)) for path in (images / "blobs").rglob("*") if path.is_file())
    return (images / "index.json").read_bytes(), blobs


def test_image_publish_by_hand_refuses_an_unattested_wheel_as_a_pass_does(attested: Attested) -> None:
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: False)
    before = written(attested.world)
    refused, _ = publish_by_hand(attested)
    assert refused.code == 1 and refused.stdout == ""
    (said,) = [line for line in refused.stderr.splitlines() if line.startswith("wheelpin:")]
    assert re.fullmatch(
        rf"wheelpin: nothing published: no valid attestation by https://github.com/{re.escape(WORKFLOW)}@\*: "
        r"demo_cache-0\.1\.1\+g\S+-py3-none-any\.whl: GitHub lists no attestation of sha256:[0-9a-f]{12}… "
        r"in ROCm/ATOM",
        said,
    ), said
    assert written(attested.world) == before  # no tag, no blob, no provenance or SBOM referrer
    assert len(attested.asked) == 1  # the new wheel; the pinned image does not decide a required check


def test_image_publish_by_hand_says_who_built_an_attested_wheel(attested: Attested) -> None:
    attested.trust(f'{{ attestations = "required", signer_workflow = "{WORKFLOW}", signer_ref = "refs/heads/main" }}')
    attested.attest(lambda sha256: True)
    published, to = publish_by_hand(attested)
    assert published.code == 0, published.stderr
    assert f"✅ built by {WORKFLOW}@refs/heads/main, run {RUN}" in published.stdout.splitlines()
    assert "⚠️" not in published.stdout
    tag = to.rsplit(":", 1)[1]
    assert tag in attested.world.layout_tags()


def test_image_publish_by_hand_refuses_a_trust_downgrade_unless_allowed(attested: Attested) -> None:
    pinned = attested.pinned_sha256()
    attested.trust(f'{{ attestations = "optional", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: sha256 == pinned)  # the pinned wheel was attested, the new one is not
    before = written(attested.world)
    refused, _ = publish_by_hand(attested)
    assert refused.code == 1, refused.stderr
    assert (
        f"wheelpin: nothing published: trust downgrade: the pinned image's wheels were attested (built by "
        f"{WORKFLOW}@refs/heads/main, run {RUN}), the new ones have no valid attestation"
    ) in refused.stderr
    assert pinned in attested.asked  # the image the checkout pins, read from the layout folder
    assert written(attested.world) == before

    attested.world.set_config('attestations = "optional"', 'attestations = "optional", allow_downgrade = true')
    allowed, _ = publish_by_hand(attested, "--json", version="0.1.2")
    assert allowed.code == 0, allowed.stderr
    document = allowed.json()
    assert document["verification"] == []
    (note,) = document["notes"]
    assert note.startswith("TRUST DOWNGRADE, allowed by trust.allow_downgrade: the pinned image's wheels were attested")


def test_image_publish_by_hand_with_optional_trust_says_an_unattested_wheel(attested: Attested) -> None:
    """Nothing pinned was attested: no downgrade, the wheel goes through and the lack is said."""
    attested.trust(f'{{ attestations = "optional", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: False)
    published, _ = publish_by_hand(attested)
    assert published.code == 0, published.stderr
    (note,) = [line for line in published.stdout.splitlines() if line.startswith("⚠️")]
    assert note.startswith(f"⚠️ not attested: no valid attestation by https://github.com/{WORKFLOW}@*")


def test_image_publish_by_hand_says_when_the_pinned_image_could_not_be_weighed(attested: Attested) -> None:
    """The checkout pins a digest its layout folder does not hold: the downgrade cannot be
    judged, and the publish says so rather than pass it in silence."""
    dockerfile = attested.world.downstream / "docker" / "Dockerfile"
    pinned = re.search(r"@(sha256:[0-9a-f]{64})", dockerfile.read_text())
    assert pinned is not None
    dockerfile.write_text(dockerfile.read_text().replace(pinned.group(1), "sha256:" + "0" * 64))
    attested.trust(f'{{ attestations = "optional", signer_workflow = "{WORKFLOW}" }}')
    attested.attest(lambda sha256: False)
    published, _ = publish_by_hand(attested, "--json")
    assert published.code == 0, published.stderr
    not_attested, unweighed = published.json()["notes"]
    assert not_attested.startswith("not attested: no valid attestation by")
    assert unweighed.startswith("the pinned image's provenance was not weighed (a trust downgrade is not judged): "), (
        unweighed
    )
    assert "docker/Dockerfile:2: " in unweighed and "sha256:" + "0" * 64 in unweighed

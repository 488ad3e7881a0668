"""The planner: tables of facts → typed plans, every decision of the loop, no I/O."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bot.core.decide.backoff import BACKOFF_SECONDS, Failure, Refusal
from bot.core.decide.plan import (
    AdoptImage,
    Asks,
    BuildSeen,
    BuildState,
    ClosePR,
    Comment,
    Facts,
    FetchArtifacts,
    ImageFound,
    ProposalSeen,
    PublishImage,
    RecordFailure,
    Report,
    StartBuild,
    Wait,
    WriteProposal,
    desired_state,
    live_failure,
    plan,
)

NOW = 1_800_000_000.0
HEAD = "3d3aa833" + "0" * 32
IMAGE = ImageFound("demo-v1-g3d3aa833", "sha256:" + "a" * 64, "r/demo:demo-v1-g3d3aa833@sha256:" + "a" * 64)
FOREIGN = ImageFound(IMAGE.tag, IMAGE.digest, IMAGE.ref, verified=False)
FACTS = Facts(component="demo", head=HEAD, base="b" * 40, base_files="f", judged_under="r1")
PROPOSAL = ProposalSeen("wheelpin/demo", "c" * 40, None)
ACTIONS = BuildSeen(asynchronous=True)


def failure(*, at: float = NOW - 60, attempts: int = 1, judged_under: str = "r1", kind: str = "build") -> Failure:
    return Failure("demo", HEAD, kind, "build of 3d3aa833 failed (exit 1)", attempts, at, judged_under)


def types(facts: Facts, asks: Asks = Asks()) -> list[type]:
    return [type(action) for action in plan(facts, NOW, asks)]


def test_an_up_to_date_proposal_plans_nothing() -> None:
    observed = replace(FACTS, image=IMAGE)
    assert plan(replace(observed, proposal=replace(PROPOSAL, state=desired_state(observed))), NOW) == []


@pytest.mark.parametrize(
    ("proposal", "verb"), [(None, "open"), (PROPOSAL, "update"), (replace(PROPOSAL, open=False), "open")]
)
def test_the_proposal_is_updated_only_where_one_is_open(proposal: ProposalSeen | None, verb: str) -> None:
    """A declined pull request's kept branch is written over, and a new one is opened."""
    (write,) = [a for a in plan(replace(FACTS, image=IMAGE, proposal=proposal), NOW) if isinstance(a, WriteProposal)]
    assert write.verb == verb


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # nothing yet: the whole way to a proposal, as far as it can be foreseen
        ({}, [StartBuild, PublishImage, WriteProposal]),
        ({"build": BuildSeen(BuildState.READY)}, [PublishImage, WriteProposal]),
        ({"image": IMAGE}, [WriteProposal]),
        # builds on GitHub Actions: dispatched, waited for, fetched
        ({"build": ACTIONS}, [StartBuild, Wait, FetchArtifacts, PublishImage, WriteProposal]),
        ({"build": replace(ACTIONS, state=BuildState.RUNNING)}, [Wait, FetchArtifacts, PublishImage, WriteProposal]),
        ({"build": replace(ACTIONS, state=BuildState.SUCCEEDED)}, [FetchArtifacts, PublishImage, WriteProposal]),
        ({"build": replace(ACTIONS, state=BuildState.FAILED, detail="run ended: failure")}, [RecordFailure, Report]),
        # a workflow that pushes its image itself: adopted once it is there
        ({"build": replace(ACTIONS, adopts=True)}, [StartBuild, Wait, AdoptImage, WriteProposal]),
        ({"build": replace(ACTIONS, adopts=True, state=BuildState.SUCCEEDED)}, [Report]),
        ({"image": FOREIGN}, [AdoptImage, WriteProposal]),
        # failures back off
        ({"failure": failure()}, [Report]),
        ({"failure": failure(at=NOW - BACKOFF_SECONDS - 1)}, [StartBuild, PublishImage, WriteProposal]),
        ({"failure": failure(at=NOW - BACKOFF_SECONDS - 1, attempts=2)}, [Report]),  # doubled
        ({"failure": failure(kind="verify", at=0)}, [Report]),  # the same commit gives the same wheel
        ({"failure": failure(judged_under="r0")}, [StartBuild, PublishImage, WriteProposal]),  # the config changed
        (
            {"failure": failure(), "build": replace(ACTIONS, state=BuildState.RUNNING, followed=True)},
            [Wait, FetchArtifacts, PublishImage, WriteProposal],
        ),  # a build started since
        ({"failure": failure(), "image": IMAGE}, [WriteProposal]),  # an image exists: the failure is moot
        ({"failure": failure(kind="verify", at=0), "image": FOREIGN}, [Report]),  # someone's image, refused once
        ({"failure": failure(kind="verify", at=0, judged_under="r0"), "image": FOREIGN}, [AdoptImage, WriteProposal]),
        # a quiet period
        ({"quiet_minutes": 30, "committed_at": NOW - 600}, [Wait]),
        ({"quiet_minutes": 30, "committed_at": NOW - 1801}, [StartBuild, PublishImage, WriteProposal]),
        # the base caught up
        ({"base_has_head": True}, []),
        ({"base_has_head": True, "proposal": PROPOSAL}, [ClosePR]),
        ({"base_pins_image": True, "proposal": PROPOSAL}, [ClosePR]),
        # declined, left alone, broken
        ({"skipped": True}, []),
        ({"skipped": True, "proposal": PROPOSAL, "image": IMAGE}, []),  # declined, its branch kept
        ({"proposal": replace(PROPOSAL, foreign=("d" * 40,))}, [Comment, Report]),
        ({"error": "upstream unreachable"}, [Report]),
        ({"head": None}, []),
        ({"image": IMAGE, "proposal": replace(PROPOSAL, state={"commit": "old"})}, [WriteProposal]),
        # a write GitHub refused is not made again until its backoff ends
        ({"image": IMAGE, "refusal": Refusal("k", "refused by a ruleset", 1, NOW - 60)}, [Report]),
        ({"image": IMAGE, "refusal": Refusal("k", "refused by a ruleset", 1, NOW - 3601)}, [WriteProposal]),
    ],
)
def test_plan_table(changes: dict[str, Any], expected: list[type]) -> None:
    assert types(replace(FACTS, **changes)) == expected


@pytest.mark.parametrize(
    ("changes", "asks", "expected"),
    [
        ({"failure": failure()}, Asks(retry=True), [StartBuild, PublishImage, WriteProposal]),
        ({"image": IMAGE, "refusal": Refusal("k", "no", 1, NOW)}, Asks(retry=True), [WriteProposal]),
        ({"proposal": replace(PROPOSAL, foreign=("d" * 40,)), "image": IMAGE}, Asks(rebase=True), [WriteProposal]),
    ],
)
def test_what_a_human_asks(changes: dict[str, Any], asks: Asks, expected: list[type]) -> None:
    assert types(replace(FACTS, **changes), asks) == expected


def test_a_moved_base_file_rewrites_the_proposal() -> None:
    observed = replace(FACTS, image=IMAGE)
    stale = replace(observed, base_files="g", proposal=replace(PROPOSAL, state=desired_state(observed)))
    (action,) = plan(stale, NOW)
    assert isinstance(action, WriteProposal) and action.detail.startswith("update")


def test_a_quiet_period_says_until_when() -> None:
    (action,) = plan(replace(FACTS, quiet_minutes=30, committed_at=NOW - 600), NOW)
    assert isinstance(action, Wait) and action.until == NOW + 1200 and "10 of 30 minutes" in action.why


def test_a_branch_left_alone_is_said_on_it_once_per_tip() -> None:
    comment, report = plan(replace(FACTS, proposal=replace(PROPOSAL, foreign=("d" * 40,))), NOW)
    assert isinstance(comment, Comment) and comment.key == f"foreign-{'c' * 40}" and "dddddddd" in comment.text
    assert isinstance(report, Report) and report.left_alone


def test_a_refusal_says_when_it_is_tried_again() -> None:
    (report,) = plan(replace(FACTS, image=IMAGE, refusal=Refusal("k", "refused", 1, NOW)), NOW)
    assert isinstance(report, Report) and not report.left_alone and "not tried again before" in report.why


def test_actions_print_and_serialise_by_kind() -> None:
    build = plan(FACTS, NOW)[0]
    assert str(build) == "demo: build 3d3aa833" and build.to_json()["kind"] == "build"
    assert plan(replace(FACTS, build=ACTIONS), NOW)[1].to_json()["kind"] == "wait"


def test_live_failure_is_the_one_the_plan_reports() -> None:
    held = replace(FACTS, failure=failure())
    assert live_failure(held, NOW) == failure() and live_failure(held, NOW, Asks(retry=True)) is None
    (report,) = plan(held, NOW)
    assert isinstance(report, Report) and report.why == failure().message


def test_a_recorded_failure_says_when_it_is_tried_again() -> None:
    from bot.core.decide.backoff import retry_said

    built = Failure("demo", "a" * 40, "build", "build failed", 2, 1_800_000_000.0)
    assert retry_said(built.retry_at, built.at) == (
        "tried again by the first pass after 2027-01-15 08:20 UTC (in 20 min); "
        "`wheelpin reconcile --retry-failed` tries it now"
    )
    refused = replace(built, kind="verify")
    assert retry_said(refused.retry_at, refused.at) == (
        "not tried again for this commit (the same commit gives the same wheel): a new upstream commit or a "
        "changed config is; `wheelpin reconcile --retry-failed` tries it now"
    )


def test_an_outside_failure_observed_is_reported_as_one() -> None:
    (report,) = plan(
        replace(FACTS, error="reading …: 127.0.0.1:9 refused the connection, 1 try", error_kind="transient"), NOW
    )
    assert isinstance(report, Report) and report.error_kind == "transient"

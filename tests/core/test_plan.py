"""The planner: observations in, actions out — a table, no I/O."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.core.plan import ImageFound, Observed, ProposalSeen, desired_state, plan

HEAD = "3d3aa833" + "0" * 32
IMAGE = ImageFound("demo-v1-g3d3aa833", "sha256:" + "a" * 64, "r/demo:demo-v1-g3d3aa833@sha256:" + "a" * 64)
BASE = Observed(component="demo", head=HEAD, base="b" * 40, base_files="f")


def kinds(observed: Observed) -> list[str]:
    return [action.kind for action in plan(observed)]


def test_up_to_date_proposal_plans_nothing() -> None:
    observed = replace(BASE, image=IMAGE)
    current = replace(observed, proposal=ProposalSeen("wheelpin/demo", "c" * 40, desired_state(observed)))
    assert kinds(current) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, ["build"]),
        ({"built": True}, ["publish"]),
        ({"image": IMAGE}, ["propose"]),
        ({"failure": "build of 3d3aa833 failed"}, ["report"]),
        ({"failure": "x", "image": IMAGE}, ["propose"]),  # an image exists: the failure is moot
        ({"waiting": "in its quiet period"}, ["wait"]),
        ({"base_has_head": True}, []),
        ({"base_has_head": True, "proposal": ProposalSeen("wheelpin/demo", "c" * 40, None)}, ["close"]),
        ({"error": "upstream unreachable"}, ["report"]),
        ({"proposal": ProposalSeen("wheelpin/demo", "c" * 40, None, ("d" * 40,))}, ["report"]),
        ({"head": None}, []),
        ({"image": IMAGE, "proposal": ProposalSeen("wheelpin/demo", "c" * 40, {"commit": "old"})}, ["propose"]),
    ],
)
def test_plan_table(changes: dict[str, object], expected: list[str]) -> None:
    assert kinds(replace(BASE, **changes)) == expected  # type: ignore[arg-type]


def test_a_moved_base_file_rewrites_the_proposal() -> None:
    observed = replace(BASE, image=IMAGE)
    stale = replace(observed, base_files="g",
                    proposal=ProposalSeen("wheelpin/demo", "c" * 40, desired_state(observed)))
    (action,) = plan(stale)
    assert action.kind == "propose" and action.detail.startswith("update")


def test_build_says_what_follows() -> None:
    (action,) = plan(BASE)
    assert action.then == ("publish", "propose") and "3d3aa833" in str(action)

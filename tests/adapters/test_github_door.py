"""GitHub's webhook door (adapters/github/door.py) on GitHub's own example deliveries
(@octokit/webhooks-examples): the service hands it headers and a body, and gets back the
jobs, a reply, or a refusal with its status — no server, no queue."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from bot.adapters.github.door import GitHubDoor
from bot.app.jobs import Delivery, Door, Job, JobKind, Refused, Routing
from tests.fixtures.webhooks import example, sign

SECRET = b"door-secret"


def headers(
    event: str, body: bytes, *, secret: bytes = SECRET, content_type: str = "application/json"
) -> dict[str, str]:
    """As webapp.py hands them: lower-case names, GitHub's delivery headers
    (https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers)."""
    return {
        "x-github-event": event,
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": sign(secret, body),
        "content-type": content_type,
    }


def routing_of(repository: str | None) -> Routing:
    return Routing(bases=frozenset({"main"}))


def test_the_door_is_the_services_door() -> None:
    door: Door = GitHubDoor(SECRET)  # mypy holds it to the Protocol
    assert door.max_body == 25 * 1024 * 1024


def test_a_push_to_the_base_branch_is_a_pass_of_its_repository() -> None:
    payload = example("push")
    payload["ref"] = "refs/heads/main"
    body = json.dumps(payload).encode()
    delivery = GitHubDoor(SECRET).read(headers("push", body), body, routing_of)
    name = payload["repository"]["full_name"]
    assert delivery == Delivery(
        "push", (Job(JobKind.REPOSITORY, name),), name, None, id="72d3162e-cc78-11e3-81ab-4c9367dc0958"
    )


def test_a_form_encoded_delivery_is_read_from_its_payload_field() -> None:
    payload = example("push")
    payload["ref"] = "refs/heads/main"
    body = ("payload=" + quote(json.dumps(payload))).encode()
    delivery = GitHubDoor(SECRET).read(
        headers("push", body, content_type="application/x-www-form-urlencoded"), body, routing_of
    )
    assert [job.kind for job in delivery.jobs] == [JobKind.REPOSITORY]


def test_a_ping_is_answered_and_asks_for_nothing() -> None:
    body = json.dumps(example("ping")).encode()
    delivery = GitHubDoor(SECRET).read(headers("ping", body), body, routing_of)
    assert delivery.jobs == () and delivery.reply is not None and delivery.reply["message"] == "pong"


@pytest.mark.parametrize(
    ("change", "status", "outcome"),
    [
        ({"secret": b"another"}, 401, "bad-signature"),
        ({"event": ""}, 400, None),
        ({"body": b"not json"}, 400, "malformed"),
        (
            {"body": b'{"ref": ["not", "a", "string"], "repository": {"full_name": "o/r"}, "commits": 7}'},
            400,
            "malformed",
        ),
    ],
)
def test_what_the_door_refuses_says_its_status(change: dict[str, object], status: int, outcome: str | None) -> None:
    body = change.get("body", json.dumps(example("push")).encode())
    assert isinstance(body, bytes)
    secret = change.get("secret", SECRET)
    assert isinstance(secret, bytes)
    sent = headers(str(change.get("event", "push")), body, secret=secret)
    with pytest.raises(Refused) as refused:
        GitHubDoor(SECRET).read(sent, body, routing_of)
    assert (refused.value.status, refused.value.outcome) == (status, outcome)
    assert refused.value.message.endswith(("wrong", "header", "one)", "sends it"))

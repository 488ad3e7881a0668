"""The service's webhook door on GitHub (app/jobs.py's `Door`): a request's headers and body
in, the jobs it asks for out. Every rule is sansio.py's; this is their order, as GitHub
documents a delivery (https://docs.github.com/en/webhooks/webhook-events-and-payloads,
"Delivery headers"): the `X-Hub-Signature-256` over the body as sent before anything is
parsed, the `X-GitHub-Event` named, the JSON (or a form's `payload` field) read, a `ping`
answered, and the event routed by the repository's Routing."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ...app.jobs import Delivery, Refused, Routing
from .. import logs
from .sansio import MAX_BODY, payload_text, repository_of, signature_ok, work_for

log = logs.get_logger("wheelpin.http")


class GitHubDoor:
    """GitHub's deliveries to one webhook, signed with `secret`."""

    max_body = MAX_BODY

    def __init__(self, secret: bytes) -> None:
        self.secret = secret

    def context(self, headers: Mapping[str, str]) -> dict[str, str | None]:
        return {
            "delivery": headers.get("x-github-delivery") or None,
            "github_event": headers.get("x-github-event") or None,
        }

    def event_of(self, headers: Mapping[str, str]) -> str:
        return headers.get("x-github-event") or ""

    def read(self, headers: Mapping[str, str], body: bytes, routing: Callable[[str | None], Routing]) -> Delivery:
        event = self.event_of(headers)
        if not signature_ok(self.secret, body, headers.get("x-hub-signature-256")):
            log.warning("webhook.bad_signature")
            raise Refused(401, "X-Hub-Signature-256 is missing or wrong", event="unverified", outcome="bad-signature")
        if not event:
            raise Refused(400, "no X-GitHub-Event header", event="", outcome=None)
        text = payload_text(body, headers.get("content-type"))
        try:
            payload = None if text is None else json.loads(text)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, an integer past 4,300 digits, nested too deep
            payload = None
        if not isinstance(payload, dict):
            raise Refused(
                400,
                "the body is not a JSON object (nor a form whose payload field is one)",
                event=event,
                outcome="malformed",
            )
        if event == "ping":
            return Delivery(event, reply={"message": "pong", "zen": payload.get("zen")}, outcome="pong")
        repository = repository_of(payload)
        where = routing(repository)
        try:
            jobs = work_for(event, payload, prefix=where.prefix, base_branches=where.bases, workflows=where.workflows)
        except (AttributeError, TypeError, ValueError, KeyError):  # signed, but not shaped as GitHub sends it
            log.warning("webhook.unexpected_shape", exc_info=True)
            raise Refused(
                400, f"the {event} payload is not shaped as GitHub sends it", event=event, outcome="malformed"
            ) from None
        action = payload.get("action")
        return Delivery(
            event,
            tuple(jobs),
            repository,
            action if isinstance(action, str) else None,
            id=headers.get("x-github-delivery") or "",
        )

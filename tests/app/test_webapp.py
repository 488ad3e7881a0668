"""The HTTP side of `wheelpin serve`, on a loopback port: signed, tampered, unsigned,
oversized and malformed deliveries, every example payload of @octokit/webhooks-examples,
and the health, readiness and metrics endpoints."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from bot.adapters.github.forge import GitHubAccess, GitHubForge
from bot.adapters.github.sansio import MAX_BODY
from bot.app.service import Service
from bot.app.settings import Settings
from bot.app.webapp import HTTPServer
from tests.fixtures.webhooks import deliver, example, examples, sign

SECRET = b"it's a secret to everybody"


@dataclass
class Served:
    service: Service
    server: HTTPServer
    session: requests.Session

    @property
    def url(self) -> str:
        return self.server.url


def serving(tmp_path: Path, secret: bytes | None = SECRET) -> Iterator[Served]:
    # the worker is not started: what the requests queue stays queued, to be counted
    service = Service(Settings(cache_dir=tmp_path / "cache"), forge=GitHubForge(None, secret=secret))
    server = HTTPServer(service, host="127.0.0.1", port=0)
    server.start()
    session = requests.Session()
    try:
        yield Served(service, server, session)
    finally:
        session.close()
        server.stop()


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serving(tmp_path)


def push() -> dict:  # type: ignore[type-arg]
    payload = example("push")
    payload["ref"] = "refs/heads/main"
    return payload


def test_a_signed_delivery_is_queued_and_answered_at_once(served: Served) -> None:
    answer = deliver(served.session, served.url, SECRET, "push", push())
    assert answer.status_code == 202 and answer.json() == {"message": "queued", "jobs": ["repository"]}
    assert served.service.queue.puts == 1 and served.service.queue.stats().waiting == 1
    again = deliver(served.session, served.url, SECRET, "push", push(), delivery="same-id")
    redelivered = deliver(served.session, served.url, SECRET, "push", push(), delivery="same-id")
    assert again.status_code == redelivered.status_code == 202  # a redelivery is harmless, not refused
    assert served.service.queue.stats().waiting == 1  # coalesced


@pytest.mark.parametrize("how", ["unsigned", "wrong secret", "tampered", "not sha256", "empty"])
def test_bad_signatures_are_refused_before_anything_is_read(served: Served, how: str) -> None:
    body = json.dumps(push()).encode()
    headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "d-1"}
    if how == "wrong secret":
        headers["X-Hub-Signature-256"] = sign(b"guess", body)
    elif how == "tampered":
        headers["X-Hub-Signature-256"] = sign(SECRET, body)
        body = body.replace(b"refs/heads/main", b"refs/heads/mail")
    elif how == "not sha256":
        headers["X-Hub-Signature"] = "sha1=" + "0" * 40
        headers["X-Hub-Signature-256"] = "sha1=" + "0" * 40
    elif how == "empty":
        headers["X-Hub-Signature-256"] = ""
    answer = served.session.post(served.url + "/webhook", data=body, headers=headers, timeout=10)
    assert answer.status_code == 401 and "X-Hub-Signature-256" in answer.json()["message"]
    assert served.service.queue.puts == 0  # nothing done


def test_a_signature_over_garbage_is_still_only_a_400(served: Served) -> None:
    hostile = (
        b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # nested past the recursion limit
        b'{"n": ' + b"9" * 5_000 + b"}",
    )  # an integer past Python's 4,300-digit limit
    for body in (b"{not json", b"[1, 2]", b"\xff\xfe", b"", *hostile):
        answer = deliver(served.session, served.url, SECRET, "push", None, body=body)
        assert answer.status_code == 400, body
    no_event = served.session.post(
        served.url + "/webhook", data=b"{}", timeout=10, headers={"X-Hub-Signature-256": sign(SECRET, b"{}")}
    )
    assert no_event.status_code == 400 and served.service.queue.puts == 0


def test_a_signed_payload_of_the_wrong_shape_is_a_400_not_a_crash(served: Served) -> None:
    for event, payload in (
        ("installation", {"installation": "not an object"}),
        ("push", {"repository": {"full_name": "a/b"}, "commits": "many"}),
        (
            "issue_comment",
            {
                "action": "created",
                "repository": {"full_name": "a/b"},
                "issue": [],
                "comment": {"body": "/wheelpin skip"},
            },
        ),
    ):
        answer = deliver(served.session, served.url, SECRET, event, payload)
        assert answer.status_code in (200, 400), (event, answer.status_code)
    assert served.session.get(served.url + "/healthz").status_code == 200


def test_oversized_deliveries_get_413_with_or_without_a_length(served: Served) -> None:
    big = b'{"a": "' + b"x" * MAX_BODY + b'"}'
    answer = deliver(served.session, served.url, SECRET, "push", None, body=big)
    assert answer.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        for start in range(0, len(big), 1 << 20):
            yield big[start : start + (1 << 20)]

    chunked = served.session.post(
        served.url + "/webhook",
        data=chunks(),
        timeout=30,
        headers={"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(SECRET, big)},
    )
    assert chunked.status_code == 413 and served.service.queue.puts == 0
    # just under the cap is read, checked, and answered
    fits = b'{"a": "' + b"x" * (MAX_BODY - 16) + b'"}'
    assert deliver(served.session, served.url, SECRET, "star", None, body=fits).status_code == 200


def test_every_example_payload_is_answered_2xx(served: Served) -> None:
    statuses: dict[int, int] = {}
    queued = set()
    for event, payload in examples():
        answer = deliver(served.session, served.url, SECRET, event, payload)
        statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
        if answer.status_code == 202:
            queued.add(event)
    assert set(statuses) <= {200, 202}, statuses
    assert sum(statuses.values()) > 300 and statuses[202] > 10
    assert {"installation", "installation_repositories", "workflow_run"} <= queued  # their pushes are to master
    assert "star" not in queued and "release" not in queued


def test_ping_pongs(served: Served) -> None:
    answer = deliver(served.session, served.url, SECRET, "ping", example("ping"))
    assert answer.status_code == 200 and answer.json()["message"] == "pong"


def test_health_ready_and_metrics(served: Served) -> None:
    assert served.session.get(served.url + "/healthz").status_code == 200  # no credentials at all
    ready = served.session.get(served.url + "/readyz")
    assert ready.status_code == 503 and "no GitHub credentials" in ready.json()["reason"]
    deliver(served.session, served.url, SECRET, "push", push())
    deliver(served.session, served.url, b"wrong", "push", push())
    metrics = served.session.get(served.url + "/metrics")
    assert metrics.status_code == 200 and metrics.headers["Content-Type"].startswith("text/plain")
    families = {family.name: family for family in text_string_to_metric_families(metrics.text)}
    # wheelpin's own, and the process and platform collectors' (as prometheus-client's default registry)
    assert families and all(name.startswith(("wheelpin_", "process_", "python_")) for name in families)
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "python_info"} <= set(families)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for family in families.values() for s in family.samples
    }
    assert samples[("wheelpin_queue_depth", ())] == 1
    assert samples[("wheelpin_webhook_deliveries_total", (("event", "push"), ("outcome", "queued")))] == 1
    assert samples[("wheelpin_webhook_deliveries_total", (("event", "unverified"), ("outcome", "bad-signature")))] == 1
    for wanted in (
        "wheelpin_passes",
        "wheelpin_actions",
        "wheelpin_failures",
        "wheelpin_github_requests",
        "wheelpin_github_rate_limit_remaining",
        "wheelpin_registry_uploaded_bytes",
    ):
        assert wanted in families
    from bot import __version__

    assert samples[("wheelpin_build_info", (("version", __version__),))] == 1
    assert families["wheelpin_github_rate_limit_remaining"].documentation.startswith("Requests left in an installation")
    assert served.session.get(served.url + "/nothing").status_code == 404
    assert served.session.get(served.url + "/webhook").status_code == 405


def test_without_a_webhook_secret_deliveries_are_refused(tmp_path: Path) -> None:
    for served in serving(tmp_path, secret=None):
        answer = deliver(served.session, served.url, SECRET, "push", push())
        assert answer.status_code == 503 and served.service.queue.puts == 0
        assert served.session.get(served.url + "/healthz").status_code == 200


def test_ready_only_while_the_queue_moves(tmp_path: Path) -> None:
    from bot.app.jobs import Job

    now = [1000.0]
    service = Service(
        Settings(cache_dir=tmp_path, stuck_after=60),
        forge=GitHubForge(GitHubAccess(None, token="t"), secret=SECRET),
        clock=lambda: now[0],
    )
    assert service.ready() == (False, "GitHub not reached yet")
    service.forge_ok = False
    service.forge_error = "GitHub refused the App's JWT (401)"
    assert "refused" in service.ready()[1]
    service.forge_ok = True
    assert service.ready() == (False, "a worker is not running")
    release = threading.Event()
    service.run_job = lambda job: release.wait(10)  # type: ignore[method-assign]
    service.start()
    assert service.ready() == (True, "ready")
    service.queue.put(Job("component", "rocm/atom", "a"))
    wait = time.monotonic() + 5
    while service.queue.stats().running == 0 and time.monotonic() < wait:
        time.sleep(0.01)
    service.queue.put(Job("component", "rocm/atom", "b"))  # waits behind the running one
    now[0] += 61
    assert service.ready()[0] is False and "has waited 61 s" in service.ready()[1]
    assert service.stop(grace=0.05) is False  # the running job is abandoned, not waited on forever
    release.set()
    assert service.stop(grace=5) is True


def test_a_form_encoded_delivery_is_taken_signed_over_its_raw_body(served: Served) -> None:
    # a repository webhook's default content type: `payload=<the JSON, URL-encoded>`, the
    # signature computed over that body as sent (docs "Creating webhooks", "Delivery headers")
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(push())}).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": "form-1",
        "X-Hub-Signature-256": sign(SECRET, body),
        "Content-Type": "application/x-www-form-urlencoded",
        "User-Agent": "GitHub-Hookshot/test",
    }
    answer = served.session.post(served.url + "/webhook", data=body, headers=headers, timeout=10)
    assert answer.status_code == 202 and answer.json()["jobs"] == ["repository"]
    # signed over the decoded JSON instead of the raw body: refused
    headers["X-Hub-Signature-256"] = sign(SECRET, json.dumps(push()).encode())
    assert served.session.post(served.url + "/webhook", data=body, headers=headers, timeout=10).status_code == 401
    # a form without a payload field, or with a payload that is not a JSON object: 400
    for bad in (b"other=1", urlencode({"payload": "[1]"}).encode(), b"payload=%ff"):
        headers["X-Hub-Signature-256"] = sign(SECRET, bad)
        assert served.session.post(served.url + "/webhook", data=bad, headers=headers, timeout=10).status_code == 400
    assert served.service.queue.puts == 1

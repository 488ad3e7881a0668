"""Webhook parsing on every payload of npm @octokit/webhooks-examples, and signatures."""

from __future__ import annotations

import hashlib
import hmac
import json
import re

import pytest

from bot.adapters.github.sansio import ROUTES, Command, command_of, signature_ok, work_for
from bot.app.jobs import Job, JobKind
from tests.fixtures.webhooks import EXAMPLES, examples

ALL = examples()


def test_every_example_payload_is_read_without_error() -> None:
    kinds = set()
    for event, payload in ALL:
        for key in work_for(event, payload, base_branches=frozenset({"main", "master", "simple-tag"})):
            assert isinstance(key, Job) and ("/" in key.repository or key.kind == JobKind.INSTALLATIONS)
            kinds.add(event)
    assert {"installation", "installation_repositories", "push", "workflow_run"} <= kinds
    assert len(ALL) > 300


@pytest.mark.parametrize("event", ["star", "watch", "fork", "release", "issues", "label", "check_run"])
def test_other_events_ask_for_nothing(event: str) -> None:
    assert all(work_for(name, payload) == [] for name, payload in ALL if name == event)


def test_pull_requests_of_the_bot_name_their_component() -> None:
    payload = next(p for name, p in ALL if name == "pull_request" and p.get("action") == "closed")
    payload = json.loads(json.dumps(payload))
    payload["pull_request"]["head"]["ref"] = "wheelpin/lmcache"
    (key,) = work_for("pull_request", payload)
    assert key.component == "lmcache" and key.repository == payload["repository"]["full_name"]
    payload["pull_request"]["head"]["ref"] = "feature/x"
    assert work_for("pull_request", payload) == []


def test_comment_commands() -> None:
    base = next(p for name, p in ALL if name == "issue_comment" and p.get("action") == "created")
    for body, command in (
        ("/wheelpin recheck", "recheck"),
        ("/wheelpin skip please", "skip"),
        ("/wheelpin frobnicate", None),
        ("looks good", None),
    ):
        payload = json.loads(json.dumps(base))
        payload["issue"]["pull_request"] = {"url": "x"}
        payload["comment"]["body"] = body
        keys = work_for("issue_comment", payload)
        assert [k.command for k in keys] == ([command] if command else [])
        if command:
            assert keys[0].sender == payload["sender"]["login"]


def test_push_to_the_base_or_the_config() -> None:
    payload = json.loads(json.dumps(next(p for name, p in ALL if name == "push")))
    payload["ref"], payload["commits"] = "refs/heads/feature", []
    assert work_for("push", payload) == []
    payload["commits"] = [{"added": [], "modified": [".github/wheelpin.toml"], "removed": []}]
    assert len(work_for("push", payload)) == 1
    payload["ref"], payload["commits"] = "refs/heads/main", []
    assert len(work_for("push", payload)) == 1


def test_a_repository_renamed_or_transferred_reads_the_watch_list_again() -> None:
    """Every later delivery names it by its new `full_name`: the watch list is read again at
    once, from an App's delivery or a repository webhook's (no installation object)."""
    moved = [(p["action"], p) for name, p in ALL if name == "repository" and p["action"] in ("renamed", "transferred")]
    assert {action for action, _ in moved} == {"renamed", "transferred"}
    assert any("installation" not in payload for _, payload in moved)  # a repository's own webhook
    for _, payload in moved:
        assert work_for("repository", payload) == [Job(JobKind.INSTALLATIONS)]


def test_signatures() -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    good = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert signature_ok(b"s3cret", body, good)
    assert not signature_ok(b"s3cret", body + b" ", good)  # tampered
    assert not signature_ok(b"other", body, good)
    assert not signature_ok(b"s3cret", body, None)  # unsigned
    assert not signature_ok(b"s3cret", body, "sha1=" + "0" * 40)


@pytest.mark.parametrize("given, run", [("123", 123), ("²", None), ("١٢", None), ("12a", None), ("9" * 19, None)])
def test_a_run_id_is_ascii_digits(given: str, run: int | None) -> None:
    """`str.isdigit` takes '²' and Arabic-Indic digits, which int() refuses or reads: only
    ASCII digits are a run id; anything else is a job with no run, which the reply asks for."""
    base = next(p for name, p in ALL if name == "issue_comment" and p.get("action") == "created")
    payload = json.loads(json.dumps(base))
    payload["issue"]["pull_request"] = {"url": "x"}
    payload["comment"]["body"] = f"/wheelpin build --from-run {given}"
    (job,) = work_for("issue_comment", payload)
    assert job.command == "build" and job.run == run


def test_every_route_names_an_event_github_sends() -> None:
    """The routing table's events are GitHub's own names (a misspelt one would route nothing):
    those of an example payload, or of @octokit/webhooks-types' map of events to payloads."""
    types = (EXAMPLES.parents[2] / "webhooks-types/schema.d.ts").read_text()
    mapped = re.search(r"export interface EventPayloadMap \{(.*?)\n\}", types, re.S)
    assert mapped is not None
    sent = {name for name, _payload in ALL} | set(re.findall(r"^\s+(\w+): \w+Event;", mapped.group(1), re.M))
    assert "installation_target" in sent and {event for event, _action in ROUTES} <= sent


def test_an_account_the_app_is_installed_on_renamed_reads_the_watch_list_again() -> None:
    """`installation_target` renamed (no example payload: shaped as @octokit/webhooks-types'
    InstallationTargetRenamedEvent): each of the account's repositories has a new full_name."""
    payload = {
        "action": "renamed",
        "changes": {"login": {"from": "ROCmSoftwarePlatform"}},
        "account": {"login": "ROCm", "id": 1, "avatar_url": "https://x", "html_url": "https://x", "node_id": "O"},
        "installation": {"id": 7, "node_id": "I"},
        "target_type": "Organization",
    }
    assert work_for("installation_target", payload) == [Job(JobKind.INSTALLATIONS)]


@pytest.mark.parametrize(
    "body, command",
    [
        ("/wheelpin build --from-run 7 --component lmcache", Command("build", 7, "lmcache")),
        ("  /wheelpin recheck  ", Command("recheck")),
        ("/wheelpin build --component", Command("build")),  # a flag without its value names nothing
        ("/wheelpin build --component " + "x" * 80, Command("build", None, "x" * 64)),
        ("/wheelpin", None),
        ("/wheelpin merge", None),
        ("please /wheelpin rebase", None),
    ],
)
def test_the_command_grammar(body: str, command: Command | None) -> None:
    assert command_of(body) == command

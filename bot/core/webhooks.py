"""GitHub webhooks, the pure part: the signature check, and what a delivery asks
the loop to look at again.

A delivery never reconciles anything itself: it names jobs (`core/jobs.py`: a repository,
and a component when the event is about one), which the service's queue coalesces. The loop
is level-triggered, so a delivery sent again (by hand, from the hook's Recent Deliveries) needs
no de-duplication. GitHub never sends a failed delivery again by itself
(https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries): what a
lost delivery asked for is picked up by the next poll or refresh. Commands in comments
(`/wheelpin rebase|recheck|skip`, `/wheelpin build --from-run RUN_ID`) are parsed here; who may give them is the service's
check (write access), since that needs the API.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any
from urllib.parse import parse_qs

from .dashboard import MARKER as DASHBOARD_MARKER
from .config import CONFIG_FILES
from .jobs import Job, JobKind
from .proposal import read_marker

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
COMMANDS = ("rebase", "recheck", "skip", "build")  # build: `/wheelpin build --from-run RUN_ID`
_RUN_ID = re.compile(r"[0-9]{1,18}")  # a run id fits in 63 bits
# A repository or organization webhook's content type is `application/x-www-form-urlencoded`
# unless its owner picks JSON: the body is then `payload=<the JSON, URL-encoded>`
# (https://docs.github.com/en/webhooks/using-webhooks/creating-webhooks, "Content type";
# https://docs.github.com/en/webhooks/webhook-events-and-payloads, "Delivery headers").
# A GitHub App's deliveries are always JSON.
FORM = "application/x-www-form-urlencoded"


def signature_ok(secret: bytes, body: bytes, header: str | None) -> bool:
    """`X-Hub-Signature-256: sha256=<hex>`, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def payload_text(body: bytes, content_type: str | None) -> bytes | str | None:
    """The JSON text a delivery carries: the body itself, or for a form-encoded delivery its
    `payload` field decoded (None when there is no such field, or it is not UTF-8). The
    signature is checked over the raw body before this, as GitHub computes it over the body
    as sent, whatever its content type."""
    if (content_type or "").split(";", 1)[0].strip().lower() != FORM:
        return body
    try:
        # a form has one field; a few more are tolerated, not thousands (parse_qs's cap)
        fields = parse_qs(body.decode("ascii"), keep_blank_values=True, errors="strict", max_num_fields=8)
    except (UnicodeDecodeError, ValueError):  # not ASCII, a %-escape that is not UTF-8, too many fields
        return None
    values = fields.get("payload") or []
    return values[0] if len(values) == 1 else None


def _repository(payload: dict[str, Any]) -> str | None:
    repo = payload.get("repository")
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) else None


def _component_of(branch: Any, prefix: str) -> str | None:
    if isinstance(branch, str) and branch.startswith(prefix) and len(branch) > len(prefix):
        return branch[len(prefix):]
    return None


def work_for(event: str, payload: dict[str, Any], *, prefix: str = "wheelpin/",
             base_branches: frozenset[str] = frozenset({"main"}), workflows: frozenset[str] = frozenset()) -> list[Job]:
    """The work one delivery asks for; [] for events the bot ignores (answered 2xx all the same)."""
    repository = _repository(payload)
    action = payload.get("action")
    if event in ("installation", "installation_repositories"):
        # https://docs.github.com/en/webhooks/webhook-events-and-payloads#installation:
        # every installation is read again, whichever account the delivery names
        if not isinstance(payload.get("installation"), dict):
            raise TypeError(f"an {event} payload without an installation object")
        return [Job(JobKind.INSTALLATIONS, granted=event == "installation" and action == "new_permissions_accepted")]
    if repository is None:
        return []
    if event == "push":
        ref = payload.get("ref")
        touched = {path for commit in payload.get("commits") or [] if isinstance(commit, dict)
                   for field in ("added", "modified", "removed") for path in commit.get(field) or []}
        on_base = isinstance(ref, str) and ref.removeprefix("refs/heads/") in base_branches
        if on_base or touched & set(CONFIG_FILES):
            return [Job(JobKind.REPOSITORY, repository)]
        return []
    if event == "pull_request" and action in ("closed", "edited", "reopened", "synchronize"):
        head = ((payload.get("pull_request") or {}).get("head") or {}).get("ref")
        component = _component_of(head, prefix)
        return [Job(JobKind.COMPONENT, repository, component)] if component else []
    if event == "repository" and (action == "renamed" or (
            action == "edited" and "default_branch" in (payload.get("changes") or {}))):
        # a default branch changed arrives as `edited` with `changes.default_branch`; the config
        # is read from it (https://docs.github.com/en/webhooks/webhook-events-and-payloads#repository)
        return [Job(JobKind.CONFIG, repository)]
    if event == "workflow_run" and action == "completed":
        run = payload.get("workflow_run") or {}
        path = str(run.get("path") or "")
        if not workflows or path.rsplit("/", 1)[-1] in workflows or str(run.get("name")) in workflows:
            return [Job(JobKind.REPOSITORY, repository)]
        return []
    if event == "issue_comment" and action == "created":
        issue = payload.get("issue") or {}
        body = str((payload.get("comment") or {}).get("body") or "").strip()
        words = body.split()
        # on the dashboard issue (its body carries the marker), the one command that needs no
        # pull request: a build taken from a run, for a head whose own build gave none
        on_dashboard = not issue.get("pull_request") and DASHBOARD_MARKER in str(issue.get("body") or "")
        if (not (issue.get("pull_request") or on_dashboard) or len(words) < 2 or words[0] != "/wheelpin"
                or words[1] not in COMMANDS or (on_dashboard and words[1] != "build")):
            return []
        sender = (payload.get("sender") or {}).get("login")
        number = issue.get("number")
        comment = (payload.get("comment") or {}).get("id")
        seen = (read_marker(str(issue.get("body") or "")) or {}).get("commit")
        # ASCII digits only: str.isdigit accepts '²', which int() refuses; anything else is
        # no run, which the reply asks for in a sentence
        run = int(words[3]) if words[1] == "build" and words[2:3] == ["--from-run"] and words[3:4] and \
            _RUN_ID.fullmatch(words[3]) else None
        named = words[words.index("--component") + 1] if "--component" in words[:-1] else None
        return [Job(JobKind.COMMAND, repository, command=words[1], sender=str(sender) if sender else None, run=run,
                    number=number if isinstance(number, int) else None, on_dashboard=on_dashboard,
                    component=named[:64] if named else None,
                    comment=comment if isinstance(comment, int) else None,
                    seen=seen if isinstance(seen, str) else None)]
    return []

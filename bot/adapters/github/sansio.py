"""GitHub's rules, sans I/O: what a delivery is and asks for, and what an answer means.

Every GitHub conversation of wheelpin's has two halves. This module is the half that only
reads what GitHub sent — bytes, a status, headers — and decides; the other half (webapp.py
takes deliveries; client.py and transport.py speak to the API through requests)
only moves bytes. Nothing here makes a request or imports a library that does, so every
rule is tested on GitHub's own examples without a server (tests/test_layout.py keeps it so).

- Deliveries: the `X-Hub-Signature-256` check, the JSON a form-encoded delivery carries,
  and the jobs (`app/jobs.py`) an event asks for, by a table of (event, action) → route.
  A delivery never reconciles anything itself: the service's queue coalesces its jobs. The
  loop is level-triggered, so a delivery sent again (by hand, from the hook's Recent
  Deliveries) needs no de-duplication; GitHub never sends a failed delivery again by itself
  (https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries):
  what a lost delivery asked for is picked up by the next poll or refresh.
- Commands in comments: `/wheelpin rebase|recheck|skip`, `/wheelpin build --from-run RUN_ID
  [--component NAME]`. Who may give one is the service's check (write access: the API).
- Answers: GitHub's message, the wait a rate limit asks (primary, secondary, Retry-After),
  the next page of a listing (`Link: rel="next"`), and the wheelpin error (core/errors.py) a
  refusal means — to wait (TransientError, with GitHub's own wait), to stop and say what to
  grant (PermissionRefused), or what to fix (ConfigError, RefusedError, CredentialsError).
  The messages matched are GitHub's own, as its REST documentation and its users' trackers
  record them (each cited where it is matched).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qs

from ...app.jobs import Job, JobKind, Routing
from ...core.config.model import BRANCH_PREFIX, CONFIG_FILES
from ...core.errors import (
    ConfigError,
    CredentialsError,
    PermissionRefused,
    RefusedError,
    RuleRefused,
    TransientError,
    WheelpinError,
)
from ...core.proposal.marker import read_marker
from .dashboard import MARKER as DASHBOARD_MARKER

# -- deliveries ------------------------------------------------------------------------------

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
# A repository or organization webhook's content type is `application/x-www-form-urlencoded`
# unless its owner picks JSON: the body is then `payload=<the JSON, URL-encoded>`
# (https://docs.github.com/en/webhooks/using-webhooks/creating-webhooks, "Content type";
# https://docs.github.com/en/webhooks/webhook-events-and-payloads, "Delivery headers").
# A GitHub App's deliveries are always JSON.
FORM = "application/x-www-form-urlencoded"


def signature_ok(secret: bytes, body: bytes, header: str | None) -> bool:
    """`X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the body as sent, compared in
    constant time (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries)."""
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


# -- the comment-command grammar -------------------------------------------------------------

COMMANDS = ("rebase", "recheck", "skip", "build")  # build: `/wheelpin build --from-run RUN_ID`
_RUN_ID = re.compile(r"[0-9]{1,18}")  # a run id fits in 63 bits


@dataclass(frozen=True)
class Command:
    """A `/wheelpin …` comment, read: the command, and build's run and component."""

    name: str
    run: int | None = None  # `--from-run RUN_ID`; None when missing or not a run id
    component: str | None = None  # `--component NAME`, at most 64 characters of it


def command_of(body: str) -> Command | None:
    """The command a comment gives, None when it gives none (it must start `/wheelpin CMD`)."""
    words = body.strip().split()
    if len(words) < 2 or words[0] != "/wheelpin" or words[1] not in COMMANDS:
        return None
    # ASCII digits only: str.isdigit accepts '²', which int() refuses; anything else is
    # no run, which the reply asks for in a sentence
    run = (
        int(words[3])
        if words[1] == "build" and words[2:3] == ["--from-run"] and words[3:4] and _RUN_ID.fullmatch(words[3])
        else None
    )
    named = words[words.index("--component") + 1] if "--component" in words[:-1] else None
    return Command(words[1], run, named[:64] if named else None)


# -- routing: (event, action) → the jobs a delivery asks for ---------------------------------

ANY = "*"  # a route's action: whatever the delivery's (push has none)


Route = Callable[[dict[str, Any], Routing], list[Job]]


def repository_of(payload: dict[str, Any]) -> str | None:
    """The `owner/name` a delivery is about, None when it names none."""
    repo = payload.get("repository")
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) else None


def _component_of(branch: Any, prefix: str) -> str | None:
    if isinstance(branch, str) and branch.startswith(prefix) and len(branch) > len(prefix):
        return branch[len(prefix) :]
    return None


def _installations(event: str) -> Route:
    def route(payload: dict[str, Any], routing: Routing) -> list[Job]:
        # https://docs.github.com/en/webhooks/webhook-events-and-payloads#installation:
        # every installation is read again, whichever account the delivery names
        if not isinstance(payload.get("installation"), dict):
            raise TypeError(f"an {event} payload without an installation object")
        return [
            Job(
                JobKind.INSTALLATIONS,
                granted=event == "installation" and payload.get("action") == "new_permissions_accepted",
            )
        ]

    return route


def _moved(payload: dict[str, Any], routing: Routing) -> list[Job]:
    # A repository renamed or transferred: every later delivery names it by its new
    # `full_name` (https://docs.github.com/en/webhooks/webhook-events-and-payloads#repository,
    # `renamed`, `transferred`), so the watch list is read again now, not at the next
    # refresh. A repository's own webhook sends these too, without an installation object.
    return [Job(JobKind.INSTALLATIONS)]


def _push(payload: dict[str, Any], routing: Routing, repository: str) -> list[Job]:
    ref = payload.get("ref")
    touched = {
        path
        for commit in payload.get("commits") or []
        if isinstance(commit, dict)
        for field in ("added", "modified", "removed")
        for path in commit.get(field) or []
    }
    on_base = isinstance(ref, str) and ref.removeprefix("refs/heads/") in routing.bases
    if on_base or touched & set(CONFIG_FILES):
        return [Job(JobKind.REPOSITORY, repository)]
    return []


def _bot_pull_request(payload: dict[str, Any], routing: Routing, repository: str) -> list[Job]:
    head = ((payload.get("pull_request") or {}).get("head") or {}).get("ref")
    component = _component_of(head, routing.prefix)
    return [Job(JobKind.COMPONENT, repository, component)] if component else []


def _config(payload: dict[str, Any], routing: Routing, repository: str) -> list[Job]:
    return [Job(JobKind.CONFIG, repository)]


def _repository_edited(payload: dict[str, Any], routing: Routing, repository: str) -> list[Job]:
    # a default branch changed arrives as `edited` with `changes.default_branch`; the config
    # is read from it (https://docs.github.com/en/webhooks/webhook-events-and-payloads#repository)
    return _config(payload, routing, repository) if "default_branch" in (payload.get("changes") or {}) else []


def _workflow_run(payload: dict[str, Any], routing: Routing, repository: str) -> list[Job]:
    run = payload.get("workflow_run") or {}
    path = str(run.get("path") or "")
    workflows = routing.workflows
    if not workflows or path.rsplit("/", 1)[-1] in workflows or str(run.get("name")) in workflows:
        return [Job(JobKind.REPOSITORY, repository)]
    return []


def _comment(payload: dict[str, Any], routing: Routing, repository: str) -> list[Job]:
    issue = payload.get("issue") or {}
    command = command_of(str((payload.get("comment") or {}).get("body") or ""))
    # on the dashboard issue (its body carries the marker), the one command that needs no
    # pull request: a build taken from a run, for a head whose own build gave none
    on_dashboard = not issue.get("pull_request") and DASHBOARD_MARKER in str(issue.get("body") or "")
    if not (issue.get("pull_request") or on_dashboard) or command is None or (on_dashboard and command.name != "build"):
        return []
    sender = (payload.get("sender") or {}).get("login")
    number = issue.get("number")
    comment = (payload.get("comment") or {}).get("id")
    seen = (read_marker(str(issue.get("body") or "")) or {}).get("commit")
    return [
        Job(
            JobKind.COMMAND,
            repository,
            command=command.name,
            sender=str(sender) if sender else None,
            run=command.run,
            number=number if isinstance(number, int) else None,
            on_dashboard=on_dashboard,
            component=command.component,
            comment=comment if isinstance(comment, int) else None,
            seen=seen if isinstance(seen, str) else None,
        )
    ]


def _in_a_repository(route: Callable[[dict[str, Any], Routing, str], list[Job]]) -> Route:
    """A route of an event about one repository: nothing when the payload names none."""

    def routed(payload: dict[str, Any], routing: Routing) -> list[Job]:
        repository = repository_of(payload)
        return [] if repository is None else route(payload, routing, repository)

    return routed


# The events and actions the bot listens to; any other is answered 2xx and asks for nothing.
ROUTES: dict[tuple[str, str], Route] = {
    ("installation", ANY): _installations("installation"),
    ("installation_repositories", ANY): _installations("installation_repositories"),
    # the account the App is installed on renamed: every repository of it has a new full_name
    # (https://docs.github.com/en/webhooks/webhook-events-and-payloads#installation_target)
    ("installation_target", "renamed"): _installations("installation_target"),
    ("push", ANY): _in_a_repository(_push),
    **{
        ("pull_request", action): _in_a_repository(_bot_pull_request)
        for action in ("closed", "edited", "reopened", "synchronize")
    },
    ("repository", "renamed"): _moved,
    ("repository", "transferred"): _moved,
    ("repository", "edited"): _in_a_repository(_repository_edited),
    ("workflow_run", "completed"): _in_a_repository(_workflow_run),
    ("issue_comment", "created"): _in_a_repository(_comment),
}


def work_for(
    event: str,
    payload: dict[str, Any],
    *,
    prefix: str = BRANCH_PREFIX,
    base_branches: frozenset[str] = frozenset({"main"}),
    workflows: frozenset[str] = frozenset(),
) -> list[Job]:
    """The work one delivery asks for; [] for events the bot ignores (answered 2xx all the same)."""
    action = payload.get("action")
    route = (ROUTES.get((event, action)) if isinstance(action, str) else None) or ROUTES.get((event, ANY))
    return route(payload, Routing(prefix, base_branches, workflows)) if route is not None else []


# -- answers ---------------------------------------------------------------------------------

MAX_MESSAGE = 500  # characters of GitHub's message kept (a sentence, not a page)
MAX_READ = 65536  # bytes of an error body read for its message

# https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately
# "Otherwise, wait for at least one minute before retrying ... an exponentially increasing amount of time"
SECONDARY_WAIT = 60.0

# https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
# (a 401 names the claim: probot/probot#967, tibdex/github-app-token#102)
CLOCK_CLAIMS = ("'issued at' claim", "'expiration time' claim", "('iat')", "('exp')")
# A GitHub App without `workflows`, or an OAuth/PAT token without the `workflow` scope:
# "refusing to allow a GitHub App to create or update workflow `.github/workflows/x.yml`
# without `workflows` permission" (peter-evans/create-pull-request#1191, renovatebot/renovate#19329)
WORKFLOW_REFUSAL = "to create or update workflow"


@dataclass(frozen=True)
class Answer:
    """A GitHub answer, as far as deciding on it goes."""

    status: int
    message: str  # GitHub's `message`, and the `message`/`code` of its `errors`, joined
    headers: Mapping[str, str]
    wait: float | None = None  # the adapter's documented wait, continuing its own attempts

    @property
    def lower(self) -> str:
        return self.message.lower()


def read_answer(status: int, headers: Mapping[str, str], body: bytes, *, wait: float | None = None) -> Answer:
    """An answer as GitHub sent it (`wait`: the transport's, continuing its own attempts)."""
    return Answer(status, message_of(body[:MAX_READ]), dict(headers), wait)


def message_of(content: bytes) -> str:
    """GitHub's message from a JSON error body (`message`, then each of `errors`)."""
    try:
        data = json.loads(content or b"{}")
    except ValueError:
        return content[:MAX_MESSAGE].decode("utf-8", "replace").strip()
    if not isinstance(data, dict):
        return ""
    parts = [str(data.get("message") or "").strip()]
    for error in data.get("errors") or []:
        if isinstance(error, dict):
            parts.append(str(error.get("message") or error.get("code") or "").strip())
        elif isinstance(error, str):
            parts.append(error.strip())
    return " ".join(p for p in parts if p)[:MAX_MESSAGE]


def seconds_of(value: str | None, now: float) -> float | None:
    """Retry-After: delay-seconds (GitHub's form) or an HTTP-date (RFC 9110 §10.2.3)."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def limit_wait(
    status: int, headers: Mapping[str, str], text: str, attempt: int, *, now: float, backoff: float = 1.0
) -> float | None:
    """Seconds to wait after answer number `attempt` (from 0), or None: not a rate limit, not
    retryable. `now` in epoch seconds, `text` the body or GitHub's message. A 5xx waits its
    Retry-After or `backoff`·2^attempt (a POST's 5xx is the caller's: it may have landed).

    https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit
    https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately
    """
    lowered = {key.lower(): value for key, value in headers.items()}  # a plain dict keeps the sender's case
    remaining = (lowered.get("x-ratelimit-remaining") or "").strip()
    said = text.lower()
    # "a 403 or 429 response, and the x-ratelimit-remaining header will be 0" (primary), or
    # "an error message that indicates that you exceeded a secondary rate limit"
    limited = status == 429 or (
        status == 403 and (remaining == "0" or "rate limit" in said or "abuse detection" in said)
    )
    retry_after = seconds_of(lowered.get("retry-after"), now)
    if not limited:
        if status < 500:
            return None
        return retry_after if retry_after is not None else backoff * 2.0**attempt
    if retry_after is not None:  # "you should not retry your request until after that many seconds"
        return retry_after
    reset = seconds_of(lowered.get("x-ratelimit-reset"), 0.0)  # UTC epoch seconds
    if remaining == "0" and reset is not None:  # "not ... until after the time specified by x-ratelimit-reset"
        return max(0.0, reset - now)
    return SECONDARY_WAIT * 2.0**attempt


def is_rate_limited(answer: Answer) -> bool:
    return (
        answer.status in (403, 429)
        and limit_wait(answer.status, answer.headers, answer.message, 0, now=time.time()) is not None
    )


def is_too_large(answer: Answer) -> bool:
    """The contents API refuses files over 1 MB: "This API returns blobs up to 1 MB in size
    …" with error code `too_large` (https://docs.github.com/en/rest/repos/contents#get-repository-content)."""
    return answer.status == 403 and ("too_large" in answer.lower or "too large" in answer.lower)


def refusal(answer: Answer, what: str) -> WheelpinError:
    """The error `answer` means for `what` (e.g. "writing wheelpin/lmcache")."""
    said = f": {answer.message}" if answer.message else ""
    status, lower = answer.status, answer.lower
    if status in (403, 429) and is_rate_limited(answer):
        wait = (
            answer.wait
            if answer.wait is not None
            else limit_wait(status, answer.headers, answer.message, 0, now=time.time())
        )
        return TransientError(f"GitHub rate-limited {what} ({status}{said})", retry_after=wait)
    if status == 401:
        if any(claim in lower for claim in CLOCK_CLAIMS):
            return CredentialsError(
                f"GitHub refused the App's token for {what}: this host's clock and GitHub's disagree (check NTP){said}"
            )
        return CredentialsError(f"GitHub refused the credentials for {what} (401{said})")
    if WORKFLOW_REFUSAL in lower:
        return PermissionRefused(
            f"GitHub refused {what}: the change touches files under .github/workflows/ "
            "(brought in from the base) and the App lacks the `workflows` permission "
            f'(grant "Workflows: read and write" to the App){said}'
        )
    if status == 403:
        if "archived" in lower:  # refused the same way until someone unarchives it: not made again meanwhile
            return RuleRefused(f"GitHub refused {what}: the repository is archived (read-only){said}")
        if "suspended" in lower:
            return CredentialsError(f"GitHub refused {what}: the App's installation is suspended{said}")
        return PermissionRefused(f"GitHub refused {what}: the App or token lacks a permission (403{said})")
    if status == 404:
        return ConfigError(f"GitHub found nothing for {what} (404): check the names in the config")
    if status == 410:
        return ConfigError(f"GitHub: {what} is gone (410{said})")
    if status == 409:  # a conflict (a ref moved under a write): the next pass reads afresh
        return TransientError(f"GitHub: {what} met a conflict (409{said})")
    if status == 422:
        return RefusedError(f"GitHub refused {what} (422{said})")
    if status >= 500 or status == 0:
        return TransientError(f"GitHub failed {what} ({status or 'no answer'}{said})")
    return TransientError(f"GitHub answered {status} to {what}{said}")


# -- pages -----------------------------------------------------------------------------------

_LINK = re.compile(r"\s*<([^>]*)>(.*)")  # one link-value: `<URI-reference> *( ";" link-param )`


def next_page(headers: Mapping[str, str]) -> str | None:
    """The URL a listing's `Link` header names `rel="next"`, None on its last page.
    GitHub sends `Link: <…?page=2>; rel="next", <…?page=9>; rel="last"`
    (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api;
    the grammar is RFC 8288 §3)."""
    links = next((value for key, value in headers.items() if key.lower() == "link"), "")
    for value in re.split(r",\s*(?=<)", links):
        link = _LINK.match(value)
        if link is None:
            continue
        params = [param.partition("=") for param in link.group(2).split(";")]
        if any(key.strip() == "rel" and rel.strip(" '\"") == "next" for key, _, rel in params):
            return link.group(1).strip()
    return None


@dataclass(frozen=True)
class Page:
    data: Any  # the decoded JSON body (None when there is none)
    next: str | None = None  # the URL of the next page (`Link: <…>; rel="next"`)


def decipher(status: int, headers: Mapping[str, str], body: bytes, what: str, *, wait: float | None = None) -> Page:
    """One GitHub answer → its data and next page, or the typed error it means for `what`
    (`wait`: the transport's documented wait, continuing its own attempts)."""
    if 200 <= status < 300:
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        return Page(data, next_page(headers))
    raise refusal(read_answer(status, headers, body, wait=wait), what)

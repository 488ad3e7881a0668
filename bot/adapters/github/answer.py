"""What a GitHub answer means, by what GitHub says and not by its status alone.

Every non-2xx answer of the GitHub adapter (the platform, the Actions builder, the App
calls) is read here into one of wheelpin's errors (core/errors.py), so that the loop
knows whether to wait (TransientError, with GitHub's own wait), to stop and say what to
grant (PermissionRefused), or to stop and say what to fix (ConfigError, RefusedError,
CredentialsError). Pure: it reads a status, headers and a body; no request is made.

The messages below are GitHub's own, as its REST documentation and its users' trackers
record them (each cited where it is matched).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

import requests

from ...core.errors import (
    ConfigError,
    CredentialsError,
    PermissionRefused,
    RefusedError,
    RuleRefused,
    TransientError,
    WheelpinError,
)
from .transport import limit_wait, retry_after

MAX_MESSAGE = 500  # characters of GitHub's message kept (a sentence, not a page)

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


def answer_of(response: requests.Response | None, status: int | None = None) -> Answer:
    if response is None:
        return Answer(status or 0, "", {})
    return Answer(response.status_code, message_of(response.content[:65536]), dict(response.headers),
                  retry_after(response))


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


def is_rate_limited(answer: Answer) -> bool:
    return answer.status in (403, 429) and limit_wait(answer.status, answer.headers, answer.message, 0,
                                                      now=time.time()) is not None


def is_too_large(answer: Answer) -> bool:
    """The contents API refuses files over 1 MB: "This API returns blobs up to 1 MB in size
    …" with error code `too_large` (https://docs.github.com/en/rest/repos/contents#get-repository-content)."""
    return answer.status == 403 and ("too_large" in answer.lower or "too large" in answer.lower)


def refusal(answer: Answer, what: str) -> WheelpinError:
    """The error `answer` means for `what` (e.g. "writing wheelpin/lmcache")."""
    said = f": {answer.message}" if answer.message else ""
    status, lower = answer.status, answer.lower
    if status in (403, 429) and is_rate_limited(answer):
        wait = answer.wait if answer.wait is not None else \
            limit_wait(status, answer.headers, answer.message, 0, now=time.time())
        return TransientError(f"GitHub rate-limited {what} ({status}{said})", retry_after=wait)
    if status == 401:
        if any(claim in lower for claim in CLOCK_CLAIMS):
            return CredentialsError(f"GitHub refused the App's token for {what}: this host's clock and GitHub's "
                                    f"disagree (check NTP){said}")
        return CredentialsError(f"GitHub refused the credentials for {what} (401{said})")
    if WORKFLOW_REFUSAL in lower:
        return PermissionRefused(f"GitHub refused {what}: the change touches files under .github/workflows/ "
                                 "(brought in from the base) and the App lacks the `workflows` permission "
                                 f"(grant \"Workflows: read and write\" to the App){said}")
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

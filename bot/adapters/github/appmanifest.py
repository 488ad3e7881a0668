"""The GitHub App wheelpin runs as, and creating it in one step (docs/design.md §2), by
GitHub's manifest flow ("Registering a GitHub App from a manifest",
docs.github.com/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):

1. the browser posts the manifest (`manifest`, a JSON string) to
   `https://github.com/settings/apps/new?state=S` (or `/organizations/ORG/settings/apps/new`);
2. GitHub sends the browser back to the manifest's `redirect_url` with `?code=C&state=S`;
3. `POST /app-manifests/{code}/conversions` (no credentials; the code lives an hour) answers
   the App's id, private key (`pem`) and webhook secret.

`wheelpin app create` serves steps 1 and 2 on loopback and does step 3 (commands/app_cmd.py).
deploy/github-app.json is the same manifest, for the hand-made way.
"""

from __future__ import annotations

from typing import Any

from ... import PROJECT_URL
from .host import github_host

PERMISSIONS = {
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "actions": "write",
    "workflows": "write",
    "metadata": "read",
}
EVENTS = ["push", "pull_request", "workflow_run", "issue_comment", "repository"]  # repository: a default branch changed


def manifest(*, name: str, webhook_url: str | None, redirect_url: str, public: bool = False) -> dict[str, Any]:
    """The App's manifest: what wheelpin needs and no more (tests/test_deploy.py)."""
    return {
        "name": name,
        "url": PROJECT_URL,
        "description": "Keeps the ROCm wheels inside container images current: builds, verifies, publishes by "
        "digest, proposes the pins as draft pull requests.",
        "hook_attributes": {
            "url": webhook_url or "https://wheelpin.example.org/webhook",
            "active": webhook_url is not None,
        },
        "redirect_url": redirect_url,
        "public": public,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
    }


def web_and_api(api_url: str | None) -> tuple[str, str]:
    """GitHub's web address (where the manifest is posted) and its REST API's (where the code
    is converted), from WHEELPIN_GITHUB_API_URL (adapters/github/host.py tells them apart)."""
    host = github_host(api_url)
    return host.web, host.api

"""The GitHub forge (docs/design.md §1, "Platforms"), one module per concern:

- `sansio.py`: GitHub's rules without I/O: webhook signatures, event → jobs routing as a
  table, the comment-command grammar, what an answer means (errors, rate limits, the next page).
- `door.py`: the service's webhook door on GitHub: a request's headers and body → jobs.
- `host.py`: which GitHub (github.com, GHE.com, a server), its web and API addresses.
- `client.py`: the only importer of github3.py; tokens, `paginate`.
- `transport.py`: ETags, retries, rate-limit waits and write pacing under the session, and
  a `requests.Response` handed to sansio.py (`answer_of`).
- `platform.py`: the `Platform` verbs: branches, files, draft pull requests.
- `conversation.py`: the service's `Conversation` on GitHub: permissions, reactions,
  commands' targets, the dashboard issue (`dashboard.py` renders it).
- `app.py`: a GitHub App's installations and the bot's identity; `appmanifest.py` the App
  wheelpin asks to be (`wheelpin app create`).
- `forge.py`: the service's `Forge` on GitHub (app/forge.py): credentials, which
  repositories to watch, a repository's platform, config and reconciler, the door.
- `actions.py`: the Actions API client the `github-actions` build kind uses: dispatch,
  runs, artifacts; `workflowfile.py` checks a workflow before it is dispatched.

Importing the package loads none of them: each name below is imported from its module when
first asked for (PEP 562), so `host.py` or `workflowfile.py` cost no github3 nor requests.
A second forge is a sibling folder of this one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .actions import ActionsClient as ActionsClient
    from .app import Installation as Installation
    from .app import app_installations as app_installations
    from .app import check_token as check_token
    from .app import installation_repositories as installation_repositories
    from .client import AppCredentials as AppCredentials
    from .client import app_jwt as app_jwt
    from .client import forget_installation_tokens as forget_installation_tokens
    from .conversation import GitHubConversation as GitHubConversation
    from .platform import GitHubPlatform as GitHubPlatform

_WHERE = {
    "ActionsClient": ".actions",
    "Installation": ".app",
    "app_installations": ".app",
    "check_token": ".app",
    "installation_repositories": ".app",
    "AppCredentials": ".client",
    "app_jwt": ".client",
    "forget_installation_tokens": ".client",
    "GitHubConversation": ".conversation",
    "GitHubPlatform": ".platform",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value  # asked once
    return value

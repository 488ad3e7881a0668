"""The GitHub adapter (docs/design.md §1, "Platforms"), one module per concern:

- `sansio.py`: GitHub's rules without I/O: webhook signatures, event → jobs routing, the
  comment-command grammar, what an answer means (errors, rate limits, the next page).
- `client.py`: the only importer of github3.py; tokens, `paginate`.
- `answer.py`: a `requests.Response` read by sansio.py, with the transport's wait.
- `transport.py`: ETags, retries, rate-limit waits and write pacing under the session.
- `platform.py`: the `Platform` verbs: branches, files, draft pull requests.
- `conversation.py`: the service's needs: permissions, reactions, commands' targets, the dashboard.
- `app.py`: a GitHub App's installations and the bot's identity.
- `actions.py`: the Actions API client the `github-actions` build kind uses: dispatch, runs, artifacts.
"""

from .actions import ActionsClient
from .app import Installation, app_installations, check_token, installation_repositories
from .client import AppCredentials, app_jwt, forget_installation_tokens
from .conversation import Conversation, GitHubConversation, IssuesDisabled, PullTarget
from .platform import GitHubPlatform

__all__ = ["ActionsClient", "AppCredentials", "Conversation", "GitHubConversation", "GitHubPlatform",
           "Installation", "IssuesDisabled", "PullTarget", "app_installations", "app_jwt", "check_token",
           "forget_installation_tokens", "installation_repositories"]

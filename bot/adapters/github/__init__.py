"""The GitHub adapter (docs/design.md §1, "Platforms"), one module per concern:

- `client.py`: the only importer of github3.py; tokens, `decipher`, `paginate`.
- `answer.py`: what a GitHub error answer means, as one of wheelpin's errors.
- `transport.py`: ETags, retries, rate limits and write pacing under the session.
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

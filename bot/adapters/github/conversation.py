"""The service's conversation with a repository on GitHub (docs/design.md §1, "Commands"
and "Dashboard"): who may command the bot, reactions to a command, the pull request a
command is about, the bot's open pull requests, and the one dashboard issue. It is the
service's `Conversation` (app/conversation.py) on GitHub; the loop never needs it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

import requests

from ...app.conversation import IssuesDisabled, PullTarget, Row
from ...core.errors import CredentialsError, TransientError
from ...core.proposal.marker import read_marker
from .. import logs
from . import dashboard
from .client import GitHubError, NotFoundError, said, translate
from .platform import GitHubPlatform

log = logs.get_logger("wheelpin.github")

# the comments since a command looked through for its reply made already (a 5xx answered
# to the reply may hide that it landed): three pages of 100; past them, it is made again
REPLIES_LOOKED_AT = 300


def _oldest_marked(issues: Any, marker: str) -> Any:
    """The oldest issue (not pull request) whose body carries `marker`, if a human copied it."""
    found = None
    for issue in issues:
        if getattr(issue, "pull_request_urls", None) is None and marker in (issue.body or ""):
            if found is None or issue.number < found.number:
                found = issue
    return found


class GitHubConversation:
    def __init__(self, platform: GitHubPlatform) -> None:
        self.platform = platform
        self.client = platform.client
        self.repo = platform.repo

    def say_once(self, branch: str, *, key: str, text: str) -> None:
        self.platform.say_once(branch, key=key, text=text)

    def comment(self, number: int, text: str, *, key: str | None, answering: int | None = None) -> None:
        """A comment on issue `number` (the answer to a command given there), made once per
        `key`, which it carries in a hidden note: looked for first, since a comment GitHub
        answered with a 502 or 504 (its 10 s of work over) may have landed, and the job that
        made it then runs again. None: made without looking. Only the comments since the
        command (`answering`, its comment) are looked at, at most REPLIES_LOOKED_AT of them:
        anyone who may comment decides how many the issue has."""
        url = self.platform.url("issues", str(number), "comments")
        self.client.fresh()
        body = text
        if key is not None:
            tag = f"<!-- wheelpin-reply: {key} -->"
            since = self._since(answering)
            listed = self.client.paginate(
                url, f"reading the comments of #{number}", params={"since": since} if since else None
            )
            if any(tag in str(found.get("body") or "") for found in islice(listed, REPLIES_LOOKED_AT)):
                return
            body = f"{text}\n\n{tag}"
        self.client.call("POST", url, f"commenting on issue #{number}", json={"body": body})
        self.platform.writes += 1

    def _since(self, comment: int | None) -> str | None:
        """A minute before comment `comment` was made (GitHub's times are to the second, and
        `since` is "last updated after"), as the comments listing's `since` takes it (ISO
        8601, OpenAPI `issues/list-comments`); None when it is not known, or gone."""
        if comment is None:
            return None
        data = self.client.call(
            "GET", self.platform.url("issues", "comments", str(comment)), "reading the command's comment", missing={}
        ).data
        made = str(data.get("created_at") or "") if isinstance(data, dict) else ""
        try:
            at = datetime.strptime(made, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
        return (at - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def permission_of(self, user: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none`: may `user` command the bot?"""
        data = self.client.call(
            "GET",
            self.platform.url("collaborators", user, "permission"),
            f"reading the permission of {user}",
            missing={},
        ).data
        role = str(data.get("role_name") or "")
        return role if role in ("maintain", "triage") else str(data.get("permission") or "none")

    def react(self, comment: int, content: str) -> None:
        """React to issue comment `comment` (`+1`, `confused`, …); a reaction already
        there is left as it is. A refusal is logged, never an error: it is a courtesy."""
        self.client.fresh()
        url = self.platform.url("issues", "comments", str(comment), "reactions")
        try:
            answer = self.client.session.post(url, json={"content": content})
        except (requests.RequestException, TransientError) as exc:
            log.warning("github.reaction_failed", comment=comment, error=type(exc).__name__)
            return
        if answer.status_code == 201:
            self.platform.writes += 1
        elif answer.status_code not in (200, 201):
            log.warning("github.reaction_refused", comment=comment, status=answer.status_code)

    def pull_target(self, number: int) -> PullTarget | None:
        """Pull request `number` as a command sees it (None if it is an issue, or gone)."""
        self.client.fresh()
        try:
            pull = self.repo.pull_request(number)
        except NotFoundError:
            return None
        except GitHubError as exc:
            raise translate(exc, f"reading pull request #{number}") from None
        if pull is None or not self.platform.ours(pull):
            return None  # a fork's branch, even one named like the bot's: not a command's target
        marker = read_marker(pull.body or "") or {}
        commit = marker.get("commit")
        return PullTarget(str(pull.head.ref), str(pull.state) == "open", commit if isinstance(commit, str) else None)

    def open_proposals(self) -> dict[str, str]:
        """branch → web address of each open pull request of the bot (one listing)."""
        self.client.fresh()
        try:
            return {str(pull.head.ref): str(pull.html_url) for pull in self.platform.pulls("open")}
        except GitHubError as exc:
            raise translate(exc, "listing pull requests") from None

    def dashboard_text(self, rows: list[Row], *, repository: str, config_error: str | None) -> str:
        return dashboard.render(rows, repository=repository, config_error=config_error)

    def keep_dashboard(self, text: str, *, known: int | None = None) -> int:
        """The dashboard issue: labelled, found by its marker (issues off: 410, IssuesDisabled)."""
        return self.keep_issue(
            marker=dashboard.MARKER, label=dashboard.LABEL, title=dashboard.TITLE, body=text, known=known
        )

    def keep_issue(self, *, marker: str, label: str, title: str, body: str, known: int | None = None) -> int:
        """The one issue that carries `marker`, its body brought up to date; opened when
        there is none. Returns its number. Looked for, in turn: issue `known` (the number
        kept from an earlier call), the issues with `label` (open or closed), the issues the
        bot itself opened; so one a human took the label off is still found, and labelled
        again."""
        self.client.fresh()
        try:
            found = self._marked_issue(known, marker) if known is not None else None
            if found is None:
                found = _oldest_marked(self.repo.issues(state="all", labels=label), marker)
            if found is None:  # its label taken off, and its number forgotten (a restart)
                found = self._created_by_the_bot(marker)
            if found is not None and label.lower() not in [
                str(lbl.name).lower() for lbl in found.original_labels or []
            ]:
                self.platform.add_labels(int(found.number), [label])
            if found is None:
                created = self.repo.create_issue(title, body=body, labels=[label])
                self.platform.writes += 1
                return int(created.number)
            if (found.body or "") != body or found.title != title:
                found.edit(title=title, body=body)
                self.platform.writes += 1
            return int(found.number)
        except GitHubError as exc:
            if getattr(exc, "code", None) == 410:
                raise IssuesDisabled(
                    f"{self.repo.full_name} has issues turned off: no dashboard there "
                    f"({said(exc).message or 'GitHub answered 410'})"
                ) from None
            raise translate(exc, "the dashboard issue") from None

    def _created_by_the_bot(self, marker: str) -> Any:
        try:
            login = self.platform.bot_login()
        except CredentialsError:  # a token that may not read its own user (an Actions token): label only
            return None
        items = self.client.paginate(
            self.platform.url("issues"), "listing the bot's issues", params={"state": "all", "creator": login}
        )
        return _oldest_marked([self.client.issue(item) for item in items], marker)

    def _marked_issue(self, number: int, marker: str) -> Any:
        """Issue `number` if it is still an issue of this repository carrying `marker`,
        else None: deleted (410), gone (404), transferred elsewhere (followed to another
        repository), a pull request now, or its marker edited out."""
        try:
            issue = self.repo.issue(number)
        except GitHubError as exc:
            if getattr(exc, "code", None) in (404, 410):
                return None
            raise
        here = f"/repos/{self.repo.full_name}/issues/".lower()
        if here not in str(getattr(issue, "url", "") or "").lower():
            return None
        if getattr(issue, "pull_request_urls", None) is not None or marker not in (issue.body or ""):
            return None
        return issue

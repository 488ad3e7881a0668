"""The GitHub platform: proposals as draft pull requests (the only importer of github3).

The same verbs as the local platform. Files change in one commit written through the
git data API (blobs → tree → commit → ref), only on the bot's own branch prefix; the
branch is read again right before a forced update and left alone if it moved. github3.py
4.0.1 has no `draft` flag for a new pull request: that call goes through github3's own
authenticated session. A 422 for drafts (private repositories on free plans) falls back
to a ready pull request marked draft in its title. No tag or release is ever created.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import github3
import requests
import structlog
from github3.exceptions import GitHubError, NotFoundError, UnprocessableEntity
from github3.issues.issue import ShortIssue as Issue

from ..core.config import Author
from ..core.proposal import read_marker
from ..core.errors import CredentialsError, InputError, RefusedError, TransientError, WheelpinError
from .githubhttp import GitHubHTTP
from .localplatform import BranchCommit

log = structlog.get_logger("wheelpin.github")

DRAFT_PREFIX = "[draft] "


@dataclass(frozen=True)
class PullTarget:
    """What a `/wheelpin` command on a pull request acts on."""

    branch: str  # its head branch
    open: bool
    commit: str | None  # the upstream commit its marker proposes


def _oldest_marked(issues: Any, marker: str) -> Any:
    """The oldest issue (not pull request) whose body carries `marker`, if a human copied it."""
    found = None
    for issue in issues:
        if getattr(issue, "pull_request_urls", None) is None and marker in (issue.body or ""):
            if found is None or issue.number < found.number:
                found = issue
    return found


def _client(api_url: str | None, token: str | None = None) -> github3.GitHub:
    """A github3 client for github.com, or for the GitHub Enterprise Server at `api_url`
    (`https://HOST`: github3 adds `/api/v3`)."""
    return github3.GitHubEnterprise(api_url.rstrip("/") + "/", token=token) if api_url else github3.GitHub(token=token)


def _translate(exc: GitHubError, what: str) -> WheelpinError:
    status = getattr(exc, "code", None) or type(exc).__name__
    if status in (401, 403):
        return CredentialsError(f"GitHub refused {what} ({status})")
    return TransientError(f"GitHub: {what} failed ({status})")


@dataclass(frozen=True)
class AppCredentials:
    """A GitHub App's identity: installation tokens are made from it, and renewed."""

    app_id: int
    private_key: bytes = field(repr=False)
    installation_id: int


RENEW_BEFORE = datetime.timedelta(minutes=5)  # installation tokens live an hour


def app_installations(*, api_url: str | None, app: AppCredentials) -> list[tuple[int, str]]:
    """The installations of a GitHub App, as (installation id, account login): what it watches."""
    gh = _client(api_url)
    try:
        gh.login_as_app(app.private_key, str(app.app_id), expire_in=60)
        return [(int(found.id), str(found.account["login"])) for found in gh.app_installations()]
    except GitHubError as exc:
        raise _translate(exc, "listing the App's installations") from None


def check_token(*, api_url: str | None, token: str) -> None:
    """CredentialsError unless GitHub accepts `token` (GET /rate_limit: free, any token)."""
    gh = _client(api_url, token)
    try:
        gh.rate_limit()
    except GitHubError as exc:
        raise _translate(exc, "checking the token") from None


def installation_repositories(*, api_url: str | None, app: AppCredentials) -> list[str]:
    """`owner/name` of every repository the installation may see: the repositories to watch."""
    gh = _client(api_url)
    try:
        gh.login_as_app_installation(app.private_key, str(app.app_id), app.installation_id, expire_in=60)
        url: str | None = gh._build_url("installation", "repositories") + "?per_page=100"
        names: list[str] = []
        while url:
            answer = gh.session.get(url)
            if answer.status_code != 200:
                raise TransientError(f"GitHub: listing the installation's repositories answered {answer.status_code}")
            names += [str(repo["full_name"]) for repo in answer.json().get("repositories", [])]
            url = answer.links.get("next", {}).get("url")
        return names
    except GitHubError as exc:
        raise _translate(exc, "listing the installation's repositories") from None


class GitHubPlatform:
    def __init__(self, *, api_url: str | None, owner: str, repo: str, author: Author,
                 token: str | None = None, app: AppCredentials | None = None,
                 branch_prefix: str = "wheelpin/", signoff: bool = False,
                 http: GitHubHTTP | None = None) -> None:
        if (token is None) == (app is None):
            raise CredentialsError("GitHub needs a token or App credentials (exactly one)")
        self.app = app
        self._api_url = api_url
        self._login: str | None = None
        self.gh = _client(api_url, token)
        self.http = http or GitHubHTTP()
        for scheme in ("http://", "https://"):
            self.gh.session.mount(scheme, self.http)
        self._fresh()
        try:
            found = self.gh.repository(owner, repo)
        except GitHubError as exc:
            raise _translate(exc, f"reading {owner}/{repo}") from None
        if found is None:
            raise CredentialsError(f"GitHub: {owner}/{repo} is not visible to this token")
        self.repo = found
        self.owner = owner
        self.author = author
        self.prefix = branch_prefix
        self.signoff = signoff
        self.writes = 0
        self.page_size = 100
        self._bot_refs: dict[str, str] | None = None

    def _fresh(self) -> None:
        """With App credentials, an installation token that lives a while longer."""
        if self.app is None:
            return
        auth = getattr(self.gh.session, "auth", None)
        expires = getattr(auth, "expires_at", None)
        if expires is not None and expires - datetime.datetime.now(datetime.timezone.utc) > RENEW_BEFORE:
            return
        try:
            # PyJWT 2.10+ wants a string `iss`: github3.py 4.0.1 would pass the int through
            self.gh.login_as_app_installation(self.app.private_key, str(self.app.app_id),
                                              self.app.installation_id, expire_in=60)
        except GitHubError as exc:
            raise _translate(exc, f"an installation token for installation {self.app.installation_id}") from None

    # -- reading ----------------------------------------------------------------------------

    def begin_pass(self) -> None:
        """A pass starts: the bot's branches are listed afresh, once (one request, 304 when
        nothing moved), instead of one lookup per component."""
        self._bot_refs = None

    def _bot_branches(self) -> dict[str, str]:
        if self._bot_refs is None:
            url: str | None = self.repo._build_url("git", "matching-refs", "heads", self.prefix.rstrip("/"),
                                                   base_url=self.repo._api) + f"?per_page={self.page_size}"
            found: dict[str, str] = {}
            while url:  # every page: GitHub answers 30 a page unless asked
                answer = self.gh.session.get(url)
                if answer.status_code != 200:
                    raise TransientError(f"GitHub: listing the {self.prefix} branches answered {answer.status_code}")
                found.update({item["ref"]: item["object"]["sha"] for item in answer.json()})
                url = answer.links.get("next", {}).get("url")
            self._bot_refs = found
        assert self._bot_refs is not None
        return self._bot_refs

    def resolve(self, ref: str) -> str | None:
        self._fresh()
        if not ref.startswith("refs/"):
            return ref if len(ref) == 40 else None
        if ref.startswith(f"refs/heads/{self.prefix}"):
            return self._bot_branches().get(ref)
        try:
            return str(self.repo.ref(ref.removeprefix("refs/")).object.sha)
        except NotFoundError:
            return None
        except GitHubError as exc:
            raise _translate(exc, f"reading {ref}") from None

    def read_file(self, commit: str, path: str) -> str | None:
        self._fresh()
        try:
            contents = self.repo.file_contents(path, ref=commit)
        except NotFoundError:
            return None
        except GitHubError as exc:
            raise _translate(exc, f"reading {path}") from None
        try:
            return bytes(contents.decoded).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path} at {commit[:8]} is not UTF-8 text") from None

    def branch_commits(self, branch: str, base: str) -> list[BranchCommit]:
        self._fresh()
        try:
            comparison = self.repo.compare_commits(base, branch)
        except GitHubError as exc:
            raise _translate(exc, f"comparing {branch} with the base") from None
        found = []
        for commit in comparison.commits():
            data = commit.as_dict()["commit"]
            found.append(BranchCommit(str(commit.sha), str(data["author"]["email"]), str(data["message"])))
        return found

    def is_bot_commit(self, commit: BranchCommit) -> bool:
        return commit.author_email == self.author.email and "<!-- wheelpin: " in commit.message

    # -- writing ----------------------------------------------------------------------------

    def _check_branch(self, branch: str) -> None:
        if not branch.startswith(self.prefix) or branch.startswith("refs/"):
            raise RefusedError(f"wheelpin writes only branches under {self.prefix}, not {branch}")

    def write_branch(self, branch: str, *, base: str, files: Mapping[str, str], message: str,
                     expected: str | None) -> str:
        self._check_branch(branch)
        self._fresh()
        if self.signoff:
            message = f"{message.rstrip()}\n\nSigned-off-by: {self.author.name} <{self.author.email}>\n"
        identity = {"name": self.author.name, "email": self.author.email}
        try:
            base_tree = self.repo.git_commit(base).tree.sha
            entries = [{"path": path, "mode": "100644", "type": "blob",
                        "sha": self.repo.create_blob(text, "utf-8")} for path, text in sorted(files.items())]
            tree = self.repo.create_tree(entries, base_tree=base_tree).sha if entries else base_tree
            commit = self.repo.create_commit(message, tree, [base], author=identity, committer=identity).sha
            if expected is None:
                try:
                    self.repo.create_ref(f"refs/heads/{branch}", commit)
                except UnprocessableEntity:
                    raise RefusedError(f"{branch} appeared while wheelpin was writing it; left alone") from None
            else:
                current = self.repo.ref(f"heads/{branch}")  # re-read: the REST API has no CAS
                if current.object.sha != expected:
                    raise RefusedError(f"{branch} moved while wheelpin was writing it; left alone")
                current.update(commit, force=True)
        except GitHubError as exc:
            raise _translate(exc, f"writing {branch}") from None
        self.writes += 1
        self._bot_refs = None
        return str(commit)

    def _open_pull(self, branch: str) -> Any:
        for pull in self.repo.pull_requests(state="open", head=f"{self.owner}:{branch}"):
            return pull
        return None

    def publish_proposal(self, branch: str, *, base: str, title: str, body: str,
                         labels: Sequence[str]) -> None:
        """Open the draft pull request of `branch`, or bring its title, body, labels up to date."""
        self._check_branch(branch)
        self._fresh()
        try:
            pull = self._open_pull(branch)
            if pull is None:
                url = self.repo._build_url("pulls", base_url=self.repo._api)
                data = {"title": title, "head": branch, "base": base, "body": body, "draft": True}
                answer = self.gh.session.post(url, json=data)
                if answer.status_code == 422 and "draft" in answer.text.lower():
                    answer = self.gh.session.post(url, json={**data, "draft": False,
                                                              "title": DRAFT_PREFIX + title})
                if answer.status_code != 201:
                    raise TransientError(f"GitHub: opening the pull request of {branch} answered {answer.status_code}")
                number = answer.json()["number"]
                self.writes += 1
            else:
                number = pull.number
                desired = DRAFT_PREFIX + title if pull.title.startswith(DRAFT_PREFIX) else title
                if pull.title != desired or (pull.body or "") != body:
                    pull.update(title=desired, body=body)
                    self.writes += 1
            issue = self.repo.issue(number)
            missing = [label for label in labels if label not in {l.name for l in issue.labels()}]
            if missing:
                issue.add_labels(*missing)
                self.writes += 1
        except GitHubError as exc:
            raise _translate(exc, f"the pull request of {branch}") from None

    def say_once(self, branch: str, *, key: str, text: str) -> None:
        self._fresh()
        tag = f"<!-- wheelpin-note: {key} -->"
        try:
            pull = self._open_pull(branch)
            if pull is None:
                return
            issue = self.repo.issue(pull.number)
            if any(tag in (comment.body or "") for comment in issue.comments()):
                return
            issue.create_comment(f"{text}\n\n{tag}")
            self.writes += 1
        except GitHubError as exc:
            raise _translate(exc, f"commenting on the pull request of {branch}") from None

    def skipped_commits(self, branch: str) -> set[str]:
        skipped: set[str] = set()
        try:
            for pull in self.repo.pull_requests(state="closed", head=f"{self.owner}:{branch}"):
                if pull.merged_at is None:
                    state = read_marker(pull.body or "")
                    if state and isinstance(state.get("commit"), str):
                        skipped.add(state["commit"])
        except GitHubError as exc:
            raise _translate(exc, f"the closed pull requests of {branch}") from None
        return skipped

    def close(self, branch: str, *, expected: str, reason: str) -> None:
        self._check_branch(branch)
        self._fresh()
        try:
            pull = self._open_pull(branch)
            if pull is not None:
                self.repo.issue(pull.number).create_comment(f"Closing: {reason}")
                pull.close()
            current = self.repo.ref(f"heads/{branch}")
            if current.object.sha != expected:
                raise RefusedError(f"{branch} moved while wheelpin was closing it; left alone")
            current.delete()
            self._bot_refs = None
        except NotFoundError:
            pass
        except GitHubError as exc:
            raise _translate(exc, f"closing {branch}") from None
        self.writes += 1

    # -- the service's needs ----------------------------------------------------------------

    def permission_of(self, user: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none`: may `user` command the bot?"""
        self._fresh()
        url = self.repo._build_url("collaborators", user, "permission", base_url=self.repo._api)
        answer = self.gh.session.get(url)
        if answer.status_code == 404:
            return "none"
        if answer.status_code != 200:
            raise TransientError(f"GitHub: reading the permission of {user} answered {answer.status_code}")
        data = answer.json()
        role = str(data.get("role_name") or "")
        return role if role in ("maintain", "triage") else str(data.get("permission") or "none")

    def react(self, comment: int, content: str) -> None:
        """React to issue comment `comment` (`+1`, `confused`, …); a reaction already
        there is left as it is. A refusal is logged, never an error: it is a courtesy."""
        self._fresh()
        url = self.repo._build_url("issues", "comments", str(comment), "reactions", base_url=self.repo._api)
        try:
            answer = self.gh.session.post(url, json={"content": content})
        except requests.RequestException as exc:
            log.warning("github.reaction_failed", comment=comment, error=type(exc).__name__)
            return
        if answer.status_code == 201:
            self.writes += 1
        elif answer.status_code not in (200, 201):
            log.warning("github.reaction_refused", comment=comment, status=answer.status_code)

    def pull_target(self, number: int) -> PullTarget | None:
        """Pull request `number` as a command sees it (None if it is an issue, or gone)."""
        self._fresh()
        try:
            pull = self.repo.pull_request(number)
        except NotFoundError:
            return None
        except GitHubError as exc:
            raise _translate(exc, f"reading pull request #{number}") from None
        if pull is None:
            return None
        marker = read_marker(pull.body or "") or {}
        commit = marker.get("commit")
        return PullTarget(str(pull.head.ref), str(pull.state) == "open",
                          commit if isinstance(commit, str) else None)

    def open_proposals(self) -> dict[str, str]:
        """branch → web address of each open pull request of the bot (one listing)."""
        self._fresh()
        try:
            return {str(pull.head.ref): str(pull.html_url) for pull in self.repo.pull_requests(state="open")
                    if str(pull.head.ref).startswith(self.prefix)}
        except GitHubError as exc:
            raise _translate(exc, "listing pull requests") from None

    def keep_issue(self, *, marker: str, label: str, title: str, body: str, known: int | None = None) -> int:
        """The one issue that carries `marker`, its body brought up to date; opened when
        there is none. Returns its number. Looked for, in turn: issue `known` (the number
        kept from an earlier call), the issues with `label` (open or closed), the issues the
        bot itself opened; so one a human took the label off is still found, and labelled
        again."""
        self._fresh()
        try:
            found = self._marked_issue(known, marker) if known is not None else None
            if found is None:
                found = _oldest_marked(self.repo.issues(state="all", labels=label), marker)
            if found is None:  # its label taken off, and its number forgotten (a restart)
                found = self._created_by_the_bot(marker)
            if found is not None and label not in [lbl.name for lbl in found.original_labels or []]:
                found.add_labels(label)
                self.writes += 1
            if found is None:
                created = self.repo.create_issue(title, body=body, labels=[label])
                self.writes += 1
                return int(created.number)
            if (found.body or "") != body or found.title != title:
                found.edit(title=title, body=body)
                self.writes += 1
            return int(found.number)
        except GitHubError as exc:
            raise _translate(exc, "the dashboard issue") from None

    def bot_login(self) -> str:
        """The login the bot writes as: `<app slug>[bot]` for an App, the token's user."""
        if self._login is None:
            try:
                if self.app is not None:
                    gh = _client(self._api_url)
                    gh.login_as_app(self.app.private_key, str(self.app.app_id), expire_in=60)
                    self._login = f"{gh.authenticated_app().slug}[bot]"
                else:
                    self._login = str(self.gh.me().login)
            except GitHubError as exc:
                raise _translate(exc, "reading who the bot is") from None
        return self._login

    def _created_by_the_bot(self, marker: str) -> Any:
        try:
            login = self.bot_login()
        except CredentialsError:  # a token that may not read its own user (an Actions token): label only
            return None
        url: str | None = self.repo._build_url("issues", base_url=self.repo._api)
        params: dict[str, str] | None = {"state": "all", "creator": login, "per_page": "100"}
        found = []
        while url:
            answer = self.gh.session.get(url, params=params)
            if answer.status_code != 200:
                raise TransientError(f"GitHub: listing the bot's issues answered {answer.status_code}")
            found += [Issue(item, self.gh.session) for item in answer.json()]
            url, params = answer.links.get("next", {}).get("url"), None
        return _oldest_marked(found, marker)

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

"""The GitHub platform: proposals as draft pull requests (the only importer of github3).

The same verbs as the local platform. Files change in one commit written through the
git data API (blobs → tree → commit → ref), only on the bot's own branch prefix; the
branch is read again right before a forced update and left alone if it moved. github3.py
4.0.1 has no `draft` flag for a new pull request: that call goes through github3's own
authenticated session. A 422 for drafts (private repositories on free plans) falls back
to a ready pull request marked draft in its title. No tag or release is ever created.
"""

from __future__ import annotations

import base64
import datetime
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import github3
import jwt
import requests
import structlog
from github3.exceptions import GitHubError, NotFoundError, UnprocessableEntity
from github3.issues.issue import ShortIssue as Issue
from github3.session import AppBearerTokenAuth

from ..core.config import Author
from ..core.proposal import read_marker
from ..core.errors import (
    ConfigError,
    CredentialsError,
    InputError,
    RefusedError,
    RuleRefused,
    TransientError,
    WheelpinError,
)
from .githubanswer import WORKFLOW_REFUSAL, Answer, answer_of, is_too_large, refusal
from .githubhttp import GitHubHTTP
from .localplatform import BranchCommit

log = structlog.get_logger("wheelpin.github")

DRAFT_PREFIX = "[draft] "


class IssuesDisabled(ConfigError):
    """The repository has issues turned off (GitHub answers 410 "Issues are disabled for this
    repo": https://docs.github.com/en/rest/issues/issues#create-an-issue): no dashboard there."""


class _SignatureWanted(Exception):
    """The repository's rules want signed commits: make the commit again, for GitHub to sign."""


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


MAX_FILE = 10 << 20  # a config or Dockerfile read from GitHub: larger is not a text to edit
# https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app:
# `iat` 60 seconds in the past against clock drift, `exp` no more than 10 minutes ahead
JWT_BACKDATE = 60
JWT_LIFETIME = 540


def _translate(exc: GitHubError, what: str) -> WheelpinError:
    return refusal(answer_of(getattr(exc, "response", None), getattr(exc, "code", None)), what)


def _said(exc: GitHubError) -> Answer:
    return answer_of(getattr(exc, "response", None), getattr(exc, "code", None))


@dataclass(frozen=True)
class AppCredentials:
    """A GitHub App's identity: installation tokens are made from it, and renewed."""

    app_id: int
    private_key: bytes = field(repr=False)
    installation_id: int


RENEW_BEFORE = datetime.timedelta(minutes=5)  # installation tokens live an hour


def app_jwt(app: AppCredentials, *, now: float | None = None) -> str:
    """The App's JSON Web Token: RS256, `iss` the App id (as a string: PyJWT 2.10+ wants
    one), issued a minute ago so a host clock a little ahead of GitHub's is not refused."""
    issued = int(time.time() if now is None else now) - JWT_BACKDATE
    return jwt.encode({"iat": issued, "exp": issued + JWT_BACKDATE + JWT_LIFETIME, "iss": str(app.app_id)},
                      app.private_key, algorithm="RS256")


def _as_app(gh: github3.GitHub, app: AppCredentials) -> None:
    """Speak to GitHub as the App itself (github3 would issue its JWT at `now`)."""
    gh.session.app_bearer_token_auth(app_jwt(app), JWT_LIFETIME)


def _as_installation(gh: github3.GitHub, app: AppCredentials) -> None:
    """Speak to GitHub with a new token of the App's installation."""
    url = gh._build_url("app", "installations", str(app.installation_id), "access_tokens")
    with gh.session.no_auth():
        answer = gh.session.post(url, auth=AppBearerTokenAuth(app_jwt(app), JWT_LIFETIME))
    if answer.status_code != 201:
        raise refusal(answer_of(answer), f"an installation token for installation {app.installation_id}")
    gh.session.app_installation_token_auth(answer.json())


def app_installations(*, api_url: str | None, app: AppCredentials) -> list[tuple[int, str]]:
    """The installations of a GitHub App, as (installation id, account login): what it watches."""
    gh = _client(api_url)
    try:
        _as_app(gh, app)
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
        _as_installation(gh, app)
        url: str | None = gh._build_url("installation", "repositories") + "?per_page=100"
        names: list[str] = []
        while url:
            answer = gh.session.get(url)
            if answer.status_code != 200:
                raise refusal(answer_of(answer), "listing the installation's repositories")
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
        self.signs = False  # commits made with no identity, for GitHub to sign (learnt from a refusal)
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
        _as_installation(self.gh, self.app)

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
        """The text of `path` at `commit`, None if there is none. A directory there is a
        config error; a file over 1 MB, which the contents API does not serve, is read
        through the git blobs API."""
        self._fresh()
        answer = self.gh.session.get(self.repo._build_url("contents", path, base_url=self.repo._api),
                                     params={"ref": commit})
        if answer.status_code == 404:
            return None
        said = answer_of(answer)
        if is_too_large(said):  # GitHub's older answer for 1–100 MB
            return self._decode(self._blob(self._entry_sha(commit, path), path), commit, path)
        if answer.status_code != 200:
            raise refusal(said, f"reading {path}")
        data = answer.json()
        kind = "dir" if isinstance(data, list) else str(data.get("type"))
        if kind != "file":
            raise ConfigError(f"{path} at {commit[:8]} is a {'directory' if kind == 'dir' else kind}, not a file")
        if int(data.get("size") or 0) > MAX_FILE:
            raise InputError(f"{path} at {commit[:8]} is over {MAX_FILE} bytes")
        if data.get("encoding") == "none" or (not data.get("content") and int(data.get("size") or 0) > 0):
            raw = self._blob(str(data["sha"]), path)  # today's answer for 1–100 MB: no content
        else:
            raw = base64.b64decode(str(data.get("content") or ""))
        return self._decode(raw, commit, path)

    @staticmethod
    def _decode(raw: bytes, commit: str, path: str) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path} at {commit[:8]} is not UTF-8 text") from None

    def _entry_sha(self, commit: str, path: str) -> str:
        """The blob of `path`, from a listing of its folder (each entry names its blob)."""
        folder, _, name = path.rpartition("/")
        answer = self.gh.session.get(self.repo._build_url("contents", folder, base_url=self.repo._api),
                                     params={"ref": commit})
        if answer.status_code != 200:
            raise refusal(answer_of(answer), f"listing {folder or 'the top folder'}")
        for entry in answer.json():
            if entry.get("name") == name:
                if int(entry.get("size") or 0) > MAX_FILE:
                    raise InputError(f"{path} at {commit[:8]} is over {MAX_FILE} bytes")
                return str(entry["sha"])
        raise TransientError(f"GitHub: {path} was too large to read and then not listed")

    def _blob(self, sha: str, path: str) -> bytes:
        answer = self.gh.session.get(self.repo._build_url("git", "blobs", sha, base_url=self.repo._api))
        if answer.status_code != 200:
            raise refusal(answer_of(answer), f"reading {path} (blob {sha[:8]})")
        data = answer.json()
        if int(data.get("size") or 0) > MAX_FILE:
            raise InputError(f"{path} is over {MAX_FILE} bytes")
        return base64.b64decode(str(data.get("content") or ""))

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
        """A commit the bot made: its marker, and its configured author or, for a commit
        GitHub signed for the App (no identity given), the App's bot user."""
        if "<!-- wheelpin: " not in commit.message:
            return False
        if commit.author_email == self.author.email:
            return True
        return self.app is not None and commit.author_email.endswith(f"+{self.bot_login()}@users.noreply.github.com")

    # -- writing ----------------------------------------------------------------------------

    def _check_branch(self, branch: str) -> None:
        if not branch.startswith(self.prefix) or branch.startswith("refs/"):
            raise RefusedError(f"wheelpin writes only branches under {self.prefix}, not {branch}")

    def write_branch(self, branch: str, *, base: str, files: Mapping[str, str], message: str,
                     expected: str | None) -> str:
        """One commit on `base` holding `files`, and `branch` moved to it. The commit names
        the configured author; where the repository's rules want verified signatures, it
        is made again with no identity, which GitHub signs for an App (a bot's commit is
        signed only then: docs "About commit signature verification", signature
        verification for bots; peter-evans/create-pull-request#1241)."""
        self._check_branch(branch)
        self._fresh()
        if self.signoff:
            message = f"{message.rstrip()}\n\nSigned-off-by: {self.author.name} <{self.author.email}>\n"
        try:
            base_tree = self.repo.git_commit(base).tree.sha
            entries = [{"path": path, "mode": "100644", "type": "blob",
                        "sha": self.repo.create_blob(text, "utf-8")} for path, text in sorted(files.items())]
            tree = self.repo.create_tree(entries, base_tree=base_tree).sha if entries else base_tree
            commit = self._commit(message, tree, base)
            try:
                self._move(branch, commit, expected)
            except _SignatureWanted:
                self.signs = True
                commit = self._commit(message, tree, base)
                self._move(branch, commit, expected)
        except GitHubError as exc:
            raise _translate(exc, f"writing {branch}") from None
        self.writes += 1
        self._bot_refs = None
        return str(commit)

    def _commit(self, message: str, tree: str, base: str) -> str:
        if self.signs and self.app is not None:
            return str(self.repo.create_commit(message, tree, [base]).sha)
        identity = {"name": self.author.name, "email": self.author.email}
        return str(self.repo.create_commit(message, tree, [base], author=identity, committer=identity).sha)

    def _move(self, branch: str, commit: str, expected: str | None) -> None:
        """`branch` to `commit`: created when `expected` is None, else moved from `expected`
        (re-read right before: the REST API has no compare-and-swap)."""
        try:
            if expected is None:
                self.repo.create_ref(f"refs/heads/{branch}", commit)
                return
            current = self.repo.ref(f"heads/{branch}")
            if current.object.sha != expected:
                raise RefusedError(f"{branch} moved while wheelpin was writing it; left alone")
            current.update(commit, force=True)
        except UnprocessableEntity as exc:
            raise self._ref_refusal(branch, _said(exc), created=expected is None) from None
        except GitHubError as exc:
            if (getattr(exc, "code", 0) or 0) >= 500 and self.resolve_fresh(branch) == commit:
                return  # the write landed though its answer was lost
            raise

    def resolve_fresh(self, branch: str) -> str | None:
        self._bot_refs = None
        return self.resolve(f"refs/heads/{branch}")

    def _ref_refusal(self, branch: str, said: Answer, *, created: bool) -> Exception:
        """What a 422 on a ref write means: GitHub's own words for rules and permissions."""
        lower = said.lower
        if "signature" in lower and ("verified" in lower or "signed" in lower):
            if self.app is not None and not self.signs:
                return _SignatureWanted(said.message)  # made again, for GitHub to sign
            unsigned = " (GitHub signs an App's commits, not a token's: use a GitHub App)" if self.app is None else ""
            return RuleRefused(f"GitHub refused writing {branch}: {said.message}{unsigned}")
        if WORKFLOW_REFUSAL in lower:
            return refusal(said, f"writing {branch}")
        if "already exists" in lower and created:
            return RefusedError(f"{branch} appeared while wheelpin was writing it; left alone")
        if "not a valid" in lower or "invalid" in lower:
            return ConfigError(f"{branch} is not a valid branch name ({said.message}): change the component's "
                               "name or defaults.branch_prefix")
        blocking = self.prefix.rstrip("/")
        if created and blocking and self.resolve(f"refs/heads/{blocking}") is not None:
            return ConfigError(f"a branch named {blocking} exists, so git cannot hold {branch} beside it: "
                               "rename that branch or change defaults.branch_prefix")
        return RuleRefused(f"GitHub refused writing {branch}: {said.message or 'no reason given'}")

    def _ours(self, pull: Any) -> bool:
        """A pull request is the bot's only when its head is a branch of this repository
        under the prefix: a fork's `wheelpin/x` (same owner or not) never is."""
        owner, name = getattr(pull.head, "repo", ("", ""))
        return (f"{owner}/{name}".lower() == str(self.repo.full_name).lower()
                and str(pull.head.ref).startswith(self.prefix))

    def _pulls(self, state: str, branch: str | None = None) -> list[Any]:
        head = {"head": f"{self.owner}:{branch}"} if branch else {}
        return [pull for pull in self.repo.pull_requests(state=state, **head) if self._ours(pull)
                and (branch is None or str(pull.head.ref) == branch)]

    def _open_pull(self, branch: str) -> Any:
        found = self._pulls("open", branch)
        return found[0] if found else None

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
                if answer.status_code == 422 and "draft" in answer_of(answer).lower:
                    answer = self.gh.session.post(url, json={**data, "draft": False,
                                                              "title": DRAFT_PREFIX + title})
                if answer.status_code >= 500:  # it may have landed: look before writing again
                    pull = self._open_pull(branch)
                    if pull is None:
                        raise refusal(answer_of(answer), f"opening the pull request of {branch}")
                    return self.publish_proposal(branch, base=base, title=title, body=body, labels=labels)
                if answer.status_code != 201:
                    raise refusal(answer_of(answer), f"opening the pull request of {branch}")
                number = answer.json()["number"]
                self.writes += 1
            else:
                number = pull.number
                desired = DRAFT_PREFIX + title if pull.title.startswith(DRAFT_PREFIX) else title
                if pull.title != desired or (pull.body or "") != body:
                    pull.update(title=desired, body=body)
                    self.writes += 1
            issue = self.repo.issue(number)
            have = {str(found.name).lower() for found in issue.labels()}  # GitHub's names ignore case
            missing = [label for label in labels if label.lower() not in have]
            if missing:
                self._add_labels(number, missing)
        except GitHubError as exc:
            raise _translate(exc, f"the pull request of {branch}") from None

    def _add_labels(self, number: int, labels: Sequence[str]) -> None:
        """As GitHub's description has it: `{"labels": [...]}` (github3 sends a bare list,
        which GitHub takes but does not describe)."""
        url = self.repo._build_url("issues", str(number), "labels", base_url=self.repo._api)
        answer = self.gh.session.post(url, json={"labels": list(labels)})
        if answer.status_code != 200:
            raise refusal(answer_of(answer), f"labelling #{number}")
        self.writes += 1

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
            for pull in self._pulls("closed", branch):
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
                self.say_once(branch, key=f"closing-{expected[:12]}", text=f"Closing: {reason}")
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
        if not self._ours(pull):
            return None  # a fork's branch, even one named like the bot's: not a command's target
        marker = read_marker(pull.body or "") or {}
        commit = marker.get("commit")
        return PullTarget(str(pull.head.ref), str(pull.state) == "open",
                          commit if isinstance(commit, str) else None)

    def open_proposals(self) -> dict[str, str]:
        """branch → web address of each open pull request of the bot (one listing)."""
        self._fresh()
        try:
            return {str(pull.head.ref): str(pull.html_url) for pull in self._pulls("open")}
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
            if found is not None and label.lower() not in [str(lbl.name).lower() for lbl in found.original_labels or []]:
                self._add_labels(int(found.number), [label])
            if found is None:
                created = self.repo.create_issue(title, body=body, labels=[label])
                self.writes += 1
                return int(created.number)
            if (found.body or "") != body or found.title != title:
                found.edit(title=title, body=body)
                self.writes += 1
            return int(found.number)
        except GitHubError as exc:
            if getattr(exc, "code", None) == 410:
                raise IssuesDisabled(f"{self.repo.full_name} has issues turned off: no dashboard there "
                                     f"({_said(exc).message or 'GitHub answered 410'})") from None
            raise _translate(exc, "the dashboard issue") from None

    def bot_login(self) -> str:
        """The login the bot writes as: `<app slug>[bot]` for an App, the token's user."""
        if self._login is None:
            try:
                if self.app is not None:
                    gh = _client(self._api_url)
                    _as_app(gh, self.app)
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

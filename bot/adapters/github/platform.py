"""The GitHub platform (the `Platform` verbs of adapters/platform.py): proposals as draft pull requests.

The same verbs as the local platform. Files change in one commit written through the
git data API (blobs → tree → commit → ref), only on the bot's own branch prefix; the
branch is read again right before a forced update and left alone if it moved. github3.py
4.0.1 has no `draft` flag for a new pull request: that call goes through github3's own
authenticated session. A 422 for drafts (private repositories on free plans) falls back
to a ready pull request marked draft in its title. No tag or release is ever created.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from ...app.jobs import repository_key
from ...core.config.model import BRANCH_PREFIX, Author
from ...core.errors import (
    ConfigError,
    CredentialsError,
    InputError,
    PermissionRefused,
    RefusedError,
    RuleRefused,
    TransientError,
)
from ...core.proposal.commits import carries_marker, check_bot_branch, co_authored, signed_off
from ...core.proposal.marker import read_marker
from .. import logs
from ..filemodes import FOLDER, folders_and_path, mode_to_write
from ..platform import BranchCommit
from .app import bot_login
from .client import AppCredentials, Client, GitHubError, NotFoundError, UnprocessableEntity, said, translate
from .sansio import WORKFLOW_REFUSAL, Answer, is_too_large, refusal
from .transport import GitHubHTTP, answer_of

log = logs.get_logger("wheelpin.github")

DRAFT_PREFIX = "[draft] "
MAX_FILE = 10 << 20  # a config or Dockerfile read from GitHub: larger is not a text to edit


class _SignatureWanted(Exception):
    """The repository's rules want signed commits: make the commit again, for GitHub to sign."""


def is_installation_token(token: str | None) -> bool:
    """A GitHub App installation token: GitHub's tokens say their kind in their prefix, and
    `ghs_` is an installation's ("About authentication to GitHub", GitHub's token formats)."""
    return token is not None and token.startswith("ghs_")


class GitHubPlatform:
    def __init__(
        self,
        *,
        api_url: str | None,
        owner: str,
        repo: str,
        author: Author,
        token: str | None = None,
        app: AppCredentials | None = None,
        branch_prefix: str = BRANCH_PREFIX,
        signoff: bool = False,
        http: GitHubHTTP | None = None,
        login: str | None = None,
    ) -> None:
        if (token is None) == (app is None):
            raise CredentialsError("GitHub needs a token or App credentials (exactly one)")
        self.app = app
        self.client = Client(api_url, token=token, app=app, http=http)
        self.http = self.client.http
        self.repo = self.client.repository(owner, repo)
        self.owner, self.name = self._named()
        self.author = author
        self.prefix = branch_prefix
        self.signoff = signoff
        self.writes = 0
        self.signs = False  # commits made with no identity, for GitHub to sign (learnt from a refusal)
        # GitHub signs the commits of an App's bot made with no identity: the App's own, or an
        # installation token handed in (the Action's, from actions/create-github-app-token),
        # known by its prefix `ghs_` (docs "About authentication", GitHub's token formats)
        self.bot_signed = app is not None or is_installation_token(token)
        self.page_size = 100
        self._bot_refs: dict[str, str] | None = None
        self._branch_pulls: dict[str, list[Any]] = {}  # a branch's pull requests of all states, once a pass
        self._login: str | None = login  # given with a token, which may not ask GitHub who it is
        self._login_refused = False  # GitHub refused to tell the token who it is (GET /user: 403)

    def url(self, *parts: str) -> str:
        """The API URL of `parts` under this repository."""
        return self.client.url("repos", self.owner, self.name, *parts)

    # -- reading ----------------------------------------------------------------------------

    def reread_repository(self) -> None:
        """Read the repository again: its default branch (where the config is read) is read
        once, and a maintainer may rename or change it while the service runs."""
        self.repo = self.client.repository(self.owner, self.name)
        self.owner, self.name = self._named()

    def _named(self) -> tuple[str, str]:
        """The owner and name as GitHub answered them, not as asked: a name in another case,
        or one a rename or transfer left behind, is answered (the old one by a redirect the
        client follows) with the repository's own. Requests then go to its own path, and
        the pull requests' `head` filter names its owner as GitHub filters it: "Filter
        pulls by head user or head organization and branch name in the format of
        `user:ref-name`" (OpenAPI pulls/list): the owner before a transfer would match none."""
        return str(self.repo.owner.login), str(self.repo.name)

    def begin_pass(self) -> None:
        """A pass starts: the bot's branches are listed afresh, once (one request, 304 when
        nothing moved), instead of one lookup per component."""
        self._bot_refs = None
        self._branch_pulls.clear()

    def _bot_branches(self) -> dict[str, str]:
        if self._bot_refs is None:
            url = self.url("git", "matching-refs", "heads", self.prefix.rstrip("/"))
            refs = self.client.paginate(
                url, f"listing the {self.prefix} branches", params={"per_page": str(self.page_size)}
            )
            self._bot_refs = {item["ref"]: item["object"]["sha"] for item in refs}
        assert self._bot_refs is not None
        return self._bot_refs

    def branch_heads(self) -> dict[str, str]:
        """Every branch, from the refs API: `matching-refs/heads` lists each ref that
        starts with `refs/heads` (REST docs, "List matching references"), a page of 100
        at a time."""
        self.client.fresh()
        refs = self.client.paginate(
            self.url("git", "matching-refs", "heads"), "listing the branches", params={"per_page": str(self.page_size)}
        )
        return {
            str(item["ref"]): str(item["object"]["sha"])
            for item in refs
            if str(item.get("ref", "")).startswith("refs/heads/")
        }

    def resolve(self, ref: str) -> str | None:
        self.client.fresh()
        if not ref.startswith("refs/"):
            return ref if len(ref) == 40 else None
        if ref.startswith(f"refs/heads/{self.prefix}"):
            return self._bot_branches().get(ref)
        try:
            return str(self.repo.ref(ref.removeprefix("refs/")).object.sha)
        except NotFoundError:
            return None
        except GitHubError as exc:
            raise translate(exc, f"reading {ref}") from None

    def read_file(self, commit: str, path: str) -> str | None:
        """The text of `path` at `commit`, None if there is none. A directory there is a
        config error; a file over 1 MB, which the contents API does not serve, is read
        through the git blobs API."""
        self.client.fresh()
        answer = self.client.session.get(self.url("contents", path), params={"ref": commit})
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
        listing = self.client.call(
            "GET",
            self.url("contents", folder),  # "": the top folder
            f"listing {folder or 'the top folder'}",
            params={"ref": commit},
        ).data
        for entry in listing if isinstance(listing, list) else []:
            if entry.get("name") == name:
                if int(entry.get("size") or 0) > MAX_FILE:
                    raise InputError(f"{path} at {commit[:8]} is over {MAX_FILE} bytes")
                return str(entry["sha"])
        raise TransientError(f"GitHub: {path} was too large to read and then not listed")

    def _blob(self, sha: str, path: str) -> bytes:
        data = self.client.call("GET", self.url("git", "blobs", sha), f"reading {path} (blob {sha[:8]})").data
        if int(data.get("size") or 0) > MAX_FILE:
            raise InputError(f"{path} is over {MAX_FILE} bytes")
        return base64.b64decode(str(data.get("content") or ""))

    def branch_commits(self, branch: str, base: str) -> list[BranchCommit]:
        self.client.fresh()
        try:
            comparison = self.repo.compare_commits(base, branch)
        except GitHubError as exc:
            raise translate(exc, f"comparing {branch} with the base") from None
        found = []
        for commit in comparison.commits():
            data = commit.as_dict()["commit"]
            found.append(BranchCommit(str(commit.sha), str(data["author"]["email"]), str(data["message"])))
        return found

    def is_bot_commit(self, commit: BranchCommit) -> bool:
        """A commit the bot made: its marker, and its configured author or, for a commit
        GitHub signed for the App (no identity given), the App's bot user."""
        if not carries_marker(commit.message):
            return False
        if commit.author_email == self.author.email:
            return True
        if self.app is None:
            # an installation token cannot ask who its bot is (GET /user answers 403, GET /app
            # wants the App's JWT): any App's bot, naming the configured author as co-author
            return (
                self.bot_signed
                and commit.author_email.endswith("[bot]@users.noreply.github.com")
                and co_authored(commit.message, self.author).rstrip() == commit.message.rstrip()
            )
        return commit.author_email.endswith(f"+{self.bot_login()}@users.noreply.github.com")

    # -- writing ----------------------------------------------------------------------------

    def _check_branch(self, branch: str) -> None:
        check_bot_branch(branch, self.prefix)

    def write_branch(
        self, branch: str, *, base: str, files: Mapping[str, str], message: str, expected: str | None
    ) -> str:
        """One commit on `base` holding `files`, and `branch` moved to it. The commit names
        the configured author; where the repository's rules want verified signatures, it
        is made again with no identity, which GitHub signs for an App (a bot's commit is
        signed only then: docs "About commit signature verification", signature
        verification for bots; peter-evans/create-pull-request#1241); the configured author
        is then kept as a Co-authored-by trailer, the one place GitHub allows it."""
        self._check_branch(branch)
        self.client.fresh()
        if self.signoff:
            message = signed_off(message, self.author)
        try:
            base_tree = self.repo.git_commit(base).tree.sha
            modes = self._base_modes(base_tree, list(files))
            kept = {path: mode_to_write(path, modes, base=base) for path in files}  # refused before any write
            entries = [
                {"path": path, "mode": kept[path], "type": "blob", "sha": self.repo.create_blob(text, "utf-8")}
                for path, text in sorted(files.items())
            ]
            tree = self.repo.create_tree(entries, base_tree=base_tree).sha if entries else base_tree
            commit = self._commit(message, tree, base)
            try:
                self._move(branch, commit, expected)
            except _SignatureWanted:
                self.signs = True
                commit = self._commit(message, tree, base)
                self._move(branch, commit, expected)
        except GitHubError as exc:
            raise translate(exc, f"writing {branch}") from None
        self.writes += 1
        self._bot_refs = None
        return str(commit)

    def _base_modes(self, tree: str, paths: list[str]) -> dict[str, str]:
        """The git mode in `tree` of each path and of each folder above it, read folder by
        folder through the trees API (https://docs.github.com/en/rest/git/trees#get-a-tree;
        a listing of one folder, not of the whole repository, which GitHub truncates)."""
        listings: dict[str, dict[str, tuple[str, str]]] = {}  # tree sha → name → (mode, sha)
        modes: dict[str, str] = {}
        for path in paths:
            folder = tree
            for above in folders_and_path(path):
                if folder not in listings:
                    data = self.client.call(
                        "GET", self.url("git", "trees", folder), f"reading the tree above {path}"
                    ).data
                    listings[folder] = {str(e["path"]): (str(e["mode"]), str(e["sha"])) for e in data.get("tree", [])}
                entry = listings[folder].get(above.rsplit("/", 1)[-1])
                if entry is None:
                    break
                modes[above], folder = entry
                if entry[0] != FOLDER:
                    break
        return modes

    def _commit(self, message: str, tree: str, base: str) -> str:
        if self.signs and self.bot_signed:
            return str(self.repo.create_commit(co_authored(message, self.author), tree, [base]).sha)
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
            raise self._ref_refusal(branch, said(exc), created=expected is None) from None
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
            if self.bot_signed and not self.signs:
                return _SignatureWanted(said.message)  # made again, for GitHub to sign
            unsigned = (
                ""
                if self.bot_signed
                else (
                    " (GitHub signs an App's commits, not a personal token's: use a "
                    "GitHub App, or its installation token)"
                )
            )
            return RuleRefused(f"GitHub refused writing {branch}: {said.message}{unsigned}")
        if WORKFLOW_REFUSAL in lower:
            return refusal(said, f"writing {branch}")
        if "already exists" in lower and created:
            return RefusedError(f"{branch} appeared while wheelpin was writing it; left alone")
        if "not a valid" in lower or "invalid" in lower:
            return ConfigError(
                f"{branch} is not a valid branch name ({said.message}): change the component's "
                "name or defaults.branch_prefix"
            )
        blocking = self.prefix.rstrip("/")
        if created and blocking and self.resolve(f"refs/heads/{blocking}") is not None:
            return ConfigError(
                f"a branch named {blocking} exists, so git cannot hold {branch} beside it: "
                "rename that branch or change defaults.branch_prefix"
            )
        return RuleRefused(f"GitHub refused writing {branch}: {said.message or 'no reason given'}")

    def ours(self, pull: Any) -> bool:
        """A pull request is the bot's only when its head is a branch of this repository
        under the prefix: a fork's `wheelpin/x` (same owner or not) never is."""
        owner, name = getattr(pull.head, "repo", ("", ""))
        same = repository_key(f"{owner}/{name}") == repository_key(str(self.repo.full_name))
        return same and str(pull.head.ref).startswith(self.prefix)

    def pulls(self, state: str, branch: str | None = None) -> list[Any]:
        head = {"head": f"{self.owner}:{branch}"} if branch else {}
        return [
            pull
            for pull in self.repo.pull_requests(state=state, **head)
            if self.ours(pull) and (branch is None or str(pull.head.ref) == branch)
        ]

    def _open_pull(self, branch: str) -> Any:
        found = self.pulls("open", branch)
        return found[0] if found else None

    def publish_proposal(self, branch: str, *, base: str, title: str, body: str, labels: Sequence[str]) -> bool:
        """Open the draft pull request of `branch`, or bring its base, title, body and labels
        up to date; True when it opened one. The base changes only when asked: GitHub moves a
        pull request to another base by itself only when its base branch is renamed."""
        self._check_branch(branch)
        self._branch_pulls.pop(branch, None)  # what was listed of it is no longer so
        self.client.fresh()
        try:
            pull = self._open_pull(branch)
            opened = pull is None
            if pull is None:
                url = self.url("pulls")
                data = {"title": title, "head": branch, "base": base, "body": body, "draft": True}
                answer = self.client.session.post(url, json=data)
                if answer.status_code == 422 and "draft" in answer_of(answer).lower:
                    answer = self.client.session.post(url, json={**data, "draft": False, "title": DRAFT_PREFIX + title})
                if answer.status_code >= 500:  # it may have landed: look before writing again
                    pull = self._open_pull(branch)
                    if pull is None:
                        raise refusal(answer_of(answer), f"opening the pull request of {branch}")
                    self.publish_proposal(branch, base=base, title=title, body=body, labels=labels)
                    return True
                if answer.status_code != 201:
                    raise refusal(answer_of(answer), f"opening the pull request of {branch}")
                number = answer.json()["number"]
                self.writes += 1
            else:
                number = pull.number
                desired = DRAFT_PREFIX + title if pull.title.startswith(DRAFT_PREFIX) else title
                # `base` of "Update a pull request" (OpenAPI pulls/update): the branch the
                # changes are pulled into, sent only when it differs
                moved = {"base": base} if str(pull.base.ref) != base else {}
                if pull.title != desired or (pull.body or "") != body or moved:
                    pull.update(title=desired, body=body, **moved)
                    self.writes += 1
            issue = self.repo.issue(number)
            have = {str(found.name).lower() for found in issue.labels()}  # GitHub's names ignore case
            missing = [label for label in labels if label.lower() not in have]
            if missing:
                self.add_labels(number, missing)
        except GitHubError as exc:
            raise translate(exc, f"the pull request of {branch}") from None
        return opened

    def add_labels(self, number: int, labels: Sequence[str]) -> None:
        """As GitHub's description has it: `{"labels": [...]}` (github3 sends a bare list,
        which GitHub takes but does not describe)."""
        self.client.call(
            "POST", self.url("issues", str(number), "labels"), f"labelling #{number}", json={"labels": list(labels)}
        )
        self.writes += 1

    def say_once(self, branch: str, *, key: str, text: str) -> None:
        self.client.fresh()
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
            raise translate(exc, f"commenting on the pull request of {branch}") from None

    def _pulls_of(self, branch: str) -> list[Any]:
        """The branch's pull requests, open and closed: listed once a pass, for whether one
        is open and which commits were declined."""
        if branch not in self._branch_pulls:
            try:
                self._branch_pulls[branch] = self.pulls("all", branch)
            except GitHubError as exc:
                raise translate(exc, f"the pull requests of {branch}") from None
        return self._branch_pulls[branch]

    def proposal_open(self, branch: str) -> bool:
        """Whether an open pull request carries the branch (a declined one's may be kept)."""
        return any(pull.state == "open" for pull in self._pulls_of(branch))

    def skipped_commits(self, branch: str) -> set[str]:
        """The commits of the branch's pull requests closed unmerged, read from their markers,
        whether the branch was kept or not: GitHub deletes a head branch by itself only after
        a merge ("Managing the automatic deletion of branches"). A commit an open pull request
        carries (one reopened) is not declined. One listing of all states."""
        declined: set[str] = set()
        proposed: set[str] = set()
        try:
            for pull in self._pulls_of(branch):
                state = read_marker(pull.body or "")
                commit = state.get("commit") if state else None
                if not isinstance(commit, str):
                    continue
                if pull.state == "open":
                    proposed.add(commit)
                elif pull.merged_at is None:
                    declined.add(commit)
        except GitHubError as exc:
            raise translate(exc, f"the pull requests of {branch}") from None
        return declined - proposed

    def close(self, branch: str, *, expected: str, reason: str) -> None:
        self._check_branch(branch)
        self._branch_pulls.pop(branch, None)  # what was listed of it is no longer so
        self.client.fresh()
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
            raise translate(exc, f"closing {branch}") from None
        self.writes += 1

    def bot_login(self) -> str:
        """The login the bot writes as: `<app slug>[bot]` for an App, the token's user."""
        if self._login is None:
            self._login = bot_login(self.client)
        return self._login

    def known_login(self) -> str | None:
        """The bot's login, or None when GitHub will not tell this token who it is: GET /user
        answers installation tokens and Actions' GITHUB_TOKEN 403 "Resource not accessible by
        integration" (actions/create-github-app-token#258); asked once per process."""
        if self._login is None and not self._login_refused:
            try:
                return self.bot_login()
            except PermissionRefused:
                self._login_refused = True
        return self._login

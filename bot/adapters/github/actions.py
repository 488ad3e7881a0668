"""The Actions API client (docs/design.md §1.2) that the `github-actions` build kind
(loop/builders/github_actions.py) drives: `workflow_dispatch` of the downstream's wheel
workflow with the full commit, the run followed to its end, its artifacts downloaded.

github3.py 4.0.1 models no Actions API, so these calls go through its own authenticated
session, beside the GitHub platform. As GitHub really behaves:
- The dispatch asks `return_run_details` for the run id (api.github.com and GHE.com
  describe it: 200 with `workflow_run_id`, else 204). GitHub Enterprise Server's REST
  descriptions (3.17–3.19) lack the key and answer 204 only; what a server that does not
  know it answers is not documented: a 204 is taken as no id, and a 422 to a dispatch
  carrying the key (whatever its message) is sent once more without it, the key left out
  from then on when that is accepted.
- Without the id, the run is found by its title carrying the commit (a `run-name` that
  uses the input), else as the oldest run of the workflow dispatched by the bot since the
  dispatch was noted and not yet claimed by another build — so a pass killed after its
  dispatch follows that run instead of dispatching twice. Who the bot is comes from GET
  /app for an App, WHEELPIN_GITHUB_LOGIN or GET /user for a token; GET /user answers
  installation tokens and GITHUB_TOKEN 403, and then runs are found by title only. A
  dispatch that landed is never forgotten because its run could not be looked for.
- A configured workflow GitHub does not know (404), or a dispatch it refuses (422:
  "Unexpected inputs provided", "No ref found", no `workflow_dispatch` trigger, more than
  25 inputs) is a config error carrying GitHub's message, never retried.
- A run's artifacts are listed page after page (30 a page unless asked), at most
  MAX_ARTIFACTS of them: a matrix build uploads one per job.
- Artifacts can be missing from the listing for a while after the run completed: that
  is transient for ARTIFACT_GRACE after the run's end, a failed build after.
- Past the repository's retention period (90 days unless set) GitHub still lists a run's
  artifacts, `expired: true`, and answers their download 410: a run whose wheels were in
  artifacts that expired (all of them, or the others hold none: upload-artifact's
  `retention-days` may keep a log longer) is said so, with the date, never taken for a
  build that left no wheel.
- An artifact uploaded with `archive: false` (actions/upload-artifact v7) downloads as
  the file itself: a `.whl` is a zip too, and is taken whole under the artifact's name.
The artifact download answers with a redirect to storage, which `requests` follows
without the token.
"""

from __future__ import annotations

import datetime
import itertools
import re
import shutil
import tempfile
import time
import zipfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ...core.errors import ConfigError, InputError, TransientError, WheelpinError
from .platform import GitHubPlatform
from .sansio import refusal
from .transport import answer_of

MAX_ARTIFACT = 8 << 30
MAX_ARTIFACTS = 1000  # artifacts of one run read at most: ten pages of 100
ARTIFACT_GRACE = 300.0  # seconds after a run's end that its artifacts may still be unlisted
CLOCK_MARGIN = 120.0  # seconds: the bot's clock and GitHub's may differ
WHEEL_FILE = re.compile(r"^[^/]+\.dist-info/WHEEL$")


@dataclass(frozen=True)
class RunSeen:
    id: int
    status: str  # queued | in_progress | completed | …
    conclusion: str | None
    url: str
    ended_at: float | None = None  # when it completed (its last update), by GitHub's clock
    title: str = ""  # `display_title`: a dispatched run's `run-name`, which may carry its inputs
    attempt: int | None = None  # `run_attempt`: 1, and more for each re-run (None: not said)

    @property
    def done(self) -> bool:
        return self.status == "completed"

    @property
    def invocation(self) -> str | None:
        """This attempt of the run, as SLSA provenance's `runDetails.metadata.invocationId`
        names a GitHub Actions run: the run's URL + "/attempts/" + `run_attempt` (the GitHub
        Actions workflow build type, slsa-framework.github.io/github-actions-buildtypes/workflow/v1,
        "Metadata"; the certificate of an attestation names its run the same way)."""
        if self.attempt is None or not self.url.startswith(("https://", "http://")):
            return None
        return f"{self.url}/attempts/{self.attempt}"


class ActionsClient:
    def __init__(self, platform: GitHubPlatform, *, artifact_grace: float = ARTIFACT_GRACE) -> None:
        self.platform = platform
        self.client = platform.client
        self.session = platform.client.session
        self.base = platform.url()  # https://api.github.com/repos/OWNER/NAME
        self.run_details = True  # False once a server refused a dispatch with `return_run_details` only
        self.artifact_grace = artifact_grace

    def _answer(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        return self.client.call(method, self.base + path, what, **kwargs).data

    def dispatch(
        self,
        workflow: str,
        *,
        ref: str,
        inputs: dict[str, str],
        commit: str,
        since: float | None = None,
        claimed: Collection[int] = (),
    ) -> int | None:
        """Start a run; its id, or None when the server does not say and it is not listed
        yet (then `find_run` with the same `since`)."""
        path = f"/actions/workflows/{workflow}/dispatches"
        body = {"ref": ref, "inputs": inputs}
        try:
            answer = self._dispatch(path, workflow, {**body, "return_run_details": True} if self.run_details else body)
        except _NotPermitted:
            answer = self._dispatch(path, workflow, body)  # a ConfigError if refused without the key too
            self.run_details = False  # a server whose description of the endpoint has no such key (GHES)
        if isinstance(answer, dict) and answer.get("workflow_run_id"):
            return int(answer["workflow_run_id"])
        try:
            found = self.find_run(workflow, commit, since=since, claimed=claimed)
        except TransientError:
            raise
        except WheelpinError:  # the dispatch landed: its run is looked for again, never dispatched twice
            return None
        return found.id if found else None

    def _dispatch(self, path: str, workflow: str, body: dict[str, Any]) -> Any:
        self.client.fresh()
        answer = self.session.post(self.base + path, json=body)
        if answer.status_code < 400:
            return answer.json() if answer.content else None
        said = answer_of(answer)
        if answer.status_code == 422 and "return_run_details" in body:  # GitHub words no refusal of the key
            raise _NotPermitted(said.message)
        if answer.status_code == 404:
            raise ConfigError(
                f"GitHub knows no workflow {workflow} in {self.platform.repo.full_name} (404): "
                "check build.workflow (a file name under .github/workflows/ on the base branch)"
            )
        if answer.status_code == 422:  # the workflow's inputs, trigger or ref do not match the config
            raise ConfigError(f"GitHub refused to dispatch {workflow}: {said.message or 'no reason given'}")
        raise refusal(said, f"dispatching {workflow}")

    def find_run(
        self, workflow: str, commit: str, *, since: float | None = None, claimed: Collection[int] = ()
    ) -> RunSeen | None:
        """The newest run of `workflow` whose title or name carries the full commit; else,
        when a dispatch was noted at `since`, the oldest unclaimed run the bot dispatched
        after it (the titles of a workflow without `run-name` are all the same), when the
        bot's login is known (GET /user refuses installation tokens: then by title only)."""
        params = {"event": "workflow_dispatch", "per_page": "100"}
        if since is not None:
            stamp = datetime.datetime.fromtimestamp(since - CLOCK_MARGIN, datetime.UTC)
            params["created"] = ">=" + stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
        body = self._answer(
            "GET", f"/actions/workflows/{workflow}/runs", f"listing the runs of {workflow}", params=params
        )
        runs = [run for run in body.get("workflow_runs", []) if isinstance(run, dict)]
        for run in runs:
            if commit in f"{run.get('display_title', '')} {run.get('name', '')}":
                return _seen(run)
        bot = self.platform.known_login() if since is not None else None
        if bot is None:  # a token GitHub will not tell who it is (GET /user: 403): by title only
            return None
        bot = bot.lower()
        mine = [
            run
            for run in runs
            if int(run["id"]) not in claimed
            and str((run.get("triggering_actor") or run.get("actor") or {}).get("login", "")).lower() == bot
        ]
        return _seen(min(mine, key=lambda run: int(run["id"]))) if mine else None

    def run(self, run_id: int) -> RunSeen:
        """Where run `run_id` stands; one GitHub no longer has (deleted: 404) has ended, badly."""
        self.client.fresh()
        answer = self.session.get(f"{self.base}/actions/runs/{run_id}")
        if answer.status_code == 404:
            return RunSeen(run_id, "completed", "deleted", f"run {run_id}")
        if answer.status_code >= 400:
            raise refusal(answer_of(answer), f"reading run {run_id}")
        return _seen(answer.json())

    def jobs(self, run_id: int) -> list[tuple[str, str | None]]:
        """The jobs of run `run_id`: name and conclusion (None while it runs). docs "REST API
        endpoints for workflow jobs", list jobs for a workflow run (latest attempt)."""
        self.client.fresh()
        listed = self.client.paginate(
            f"{self.base}/actions/runs/{run_id}/jobs", f"listing the jobs of run {run_id}", key="jobs"
        )
        return [(str(job.get("name") or ""), job.get("conclusion")) for job in listed if isinstance(job, dict)]

    def artifacts(self, run_id: int) -> list[Any]:
        """Every artifact of run `run_id`, page after page: GitHub lists 30 a page unless asked
        (100 at most), so a matrix build's 31st wheel is on the second page (docs "List
        workflow run artifacts"). A run with more than MAX_ARTIFACTS is refused, not read on."""
        listed = list(
            itertools.islice(
                self.client.paginate(
                    f"{self.base}/actions/runs/{run_id}/artifacts",
                    f"listing the artifacts of run {run_id}",
                    key="artifacts",
                ),
                MAX_ARTIFACTS + 1,
            )
        )
        if len(listed) > MAX_ARTIFACTS:
            raise InputError(f"run {run_id} has more than {MAX_ARTIFACTS} artifacts: too many to take as one build")
        return listed

    def expired(self, run_id: int, *, every: bool = True, listed: list[Any] | None = None) -> ArtifactsExpired | None:
        """Why run `run_id`'s artifacts can no longer be taken: all of them expired (with
        `every=False`: any of them, which may have held its wheels), or None. `listed`: its
        artifacts as `artifacts` listed them already this pass (None: listed now)."""
        self.client.fresh()
        listed = [a for a in (self.artifacts(run_id) if listed is None else listed) if isinstance(a, dict)]
        gone = [a for a in listed if a.get("expired")]
        return _expired(run_id, gone) if gone and (len(gone) == len(listed) or not every) else None

    def download(
        self, run_id: int, folder: Path, *, ended_at: float | None = None, listed: list[Any] | None = None
    ) -> list[Path]:
        """The wheels of the run's artifacts, written into `folder`. No artifact listed yet,
        within `artifact_grace` of the run's end, is a TransientError (GitHub lists them
        late); after it, an empty list. Wheels that can only have been in artifacts that
        expired (all of them, or the others hold none) are ArtifactsExpired. `listed`: as
        `expired` takes it."""
        listed = [a for a in (self.artifacts(run_id) if listed is None else listed) if isinstance(a, dict)]
        gone = [a for a in listed if a.get("expired")]
        artifacts = [a for a in listed if not a.get("expired")]
        if gone and not artifacts:
            raise _expired(run_id, gone)
        if not artifacts and ended_at is not None and time.time() - ended_at < self.artifact_grace:
            raise TransientError(f"run {run_id} has ended, but GitHub lists no artifact of it yet", retry_after=15.0)
        folder.mkdir(parents=True, exist_ok=True)
        wheels: list[Path] = []
        for artifact in artifacts:
            if int(artifact.get("size_in_bytes") or 0) > MAX_ARTIFACT:
                raise InputError(f"artifact {artifact.get('name')} of run {run_id} is over {MAX_ARTIFACT} bytes")
            self.client.fresh()
            answer = self.session.get(artifact["archive_download_url"], allow_redirects=True, stream=True)
            if answer.status_code != 200:
                raise refusal(answer_of(answer), f"downloading artifact {artifact.get('id')} of run {run_id}")
            with tempfile.TemporaryFile() as spool:  # a zip is read from its end: spool, not memory
                written = 0
                for chunk in answer.iter_content(1 << 20):
                    written += len(chunk)
                    if written > MAX_ARTIFACT:
                        raise InputError(
                            f"artifact {artifact.get('name')} of run {run_id} is over {MAX_ARTIFACT} bytes"
                        )
                    spool.write(chunk)
                wheels += _unpack(spool, run_id, artifact, folder)
        if gone and not wheels:  # a log kept longer than the wheels (upload-artifact `retention-days`)
            raise _expired(run_id, gone)
        return sorted(wheels)


class _NotPermitted(WheelpinError):
    pass


class ArtifactsExpired(InputError):
    """The artifacts that held a run's wheels are past their retention: nothing to fetch."""


def _expired(run_id: int, gone: list[dict[str, Any]]) -> ArtifactsExpired:
    """What is said of a run's wheels lost with its expired artifacts `gone`."""
    latest = max(str(artifact.get("expires_at") or "") for artifact in gone)  # ISO 8601: sorts by time
    return ArtifactsExpired(
        f"run {run_id}'s artifacts expired on {latest[:10] or 'a date GitHub did not give'} "
        "(GitHub keeps them for the repository's artifact retention period)"
    )


def _unpack(spool: Any, run_id: int, artifact: dict[str, Any], folder: Path) -> list[Path]:
    """The wheels of one downloaded artifact: the members of a zip of wheels, or the
    artifact itself when it is one wheel uploaded unarchived."""
    name = PurePosixPath(str(artifact.get("name") or "")).name
    try:
        with zipfile.ZipFile(spool) as archive:
            members = archive.infolist()
            if name.endswith(".whl") and any(WHEEL_FILE.match(info.filename) for info in members):
                spool.seek(0)
                target = folder / name
                with target.open("wb") as sink:
                    shutil.copyfileobj(spool, sink, 1 << 20)
                return [target]
            wheels = []
            for info in members:
                member = PurePosixPath(info.filename).name  # never a path from the archive
                if member.endswith(".whl") and not info.is_dir():
                    target = folder / member
                    with archive.open(info) as source, target.open("wb") as sink:
                        shutil.copyfileobj(source, sink, 1 << 20)
                    wheels.append(target)
            return wheels
    except zipfile.BadZipFile:
        raise InputError(f"artifact {artifact.get('name')} of run {run_id} is not a zip") from None


def _seen(run: dict[str, Any]) -> RunSeen:
    ended = None
    if run.get("status") == "completed" and run.get("updated_at"):
        try:
            ended = datetime.datetime.fromisoformat(str(run["updated_at"]).replace("Z", "+00:00")).timestamp()
        except ValueError:
            ended = None
    return RunSeen(
        int(run["id"]),
        str(run.get("status")),
        run.get("conclusion"),
        str(run.get("html_url", "")),
        ended,
        str(run.get("display_title") or ""),
        attempt if isinstance(attempt := run.get("run_attempt"), int) and attempt > 0 else None,
    )

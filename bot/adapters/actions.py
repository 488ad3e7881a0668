"""The Actions builder (DESIGN.md §1.2): `workflow_dispatch` of the downstream's wheel
workflow with the full commit, followed to its end, its artifact taken as the build.

github3.py 4.0.1 models no Actions API, so these calls go through its own authenticated
session, beside the GitHub platform. The dispatch asks `return_run_details` for the run
id; a server that answers 204 only (GitHub Enterprise Server) is searched for the run
whose title carries the commit. The artifact download answers with a redirect to
storage, which `requests` follows without the token.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.errors import InputError, TransientError
from .github import GitHubPlatform

MAX_ARTIFACT = 8 << 30


@dataclass(frozen=True)
class RunSeen:
    id: int
    status: str  # queued | in_progress | completed | …
    conclusion: str | None
    url: str

    @property
    def done(self) -> bool:
        return self.status == "completed"


class ActionsBuilder:
    def __init__(self, platform: GitHubPlatform) -> None:
        self.platform = platform
        self.session = platform.gh.session
        self.base = platform.repo._api  # https://api.github.com/repos/OWNER/NAME

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        self.platform._fresh()
        answer = self.session.request(method, self.base + path, **kwargs)
        if answer.status_code >= 400:
            raise TransientError(f"GitHub Actions: {method} {path} answered {answer.status_code}")
        return answer.json() if answer.content else None

    def dispatch(self, workflow: str, *, ref: str, inputs: dict[str, str], commit: str) -> int | None:
        """Start a run; its id, or None when the server does not say (then `find_run`)."""
        body = self._json("POST", f"/actions/workflows/{workflow}/dispatches",
                          json={"ref": ref, "inputs": inputs, "return_run_details": True})
        if isinstance(body, dict) and body.get("workflow_run_id"):
            return int(body["workflow_run_id"])
        found = self.find_run(workflow, commit)
        return found.id if found else None

    def find_run(self, workflow: str, commit: str) -> RunSeen | None:
        """The newest run of `workflow` whose title or name carries the full commit."""
        body = self._json("GET", f"/actions/workflows/{workflow}/runs", params={"event": "workflow_dispatch"})
        for run in body.get("workflow_runs", []):
            if commit in f"{run.get('display_title', '')} {run.get('name', '')}":
                return _seen(run)
        return None

    def run(self, run_id: int) -> RunSeen:
        return _seen(self._json("GET", f"/actions/runs/{run_id}"))

    def download(self, run_id: int, folder: Path) -> list[Path]:
        """The wheels of the run's artifacts, written into `folder`."""
        listed = self._json("GET", f"/actions/runs/{run_id}/artifacts")
        folder.mkdir(parents=True, exist_ok=True)
        wheels: list[Path] = []
        for artifact in listed.get("artifacts", []):
            if artifact.get("expired"):
                continue
            if int(artifact.get("size_in_bytes") or 0) > MAX_ARTIFACT:
                raise InputError(f"artifact {artifact.get('name')} of run {run_id} is over {MAX_ARTIFACT} bytes")
            self.platform._fresh()
            answer = self.session.get(artifact["archive_download_url"], allow_redirects=True, stream=True)
            if answer.status_code != 200:
                raise TransientError(f"GitHub Actions: artifact {artifact.get('id')} answered {answer.status_code}")
            with tempfile.TemporaryFile() as spool:  # a zip is read from its end: spool, not memory
                for chunk in answer.iter_content(1 << 20):
                    spool.write(chunk)
                self._unpack(spool, run_id, artifact, folder, wheels)
        return sorted(wheels)

    def _unpack(self, spool: Any, run_id: int, artifact: dict[str, Any], folder: Path,
                wheels: list[Path]) -> None:
        try:
            with zipfile.ZipFile(spool) as archive:
                for info in archive.infolist():
                    name = PurePosixPath(info.filename).name  # never a path from the archive
                    if name.endswith(".whl") and not info.is_dir():
                        target = folder / name
                        with archive.open(info) as source, target.open("wb") as sink:
                            shutil.copyfileobj(source, sink, 1 << 20)
                        wheels.append(target)
        except zipfile.BadZipFile:
            raise InputError(f"artifact {artifact.get('name')} of run {run_id} is not a zip") from None


def _seen(run: dict[str, Any]) -> RunSeen:
    return RunSeen(int(run["id"]), str(run.get("status")), run.get("conclusion"), str(run.get("html_url", "")))

"""`wheelpin reconcile`: one pass (or a loop of passes) over a repository's components."""

from __future__ import annotations

import time
from pathlib import Path

from ..adapters.actions import ActionsBuilder
from ..adapters.github import AppCredentials, GitHubPlatform
from ..adapters.localplatform import LocalPlatform
from ..app.reconciler import PassResult, Reconciler
from ..app.settings import Settings
from ..app.wiring import Registries
from ..core.config import Author, interval_minutes
from ..core.configfile import CANDIDATES, load_config_text
from ..core.errors import UsageError
from .output import emit_json, emit_text
from .repo import load


def pass_text(result: PassResult) -> str:
    lines = []
    for component in result.components:
        head = f" at {component.head[:8]}" if component.head else ""
        lines.append(f"{component.name}: {component.status}{head}")
        for action in component.actions:
            lines.append(f"  {'would ' if result.dry_run else ''}{action.kind} {action.detail}".rstrip()
                         + (f" (then {', '.join(action.then)})" if action.then else ""))
        lines += [f"  - {message}" for message in component.messages]
    return "\n".join(lines)


def make_reconciler(*, repo: Path, config: Path | None, settings: Settings, retry_failed: bool) -> Reconciler:
    loaded = load(config=config, repo=repo)
    defaults = loaded.config.defaults
    platform = LocalPlatform(repo, author=defaults.author, branch_prefix=defaults.branch_prefix,
                             signoff=defaults.signoff)
    return Reconciler(loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir,
                      retry_failed=retry_failed, crash_after=settings.crash_after_actions)


def github_platform(settings: Settings, repository: str, author: Author | None = None) -> GitHubPlatform:
    owner, _, name = repository.partition("/")
    if not owner or not name:
        raise UsageError(f"--github-repo {repository!r}: give OWNER/NAME")
    app = None
    if settings.github_app_id is not None:
        if settings.github_private_key_file is None or settings.github_installation_id is None:
            raise UsageError("a GitHub App needs WHEELPIN_GITHUB_PRIVATE_KEY_FILE and WHEELPIN_GITHUB_INSTALLATION_ID")
        try:
            key = settings.github_private_key_file.read_bytes()
        except OSError as exc:
            raise UsageError(f"{settings.github_private_key_file}: cannot read the App's private key ({exc.strerror})") from None
        app = AppCredentials(settings.github_app_id, key, settings.github_installation_id)
    token = settings.github_token.get_secret_value() if settings.github_token else None
    if app is None and token is None:
        raise UsageError("--platform github needs WHEELPIN_GITHUB_TOKEN, or a GitHub App (WHEELPIN_GITHUB_APP_ID …)")
    return GitHubPlatform(api_url=settings.github_api_url, owner=owner, repo=name, token=None if app else token,
                          app=app, author=author or Author())


def github_reconciler(*, repository: str, settings: Settings, retry_failed: bool) -> Reconciler:
    """The repository's own config, read from its default branch on GitHub."""
    probe = github_platform(settings, repository)
    base_name = str(probe.repo.default_branch)
    base = probe.resolve(f"refs/heads/{base_name}")
    if base is None:
        raise UsageError(f"{repository}: no branch {base_name}")
    for candidate in CANDIDATES:
        text = probe.read_file(base, candidate)
        if text is not None:
            break
    else:
        raise UsageError(f"{repository}: no {' or '.join(CANDIDATES)} on {base_name}")
    loaded = load_config_text(text, path=Path(f"{repository}/{candidate}"), root=Path.cwd(),
                              exists=lambda file: probe.read_file(base, file) is not None)
    defaults = loaded.config.defaults
    platform = github_platform(settings, repository, defaults.author)
    platform.prefix, platform.signoff = defaults.branch_prefix, defaults.signoff
    return Reconciler(loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir,
                      retry_failed=retry_failed, crash_after=settings.crash_after_actions,
                      actions=ActionsBuilder(platform), local_builds=False)


def reconcile_command(*, repo: Path | None, config: Path | None, platform: str, once: bool,
                      dry_run: bool, as_json: bool, retry_failed: bool, component: str | None,
                      settings: Settings, github_repo: str | None = None) -> int:
    if platform == "github":
        if github_repo is None:
            raise UsageError("--platform github needs --github-repo OWNER/NAME")
        reconciler = github_reconciler(repository=github_repo, settings=settings, retry_failed=retry_failed)
    else:
        folder = repo or Path.cwd()
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such repository folder")
        reconciler = make_reconciler(repo=folder, config=config, settings=settings, retry_failed=retry_failed)
    if component is not None and reconciler.config.get(component) is None:
        raise UsageError(f"{reconciler.loaded.path}: no component {component!r}")
    interval = interval_minutes(reconciler.config.defaults.schedule) or 30
    while True:
        result = reconciler.run(dry_run=dry_run, only=component)
        if as_json:
            emit_json(result.to_json(), compact=not (once or dry_run))
        else:
            emit_text(pass_text(result))
        if once or dry_run:
            return 1 if result.failed else 0
        time.sleep(interval * 60)

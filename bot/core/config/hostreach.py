"""Which keys of a config would reach the bot's own host, refused in a config read from
GitHub (docs/design.md §3, "A config read from GitHub").

A tenant writes the config on GitHub; the bot runs on the operator's host. A host path or
`file://` in `upstream.repo` would read a private repository there (its head then lands in
the tenant's workflow inputs and dashboard), and `oci:` in `image.repository` would write
there. So a config read from GitHub names only remote git URLs and registry references.
The operator may let absolute host paths through (WHEELPIN_ALLOW_HOST_PATHS, for a
single-tenant deployment and the tests); a relative one never passes, since a config read
from GitHub has no folder on the host to start from. The local platform is not checked
here: there the config is the operator's own.

`consumer.image` is parsed as a registry reference only, and the pin, constraints and
consumer files are read from the repository itself, so none of them reach the host.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

# git's transports that speak to another machine (git-clone(1), "GIT URLS"); file:// and
# the `ext::`/`fd::` remote helpers stay on this one.
_REMOTE_SCHEMES = frozenset({"https", "http", "ssh", "git"})
# scp-like `[user@]host:path`, which git reads as ssh when no slash comes before the first
# colon (git-clone(1), "GIT URLS"), the user optional; a leading '-' would be an option to
# ssh, so a name starts alphanumeric. `transport::address` (a remote helper, `ext::` runs a
# command here) and `scheme://` URLs are not scp-like: a second colon never follows the host.
_SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!:)[^\x00-\x1f]+$")

_REPO_SENTENCE = (
    "a config read from GitHub names a remote git URL (https://…, ssh://… or [user@]host:path), "
    "never a path or file:// on wheelpin's host"
)
_IMAGE_SENTENCE = (
    "a config read from GitHub names a registry repository (host/path), never an oci: folder on wheelpin's host"
)
_RELATIVE_SENTENCE = (
    "a config read from GitHub has no folder on wheelpin's host to start from: "
    "give an absolute path (host paths are allowed by WHEELPIN_ALLOW_HOST_PATHS)"
)


def is_remote_git_url(url: str) -> bool:
    """Whether git would fetch `url` from another machine."""
    if "://" not in url and _SCP_LIKE.match(url) and "/" not in url.split(":", 1)[0]:
        return True
    parts = urlsplit(url)
    try:
        host = parts.hostname
    except ValueError:  # a malformed port or bracket
        return False
    return parts.scheme.lower() in _REMOTE_SCHEMES and bool(host) and not (host or "").startswith("-")


def host_path(text: str) -> str | None:
    """The path on this host a git URL `text` names (a path or file://), None for a URL git
    reaches another machine by (or a remote helper such as ext::)."""
    if is_remote_git_url(text):
        return None
    if text.lower().startswith("file://"):
        return urlsplit(text).path
    if "://" in text or "::" in text:  # another scheme, or a remote helper such as ext::
        return None
    return text


Located = Callable[[Sequence[str | int], str], str]


def host_problems(raw: dict[str, Any], located: Located, *, host_paths: bool) -> list[str]:
    """The keys of a config read from GitHub that reach the host, one sentence each;
    `host_paths`: the operator allows absolute host paths (never relative ones)."""
    problems: list[str] = []
    listed = raw.get("component")
    for index, component in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(component, dict):
            continue
        upstream, image = component.get("upstream"), component.get("image")
        repo = upstream.get("repo") if isinstance(upstream, dict) else None
        if isinstance(repo, str) and repo and not is_remote_git_url(repo):
            problem = _allowed_path(host_path(repo), host_paths, _REPO_SENTENCE)
            if problem:
                problems.append(located(("component", index, "upstream", "repo"), problem))
        repository = image.get("repository") if isinstance(image, dict) else None
        if isinstance(repository, str) and repository.startswith("oci:"):
            problem = _allowed_path(repository[4:], host_paths, _IMAGE_SENTENCE)
            if problem:
                problems.append(located(("component", index, "image", "repository"), problem))
    return problems


def _allowed_path(path: str | None, host_paths: bool, refusal: str) -> str | None:
    if not host_paths or path is None:
        return refusal
    return None if PurePosixPath(path).is_absolute() else _RELATIVE_SENTENCE

"""Image references, by the grammar of the distribution project's `reference` package.

`[host[:port]/]path[:tag][@algorithm:hex]`. A first path part holding `.` or `:`, or
`localhost`, is a registry host; with none the registry is Docker Hub, whose names are
normalised (`rocm/atom-dev` = `docker.io/rocm/atom-dev` = `index.docker.io/rocm/atom-dev`,
`ubuntu` = `docker.io/library/ubuntu`). Pins compare references normalised but are
written back the way they were spelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = (
    r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
    r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[0-9a-fA-F:.]+\])"
)
_DOMAIN = re.compile(rf"^{_HOST}(?::[0-9]+)?$")
_PATH = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")
SHA256_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
DOCKER_HUB = "docker.io"
_HUB_ALIASES = {"docker.io", "index.docker.io", "registry-1.docker.io"}


def short_digest(digest: str) -> str:
    """The one short form a digest is written in where the whole would not be read: its
    algorithm and first 12 hex digits (`sha256:4e2f9cc2dedf`), as `docker images` shows
    an image ID (its first 12 hex digits)."""
    algorithm, _, encoded = digest.partition(":")
    return f"{algorithm}:{encoded[:12]}" if encoded else digest[:12]


class ImageRefError(ValueError):
    """The text is not an image reference; the message says what is wrong."""


def _check_digest(text: str, digest: str) -> None:
    if not _DIGEST.match(digest):
        raise ImageRefError(f"{text!r} has a malformed digest {digest!r}")
    if digest.startswith("sha256:") and not SHA256_DIGEST.match(digest):
        raise ImageRefError(f"{text!r}: a sha256 digest is 64 lowercase hex digits")


@dataclass(frozen=True)
class ImageRef:
    """A parsed reference; `registry` is None when the text named none (Docker Hub)."""

    registry: str | None
    path: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        if not text or text != text.strip():
            raise ImageRefError(f"{text!r} is not an image reference (empty or padded)")
        rest, digest = text, None
        if "@" in rest:
            rest, digest = rest.split("@", 1)
            _check_digest(text, digest)
        tag = None
        slash = rest.rfind("/")
        colon = rest.rfind(":")
        if colon > slash:
            rest, tag = rest[:colon], rest[colon + 1 :]
            if not TAG.match(tag):
                raise ImageRefError(f"{text!r} has an invalid tag {tag!r}")
        registry = None
        first, sep, remainder = rest.partition("/")
        if sep and ("." in first or ":" in first or first == "localhost"):
            if not _DOMAIN.match(first):
                raise ImageRefError(f"{text!r} has an invalid registry host {first!r}")
            registry, rest = first, remainder
        if not _PATH.match(rest):
            raise ImageRefError(
                f"{text!r} has an invalid repository path {rest!r} (lowercase letters, digits, and . _ - separators)"
            )
        if len(rest) + len(registry or "") > 255:
            raise ImageRefError(f"{text!r}: a repository name is at most 255 characters")
        return cls(registry, rest, tag, digest)

    @property
    def repository(self) -> str:
        """The repository as written: registry (if any) and path."""
        return f"{self.registry}/{self.path}" if self.registry else self.path

    @property
    def normalized_repository(self) -> str:
        """`docker.io/library/ubuntu` for `ubuntu`; registry hosts lowercased."""
        registry = (self.registry or DOCKER_HUB).lower()
        if registry in _HUB_ALIASES:
            registry = DOCKER_HUB
            path = self.path if "/" in self.path else f"library/{self.path}"
            return f"{registry}/{path}"
        return f"{registry}/{self.path}"

    def same_repository(self, other: ImageRef) -> bool:
        return self.normalized_repository == other.normalized_repository

    @property
    def pinned(self) -> bool:
        return self.digest is not None and SHA256_DIGEST.match(self.digest) is not None

    def with_(self, *, tag: str | None, digest: str | None) -> ImageRef:
        return replace(self, tag=tag, digest=digest)

    def short(self) -> str:
        """The reference as a reader scans it in a sentence: the repository's last path part,
        the tag and the digest in its short form (`demo:v1@sha256:4e2f9cc2dedf`)."""
        text = self.path.rsplit("/", 1)[-1]
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{short_digest(self.digest)}"
        return text

    def __str__(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_repository(text: str) -> ImageRef:
    """A repository with neither tag nor digest (`host/path`)."""
    ref = ImageRef.parse(text)
    if ref.tag or ref.digest:
        raise ImageRefError(f"{text!r} is a repository: it must carry no tag and no digest")
    return ref


def parse_pinned(text: str) -> ImageRef:
    """A reference that carries `@sha256:` + 64 hex: a tag can move, a digest cannot."""
    ref = ImageRef.parse(text)
    if not ref.pinned:
        raise ImageRefError(f"{text!r} is not pinned by digest: give REF@sha256:<64 hex> (a tag can move)")
    return ref


@dataclass(frozen=True)
class LayoutTarget:
    """`oci:FOLDER:tag` (or `oci:FOLDER@sha256:…`): an OCI image-layout folder."""

    folder: str
    tag: str | None = None
    digest: str | None = None

    def __str__(self) -> str:
        text = f"oci:{self.folder}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_target(text: str) -> ImageRef | LayoutTarget:
    """A registry reference, or an OCI layout folder reference."""
    if not text.startswith("oci:"):
        return ImageRef.parse(text)
    rest, digest = text[4:], None
    if "@" in rest:
        rest, digest = rest.rsplit("@", 1)
        _check_digest(text, digest)
    folder, tag = rest, None
    if ":" in rest:
        folder, tag = rest.rsplit(":", 1)
        if not TAG.match(tag):
            raise ImageRefError(f"{text!r} has an invalid tag {tag!r}")
    if not folder:
        raise ImageRefError(f"{text!r} names no folder (oci:FOLDER:tag)")
    return LayoutTarget(folder, tag, digest)

"""Where wheel images live: a repository of a registry, or an OCI image-layout folder.

Both stand behind `ImageStore`, so publishing, the tag guard and reading images back are
written once. Content is addressed by digest and never changes, so manifests and
configs read by digest are kept in a cache folder and never fetched twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..core.errors import InputError, NotFound, RefusedError, TransientError, VerificationError
from ..core.image.oci import INDEX_TYPE, canonical_json
from ..core.image.reach import Reach
from ..core.image.reference import SHA256_DIGEST, ImageRef, LayoutTarget
from . import cachebound
from .registrywire import Traffic

if TYPE_CHECKING:  # requests loads only when a registry is spoken to
    from .registry import RegistryClient

REF_NAME = "org.opencontainers.image.ref.name"


def tag_taken(store: str, tag: str, existing: str, ours: str) -> RefusedError:
    """The refusal when a tag already names other content: tags wheelpin writes never move."""
    return RefusedError(
        f"{store}:{tag} already holds {existing}, not {ours}: wheelpin never overwrites a tag with other content "
        "(delete that tag from the registry if what it holds is stale, or publish under another tag)"
    )


class ImageStore(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def traffic(self) -> Traffic: ...
    def tag_digest(self, tag: str) -> str | None: ...
    def list_tags(self) -> list[str]: ...
    def has_blob(self, digest: str) -> bool: ...
    def put_blob(
        self, digest: str, size: int, chunks: Callable[[], Iterable[bytes]], *, mount_from: str | None = None
    ) -> int: ...
    def put_manifest(self, tag: str, data: bytes, media_type: str) -> str: ...
    def get_manifest(self, reference: str) -> bytes: ...
    def get_blob(self, digest: str) -> Iterator[bytes]: ...
    @property
    def cache(self) -> DigestCache: ...
    def still_holds(self, digest: str) -> bool:
        """False when the store no longer holds the manifest `digest` that the digest cache
        still does (a registry deletes, and garbage-collects); True otherwise, asking
        nothing when reading the manifest asks the store anyway."""

    # documents attached to an image (adapters/referrers.py says the OCI 1.1 shapes)
    def put_artifact(self, data: bytes, media_type: str, subject: str) -> bool:
        """Push a manifest by its digest, with no tag; True when the store lists it among
        `subject`'s referrers by itself (a registry's `OCI-Subject` answer)."""

    def referrers_index(self, digest: str) -> bytes | None:
        """The referrers API's index of what names `digest` as its subject; None when the
        store has no referrers API (the fallback tag is then read)."""

    def move_tag(self, tag: str, data: bytes, media_type: str, *, was: str | None) -> str:
        """Name `data` by `tag`, a tag that moves by design (the referrers fallback tag),
        which named `was` when it was read."""

    def delete(self, reference: str) -> bool:
        """Delete a tag, or a digest with every tag naming it; False when the store cannot
        delete that way (`RegistryClient.delete_manifest`)."""


class DigestCache:
    """Small content-addressed blobs (manifests, configs) on disk."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        # its size bound, when the process has one for it (adapters/cachebound.py)
        self.bounded = cachebound.bounded_files(folder) if folder is not None else None

    def _path(self, digest: str) -> Path | None:
        if self.folder is None or not SHA256_DIGEST.match(digest):
            return None
        return self.folder / "sha256" / digest.split(":", 1)[1]

    def get(self, digest: str) -> bytes | None:
        path = self._path(digest)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:  # not kept, or trimmed meanwhile: a miss
            return None
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            return None
        if self.bounded is not None:
            self.bounded.read(path)
        return data

    def put(self, digest: str, data: bytes) -> None:
        self._write(self._path(digest), data)

    def holds(self, digest: str) -> bool:
        """Whether `digest`'s bytes are kept (a kept file that does not match is a miss later)."""
        path = self._path(digest)
        return path is not None and path.is_file()

    def _derived_path(self, kind: str, digest: str) -> Path | None:
        if self.folder is None or not SHA256_DIGEST.match(digest):
            return None
        return self.folder / kind / digest.split(":", 1)[1]

    def get_derived(self, kind: str, digest: str) -> bytes | None:
        """What wheelpin worked out from the content `digest` names (which never changes),
        under `kind`: a name that carries the format's version, so an older wheelpin's
        results are read again, never trusted."""
        path = self._derived_path(kind, digest)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:  # not kept, or trimmed meanwhile: a miss
            return None
        if self.bounded is not None:
            self.bounded.read(path)
        return data

    def put_derived(self, kind: str, digest: str, data: bytes) -> None:
        self._write(self._derived_path(kind, digest), data)

    def _write(self, path: Path | None, data: bytes) -> None:
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, data)
        except OSError:
            return  # a cache that cannot be written costs a fetch, never a wrong result
        if self.bounded is not None:
            self.bounded.wrote(path)


def _atomic_write(path: Path, data: bytes) -> None:
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)
    os.replace(name, path)


class RegistryRepository:
    """One repository of a registry. Opened with `connecting`, its client (and the HTTP
    stack behind it) is made at its first request: a pass that finds everything it reads
    in the digest cache never loads it."""

    def __init__(self, client: RegistryClient, repository: str, *, cache: DigestCache | None = None) -> None:
        self._client: RegistryClient | None = client
        self._client_for: Callable[[str], RegistryClient] | None = None
        self._made: Callable[[str], RegistryClient | None] | None = None
        self.host = client.host
        self.repository = repository
        self.cache = cache or DigestCache(None)

    @classmethod
    def connecting(
        cls,
        host: str,
        repository: str,
        client_for: Callable[[str], RegistryClient],
        *,
        cache: DigestCache | None,
        made: Callable[[str], RegistryClient | None] | None = None,
    ) -> RegistryRepository:
        """The store, its client `client_for(host)` at its first request, or the one `made`
        (the process's clients) has for its host already when its traffic is asked: a
        count taken before a read is then the client's own, not a fresh zero."""
        store = cls.__new__(cls)
        store._client, store._client_for, store._made = None, client_for, made
        store.host, store.repository, store.cache = host, repository, cache or DigestCache(None)
        return store

    @property
    def client(self) -> RegistryClient:
        if self._client is None:
            assert self._client_for is not None
            self._client = self._client_for(self.host)
        return self._client

    @property
    def name(self) -> str:
        return f"{self.host}/{self.repository}"

    @property
    def reach(self) -> Reach:
        """How its client speaks to the registry (what a command run by hand must say too)."""
        return self.client.reach

    @property
    def traffic(self) -> Traffic:
        if self._client is None and self._made is not None:
            self._client = self._made(self.host)
        return self._client.traffic if self._client is not None else Traffic()  # no client: nothing asked yet

    def tag_digest(self, tag: str) -> str | None:
        return self.client.manifest_digest(self.repository, tag, push=False)

    def list_tags(self) -> list[str]:
        return self.client.list_tags(self.repository)

    def has_blob(self, digest: str) -> bool:
        return self.client.blob_exists(self.repository, digest)

    def put_blob(
        self, digest: str, size: int, chunks: Callable[[], Iterable[bytes]], *, mount_from: str | None = None
    ) -> int:
        return self.client.upload_blob(self.repository, digest, size, chunks, mount_from=mount_from)

    def put_manifest(self, tag: str, data: bytes, media_type: str) -> str:
        return self.client.put_manifest(self.repository, tag, data, media_type)

    def get_manifest(self, reference: str) -> bytes:
        digest = reference if reference.startswith("sha256:") else None
        if digest is None:
            digest = self.client.manifest_digest(self.repository, reference)
            if digest is None:
                raise NotFound(f"{self.name}:{reference}: no such tag (404)")
        cached = self.cache.get(digest)
        if cached is not None:
            return cached
        data, _media_type = self.client.get_manifest(self.repository, digest)
        self.cache.put(digest, data)
        return data

    def get_blob(self, digest: str) -> Iterator[bytes]:
        return self.client.get_blob(self.repository, digest)

    def still_holds(self, digest: str) -> bool:
        """The content a digest names never changes, so its manifest is read from the cache;
        whether the registry still holds it can change. So when the cache holds it, one HEAD
        asks the registry (the OCI distribution spec's "Checking if content exists in the
        registry"; Docker Hub counts a HEAD as a version check, not a pull: "Using GET
        emulates a real pull and counts towards the limit. Using HEAD won't.",
        https://docs.docker.com/docker-hub/usage/pulls/). A 404 is False; any other
        failure is the client's TransientError. When the cache does not hold it, the GET
        that reads it asks, and says a 404 itself."""
        if not self.cache.holds(digest):
            return True
        return self.client.manifest_digest(self.repository, digest) is not None

    def delete(self, reference: str) -> bool:
        return self.client.delete_manifest(self.repository, reference)

    def put_artifact(self, data: bytes, media_type: str, subject: str) -> bool:
        return self.client.put_manifest_answer(self.repository, data, media_type).get("OCI-Subject") == subject

    def referrers_index(self, digest: str) -> bytes | None:
        return self.client.referrers(self.repository, digest)

    def move_tag(self, tag: str, data: bytes, media_type: str, *, was: str | None) -> str:
        del was  # the Distribution API has no conditional PUT: the last writer's index stands
        return self.client.put_manifest(self.repository, tag, data, media_type)


class LayoutStore:
    """An OCI image-layout folder: `oci-layout`, `index.json`, `blobs/sha256/…`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._traffic = Traffic()
        self.cache = DigestCache(None)  # its blobs are on disk already

    @property
    def name(self) -> str:
        return f"oci:{self.folder}"

    @property
    def traffic(self) -> Traffic:
        return self._traffic

    def _blob(self, digest: str) -> Path:
        if not SHA256_DIGEST.match(digest):
            raise InputError(f"{digest!r} is not a sha256 digest")
        return self.folder / "blobs" / "sha256" / digest.split(":", 1)[1]

    def _index(self) -> dict[str, object]:
        path = self.folder / "index.json"
        if not path.exists():
            return {"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": []}
        try:
            index = json.loads(path.read_text(encoding="utf-8"))
            assert isinstance(index, dict) and isinstance(index.get("manifests"), list)
            return index
        except (OSError, ValueError, AssertionError):
            raise InputError(f"{path}: not an OCI image index") from None

    def _manifests(self) -> list[dict[str, object]]:
        listed = self._index()["manifests"]
        return [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []

    def tag_digest(self, tag: str) -> str | None:
        for entry in self._manifests():
            if _ref_name(entry) == tag:
                return str(entry.get("digest"))
        return None

    def list_tags(self) -> list[str]:
        return sorted(str(name) for entry in self._manifests() if (name := _ref_name(entry)))

    def has_blob(self, digest: str) -> bool:
        return self._blob(digest).is_file()

    def _ensure_layout(self) -> None:
        (self.folder / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        marker = self.folder / "oci-layout"
        if not marker.exists():
            _atomic_write(marker, b'{"imageLayoutVersion":"1.0.0"}')

    def put_blob(
        self, digest: str, size: int, chunks: Callable[[], Iterable[bytes]], *, mount_from: str | None = None
    ) -> int:
        del mount_from  # one folder holds every blob: nothing to mount from
        self._ensure_layout()
        target = self._blob(digest)
        handle, name = tempfile.mkstemp(prefix=".upload.", dir=self.folder)  # not in blobs/
        hashed = hashlib.sha256()
        written = 0
        try:
            with os.fdopen(handle, "wb") as stream:
                for chunk in chunks():
                    hashed.update(chunk)
                    written += len(chunk)
                    stream.write(chunk)
            if "sha256:" + hashed.hexdigest() != digest or written != size:
                raise VerificationError(f"the bytes written for {digest} do not match it")
            os.replace(name, target)
        finally:
            Path(name).unlink(missing_ok=True)
        self._traffic.bytes_uploaded += written
        return written

    def put_manifest(self, tag: str, data: bytes, media_type: str) -> str:
        """Name `data` by `tag` in the index. The check that the tag is free or already
        ours is made again under the lock, so two processes racing for one tag of one
        folder cannot both win (a registry has no such compare-and-set)."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.put_blob(digest, len(data), lambda: [data])
        with (self.folder / ".lock").open("a") as lock:  # one index writer at a time
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = self._index()
            listed = index["manifests"] if isinstance(index["manifests"], list) else []
            existing = next((str(m.get("digest")) for m in listed if isinstance(m, dict) and _ref_name(m) == tag), None)
            if existing == digest:
                return digest
            if existing is not None:
                raise tag_taken(self.name, tag, existing, digest)
            kept = [m for m in listed if not (isinstance(m, dict) and _ref_name(m) == tag)]
            kept.append({"mediaType": media_type, "digest": digest, "size": len(data), "annotations": {REF_NAME: tag}})
            index["manifests"] = kept
            _atomic_write(self.folder / "index.json", canonical_json(index))
        return digest

    def put_artifact(self, data: bytes, media_type: str, subject: str) -> bool:
        del media_type, subject  # a layout folder has no referrers API: the fallback tag lists it
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.put_blob(digest, len(data), lambda: [data])
        return False

    def referrers_index(self, digest: str) -> bytes | None:
        return None

    def move_tag(self, tag: str, data: bytes, media_type: str, *, was: str | None) -> str:
        """Name `data` by `tag` when the tag still names `was` (None: no tag yet), as a
        compare-and-set under the lock; TransientError when another writer moved it first."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.put_blob(digest, len(data), lambda: [data])
        with (self.folder / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = self._index()
            listed = self._manifests()
            now = next((str(m.get("digest")) for m in listed if _ref_name(m) == tag), None)
            if now != was:
                raise TransientError(f"{self.name}:{tag} moved while it was updated; the next pass tries again")
            index["manifests"] = [m for m in listed if _ref_name(m) != tag] + [
                {"mediaType": media_type, "digest": digest, "size": len(data), "annotations": {REF_NAME: tag}}
            ]
            _atomic_write(self.folder / "index.json", canonical_json(index))
        return digest

    def still_holds(self, digest: str) -> bool:
        del digest  # no digest cache: reading the blob from the folder says whether it is there
        return True

    def get_manifest(self, reference: str) -> bytes:
        digest = reference if reference.startswith("sha256:") else self.tag_digest(reference)
        if digest is None:
            raise VerificationError(f"{self.name}:{reference}: no such tag")
        return b"".join(self.get_blob(digest))

    def get_blob(self, digest: str) -> Iterator[bytes]:
        path = self._blob(digest)
        if not path.is_file():
            raise VerificationError(f"{self.name}: blob {digest} is missing")
        hashed = hashlib.sha256()
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                hashed.update(chunk)
                self._traffic.bytes_downloaded += len(chunk)
                yield chunk
        if "sha256:" + hashed.hexdigest() != digest:
            raise VerificationError(f"{self.name}: blob {digest} does not match its digest")

    def delete(self, reference: str) -> bool:
        """Drop a tag from the index, or a digest with every tag naming it; then delete the
        blobs no manifest left in the index refers to (a layout folder has no garbage collector)."""
        with (self.folder / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = self._index()
            listed = self._manifests()
            by_digest = reference.startswith("sha256:")
            kept = [m for m in listed if (str(m.get("digest")) if by_digest else _ref_name(m)) != reference]
            if len(kept) == len(listed):
                return True
            index["manifests"] = kept
            _atomic_write(self.folder / "index.json", canonical_json(index))
            self._collect({str(m.get("digest")) for m in kept})
        return True

    def _collect(self, roots: set[str]) -> None:
        used: set[str] = set()
        unread = list(roots)  # manifests and indexes: the only blobs read
        while unread:
            digest = unread.pop()
            if digest in used:
                continue
            used.add(digest)
            try:
                document = json.loads(b"".join(self.get_blob(digest)))
            except (VerificationError, ValueError):
                return  # a manifest it cannot read: delete nothing it might refer to
            if not isinstance(document, dict):
                return
            for entry in [document.get("config"), *(document.get("layers") or [])]:
                if isinstance(entry, dict) and isinstance(entry.get("digest"), str):
                    used.add(entry["digest"])
            unread += [str(entry.get("digest")) for entry in document.get("manifests") or [] if isinstance(entry, dict)]
        for path in (self.folder / "blobs" / "sha256").glob("*"):
            if "sha256:" + path.name not in used:
                path.unlink(missing_ok=True)


def _ref_name(entry: dict[str, object]) -> object:
    annotations = entry.get("annotations")
    return annotations.get(REF_NAME) if isinstance(annotations, dict) else None


def open_store(
    target: ImageRef | LayoutTarget,
    *,
    client_for: Callable[[str], RegistryClient],
    cache: DigestCache | None = None,
    made: Callable[[str], RegistryClient | None] | None = None,
) -> ImageStore:
    if isinstance(target, LayoutTarget):
        return LayoutStore(Path(target.folder))
    host = target.registry or "docker.io"
    hub = host in ("docker.io", "index.docker.io", "registry-1.docker.io")
    path = f"library/{target.path}" if hub and "/" not in target.path else target.path
    return RegistryRepository.connecting(host, path, client_for, cache=cache, made=made)


def layout_folder(repository: str, root: Path) -> Path:
    """The folder an `oci:FOLDER` image repository names; a relative one starts at the
    config's repository `root`, as the pass and `config validate --online` read it."""
    folder = Path(repository.removeprefix("oci:"))
    return folder if folder.is_absolute() else (root / folder).resolve()


def reference_of(target: ImageRef | LayoutTarget) -> str | None:
    """The tag or digest a target names (digest first: it cannot move)."""
    return target.digest or target.tag

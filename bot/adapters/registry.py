"""The OCI Distribution API over `requests`: the registry adapter of the publish step.

Auth as the ecosystem does it: anonymous first; on a 401, the challenge says Basic (send
the credential) or Bearer (get a token from its realm for the scope, cache it per scope
until it expires). Loopback registries and those named insecure are spoken to over plain
HTTP, every other over HTTPS. 429, 5xx, resets and timeouts are retried with backoff
(honouring Retry-After) and then raise TransientError; 401/403 raise CredentialsError;
nothing else is ever read as "not found". Secrets never appear in logs or errors.

One client per host serves the whole process, and the service's worker threads share it:
each thread speaks through a `requests.Session` of its own (requests promises no
thread-safe Session, psf/requests#2766) and counts its own `traffic`, so a pass (which runs
in one thread) reports the requests and bytes it made, not a concurrent pass's; bearer
tokens are shared by all threads.
"""

from __future__ import annotations

import hashlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import requests
import urllib3

from ..core.errors import CredentialsError, InputError, NotFound, TransientError, UsageError, tries
from ..core.image.oci import ACCEPT_MANIFESTS, INDEX_TYPE
from ..core.image.reference import SHA256_DIGEST, short_digest
from . import logs, readdeadline, writes
from .credentials import Credential, CredentialStore
from .progress import tracked
from .registrywire import (
    HashedBody,
    RetryPolicy,
    Traffic,
    hostname,
    is_loopback,
    parse_challenge,
    reach_of,
    retry_after_of,
    with_digest,
)

__all__ = ["RegistryClient", "RetryPolicy", "Traffic", "hostname", "is_loopback", "parse_challenge"]

log = logs.get_logger("wheelpin.registry")
_CHUNK = 1 << 20
# distribution/distribution refuses a manifest over 4 MiB on push (its `maxManifestBodySize`):
# no registry holds a larger one, so a larger answer is refused before it is all read
MAX_MANIFEST = 4 << 20


class RegistryClient:
    """One registry host. Methods take the repository path (`rocm/atom-dev`)."""

    def __init__(
        self,
        host: str,
        *,
        credentials: CredentialStore | None = None,
        insecure: Iterable[str] = (),
        retry: RetryPolicy = RetryPolicy(),
        anonymous: bool = False,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        tls_verify: bool = True,
    ) -> None:
        """`insecure` hosts (and loopback ones) are spoken to over plain HTTP; `tls_verify`
        False speaks HTTPS without checking the certificate (skopeo's --tls-verify=false)."""
        self.host = host
        api_host = "registry-1.docker.io" if host in ("docker.io", "index.docker.io") else host
        self.reach = reach_of(host, insecure, tls_verify=tls_verify)
        self.base = f"{'http' if self.reach.plain_http else 'https'}://{api_host}"
        self.retry = retry
        self._local = threading.local()  # this thread's session and traffic
        self._credentials = credentials or CredentialStore()
        self._anonymous = anonymous
        self._given_session = session  # tests give one; every thread then speaks through it
        # False on each request, not only on the session: requests lets REQUESTS_CA_BUNDLE or
        # CURL_CA_BUNDLE in the environment override a session's verify=False (psf/requests#3829)
        self._verify: bool | None = None
        if not tls_verify:
            self._verify = False
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # said once, by the settings
        self._tokens: dict[str, tuple[str, float]] = {}
        self._insecure = set(insecure)
        self._basic = False
        self._sleep = sleep

    @property
    def traffic(self) -> Traffic:
        """What this thread's requests through this client cost."""
        traffic: Traffic | None = getattr(self._local, "traffic", None)
        if traffic is None:
            traffic = self._local.traffic = Traffic()
        return traffic

    @property
    def _session(self) -> requests.Session:
        session: requests.Session | None = self._given_session or getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        session.headers["User-Agent"] = "wheelpin"
        return session

    # -- the request loop ---------------------------------------------------------------

    def _credential(self) -> Credential | None:
        return None if self._anonymous else self._credentials.get(self.host)

    def _auth_header(self, scope: str) -> dict[str, str]:
        token = self._tokens.get(scope)
        if token and token[1] > time.time() + 10:
            return {"Authorization": f"Bearer {token[0]}"}
        return {}  # Basic credentials go through `auth=`

    def request(
        self,
        method: str,
        url: str,
        *,
        scope: str,
        headers: dict[str, str] | None = None,
        data: Any = None,
        stream: bool = False,
        replayable: bool = True,
    ) -> requests.Response:
        """Send with auth and retries; return any answer but 401/403/429/5xx."""
        full = url if url.startswith("http") else self.base + url
        authenticated = False
        attempt = 0
        started = time.monotonic()
        while True:
            readdeadline.received(0)  # an image read past its deadline asks no more
            body = data() if callable(data) else data
            merged = {**(headers or {}), **self._auth_header(scope)}
            credential = self._credential()
            auth = (
                (credential.username, credential.secret)
                if (self._basic and credential is not None and not credential.identity_token)
                else None
            )
            writes.before(method, full)  # a fenced job stops here (adapters/writes.py)
            self.traffic.requests += 1
            self.traffic.by_method[method] = self.traffic.by_method.get(method, 0) + 1
            try:
                response = self._session.request(
                    method,
                    full,
                    headers=merged,
                    data=body,
                    stream=stream,
                    auth=auth,
                    verify=self._verify,
                    timeout=(self.retry.connect_timeout, readdeadline.read_timeout(self.retry.read_timeout)),
                    allow_redirects=method in ("GET", "HEAD"),
                )
            except requests.exceptions.SSLError:  # not a passing fault: said at once, with the way out
                raise UsageError(
                    f"{self.host}: no trusted HTTPS there (the TLS handshake failed): for a registry "
                    "without HTTPS give --plain-http (or WHEELPIN_INSECURE_REGISTRIES), for one whose "
                    "certificate this machine does not trust --tls-verify=false"
                ) from None
            except requests.RequestException as exc:  # never its text: it may hold a header
                kind = self._what_failed(exc)
                if not replayable or attempt + 1 >= self.retry.attempts:
                    raise self._gave_up(method, full, kind, attempt + 1, started) from None
                self._wait(attempt, None, kind)
                attempt += 1
                continue
            self.traffic.requests += len(response.history)  # each redirect followed was a request too
            if response.status_code == 401:
                challenge = response.headers.get("WWW-Authenticate", "")
                response.close()
                if authenticated:
                    raise CredentialsError(self._refused(scope, 401))
                self._authenticate(challenge, scope)
                authenticated = True
                if not replayable:  # its body is spent: the caller starts over, now authorised
                    raise TransientError(f"{self.host}: {method} needed fresh credentials; starting again")
                continue
            if response.status_code == 403:
                response.close()
                raise CredentialsError(self._refused(scope, 403))
            if response.status_code == 429 or response.status_code >= 500:
                wait = retry_after_of(response)
                status = response.status_code
                response.close()
                if not replayable or attempt + 1 >= self.retry.attempts:
                    raise self._gave_up(
                        method, full, f"answered {status}", attempt + 1, started, retry_after=wait
                    ) from None
                self._wait(attempt, wait, str(status))
                attempt += 1
                continue
            return response

    def _what_failed(self, exc: requests.RequestException) -> str:
        """What a request that got no answer met, in words: requests wraps urllib3's error,
        which wraps the socket's (its `reason`, or the exception's context)."""
        if isinstance(exc, requests.ConnectTimeout):
            return f"did not accept a connection within {self.retry.connect_timeout:g} s"
        if isinstance(exc, requests.Timeout):
            return "stopped answering (timed out)"
        seen: list[BaseException] = []
        cause: BaseException | None = exc
        while cause is not None and cause not in seen and len(seen) < 8:
            seen.append(cause)
            inner = getattr(cause, "reason", None)
            if not isinstance(inner, BaseException):
                inner = next((arg for arg in cause.args if isinstance(arg, BaseException)), None)
            cause = inner or cause.__cause__ or cause.__context__
        if any(isinstance(error, ConnectionRefusedError) for error in seen):
            return "refused the connection"
        if any(isinstance(error, ConnectionResetError) for error in seen):
            return "reset the connection"
        if any(isinstance(error, socket.gaierror) for error in seen):
            return "could not be found (its name does not resolve)"
        return "could not be reached"

    def _gave_up(
        self, method: str, url: str, what: str, attempts: int, started: float, retry_after: float | None = None
    ) -> TransientError:
        """The one sentence of a request that failed every try: the host, what it did, how
        hard it was tried ("127.0.0.1:5000 refused the connection, 4 tries in 8 s"). The
        request's path goes to the debug log: what it was for is the caller's to say."""
        seconds = time.monotonic() - started
        log.debug(
            "registry.gave_up", host=self.host, method=method, path=urlsplit(url).path, what=what, attempts=attempts
        )
        return TransientError(
            f"{self.host} {what}, {tries(attempts, seconds)}",
            retry_after=retry_after,
            attempts=attempts,
            seconds=seconds,
        )

    def _wait(self, attempt: int, retry_after: float | None, reason: str) -> None:
        delay = self.retry.delay(attempt, retry_after)
        log.info("registry.retry", host=self.host, reason=reason, attempt=attempt + 1, delay=delay)
        self._sleep(delay)

    def _refused(self, scope: str, status: int) -> str:
        who = "anonymous access" if self._credential() is None else "the credentials"
        return (
            f"{self.host} refused {who} for {scope} ({status}); "
            "log in (docker login) or set WHEELPIN_REGISTRY_USERNAME/_PASSWORD"
        )

    def _authenticate(self, challenge: str, scope: str) -> None:
        scheme, params = parse_challenge(challenge)
        credential = self._credential()
        if scheme == "basic":
            if credential is None:
                raise CredentialsError(f"{self.host} needs credentials for {scope} (Basic auth); none are configured")
            self._basic = True
            return
        if scheme != "bearer" or "realm" not in params:
            raise CredentialsError(f"{self.host} answered 401 with no usable challenge for {scope}")
        # several scopes (a mount's source too) are each a `scope` parameter of the GET, and one
        # space-separated `scope` field of the OAuth2 POST (Docker's token specs: "Token
        # Authentication Specification", "OAuth2 Token Authentication")
        service = [("service", params["service"])] if "service" in params else []
        query = [("scope", part) for part in scope.split()] + service
        realm = urlsplit(params["realm"])
        if (
            credential is not None
            and realm.scheme != "https"
            and not (is_loopback(realm.netloc) or realm.netloc in self._insecure)
        ):
            raise CredentialsError(
                f"{self.host} asks for credentials at a plain-http token service {realm.netloc}; refusing to send them"
            )
        answer = None
        started = time.monotonic()
        for attempt in range(self.retry.attempts):
            try:
                if credential is not None and credential.identity_token:
                    answer = self._session.post(
                        params["realm"],
                        verify=self._verify,
                        data={
                            "scope": scope,
                            **dict(service),
                            "grant_type": "refresh_token",
                            "refresh_token": credential.secret,
                            "client_id": "wheelpin",
                        },
                        timeout=(self.retry.connect_timeout, 60),
                    )
                else:
                    auth = (credential.username, credential.secret) if credential else None
                    answer = self._session.get(
                        params["realm"],
                        params=query,
                        auth=auth,
                        verify=self._verify,
                        timeout=(self.retry.connect_timeout, 60),
                    )
            except requests.RequestException:
                answer = None
            self.traffic.requests += 1
            if answer is not None and answer.status_code < 500 and answer.status_code != 429:
                break
            self._wait(attempt, retry_after_of(answer) if answer is not None else None, "token service")
        if answer is None or answer.status_code >= 500 or answer.status_code == 429:
            seconds = time.monotonic() - started
            raise TransientError(
                f"the token service of {self.host} ({realm.netloc}) did not answer, "
                f"{tries(self.retry.attempts, seconds)}",
                attempts=self.retry.attempts,
                seconds=seconds,
            )
        if answer.status_code in (401, 403):
            raise CredentialsError(f"the token service of {self.host} refused {scope} ({answer.status_code})")
        if answer.status_code != 200:
            raise TransientError(f"the token service of {self.host} answered {answer.status_code}")
        try:
            body = answer.json()
            token = str(body.get("token") or body["access_token"]).strip()
            lifetime = float(body.get("expires_in") or 60)
        except (ValueError, KeyError, TypeError):
            raise TransientError(f"the token service of {self.host} gave no token") from None
        if not token or any(c.isspace() for c in token):
            raise TransientError(f"the token service of {self.host} gave a malformed token")
        self._tokens[scope] = (token, time.time() + lifetime)

    # -- the Distribution API -----------------------------------------------------------

    @staticmethod
    def scope(repository: str, *, push: bool = False) -> str:
        return f"repository:{repository}:{'pull,push' if push else 'pull'}"

    def manifest_digest(self, repository: str, reference: str, *, push: bool = False) -> str | None:
        """The digest a tag (or digest) names, by HEAD; None only for a 404 (free)."""
        response = self.request(
            "HEAD",
            f"/v2/{repository}/manifests/{reference}",
            scope=self.scope(repository, push=push),
            headers={"Accept": ACCEPT_MANIFESTS},
        )
        response.close()
        if response.status_code == 404:
            return None  # MANIFEST_UNKNOWN, NAME_UNKNOWN, NOT_FOUND: a HEAD has no body to tell
        if response.status_code != 200:
            raise TransientError(f"{self.host}/{repository}:{reference}: HEAD answered {response.status_code}")
        digest = response.headers.get("Docker-Content-Digest", "")
        if not SHA256_DIGEST.match(digest):
            raise TransientError(
                f"{self.host}/{repository}:{reference}: HEAD answered 200 without a "
                "Docker-Content-Digest; the next pass asks again"
            )
        return digest

    def list_tags(self, repository: str) -> list[str]:
        """Every tag of a repository, following `Link: <…>; rel="next"` pages."""
        tags: list[str] = []
        url = f"/v2/{repository}/tags/list?n=1000"
        while url:
            response = self.request("GET", url, scope=self.scope(repository))
            if response.status_code == 404:
                return tags  # NAME_UNKNOWN: no repository yet, so no tags
            if response.status_code != 200:
                raise TransientError(f"{self.host}/{repository}: tags/list answered {response.status_code}")
            self.traffic.bytes_downloaded += len(response.content)
            tags += response.json().get("tags") or []
            link = re.search(r'<([^>]+)>\s*;\s*rel="?next"?', response.headers.get("Link", ""))
            url = link.group(1) if link else ""
        return tags

    def get_manifest(self, repository: str, reference: str) -> tuple[bytes, str]:
        """The manifest's bytes and media type; one over `MAX_MANIFEST` is refused (InputError)."""
        response = self.request(
            "GET",
            f"/v2/{repository}/manifests/{reference}",
            stream=True,
            scope=self.scope(repository),
            headers={"Accept": ACCEPT_MANIFESTS},
        )
        try:
            if response.status_code == 404:
                raise NotFound(f"{self.host}/{repository}@{reference}: no such manifest (404)")
            if response.status_code != 200:
                raise TransientError(f"{self.host}/{repository}: manifest GET answered {response.status_code}")
            data = b"".join(
                self._body(
                    response, repository, limit=MAX_MANIFEST, what=f"the manifest {self.host}/{repository}@{reference}"
                )
            )
        finally:
            response.close()
        if reference.startswith("sha256:") and "sha256:" + hashlib.sha256(data).hexdigest() != reference:
            raise TransientError(f"{self.host}/{repository}@{reference}: the manifest sent does not match its digest")
        return data, response.headers.get("Content-Type", "")

    def put_manifest(self, repository: str, reference: str, data: bytes, media_type: str) -> str:
        headers = self._put_manifest(repository, reference, data, media_type)
        return headers.get("Docker-Content-Digest") or "sha256:" + hashlib.sha256(data).hexdigest()

    def put_manifest_answer(self, repository: str, data: bytes, media_type: str) -> Mapping[str, str]:
        """PUT a manifest by its own digest (an OCI 1.1 artifact: no tag); the answer's headers
        (looked up in any case: Go registries send `Oci-Subject`), where a registry with the
        referrers API says `OCI-Subject` (distribution-spec v1.1 "Pushing Manifests with Subject")."""
        return self._put_manifest(repository, "sha256:" + hashlib.sha256(data).hexdigest(), data, media_type)

    def _put_manifest(self, repository: str, reference: str, data: bytes, media_type: str) -> Mapping[str, str]:
        """PUT a manifest under a tag or its digest; the answer's headers."""
        response = self.request(
            "PUT",
            f"/v2/{repository}/manifests/{reference}",
            scope=self.scope(repository, push=True),
            headers={"Content-Type": media_type},
            data=data,
        )
        response.close()
        if response.status_code not in (200, 201):
            where = f"@{reference}" if reference.startswith("sha256:") else f":{reference}"
            raise TransientError(f"{self.host}/{repository}{where}: manifest PUT answered {response.status_code}")
        self.traffic.bytes_uploaded += len(data)
        return response.headers

    def referrers(self, repository: str, digest: str) -> bytes | None:
        """`GET /v2/<name>/referrers/<digest>` (distribution-spec v1.1 "Listing Referrers"): the
        image index of the manifests naming `digest` as subject; None on 404, the spec's word
        for a registry without the API (Debian's docker-registry 2.8 answers so)."""
        response = self.request(
            "GET",
            f"/v2/{repository}/referrers/{digest}",
            stream=True,
            scope=self.scope(repository),
            headers={"Accept": INDEX_TYPE},
        )
        try:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise TransientError(
                    f"{self.host}/{repository}: the referrers of {digest} answered {response.status_code}"
                )
            return b"".join(self._body(response, repository, limit=MAX_MANIFEST, what=f"the referrers of {digest}"))
        finally:
            response.close()

    def delete_manifest(self, repository: str, reference: str) -> bool:
        """DELETE a manifest by digest (with every tag naming it), or one tag (OCI Distribution
        Spec v1.1). True when it is gone (202, or 404: gone already); False when the registry
        does not delete this way: 400 or 405, which the spec allows for a tag delete
        (distribution/distribution says UNSUPPORTED, DIGEST_INVALID before v2.8) and a registry
        with deletes disabled answers a digest delete. A delete needs the `delete` action in
        the token scope (docs.docker.com, Registry API "Delete image manifest")."""
        response = self.request(
            "DELETE", f"/v2/{repository}/manifests/{reference}", scope=f"repository:{repository}:delete"
        )
        response.close()
        if response.status_code in (200, 202, 204, 404):
            return True
        if response.status_code in (400, 405):
            return False
        raise TransientError(f"{self.host}/{repository}:{reference}: DELETE answered {response.status_code}")

    def blob_exists(self, repository: str, digest: str, *, push: bool = False) -> bool:
        response = self.request("HEAD", f"/v2/{repository}/blobs/{digest}", scope=self.scope(repository, push=push))
        response.close()
        if response.status_code == 404:
            return False
        if response.status_code == 200:
            return True
        raise TransientError(f"{self.host}/{repository}: blob HEAD answered {response.status_code}")

    def get_blob(self, repository: str, digest: str) -> Iterator[bytes]:
        """The blob's bytes in chunks, checked against its digest at the end."""
        response = self.request("GET", f"/v2/{repository}/blobs/{digest}", scope=self.scope(repository), stream=True)
        if response.status_code != 200:
            response.close()
            raise TransientError(f"{self.host}/{repository}: blob GET {digest} answered {response.status_code}")
        hashed = hashlib.sha256()
        length = response.headers.get("Content-Length", "")
        try:
            for chunk in tracked(
                self._body(response, repository, what=f"blob {digest}"),
                f"download {self.host}/{repository} {short_digest(digest)}",
                int(length) if length.isdigit() else None,
            ):
                hashed.update(chunk)
                yield chunk
        finally:
            response.close()
        if "sha256:" + hashed.hexdigest() != digest:
            raise TransientError(f"{self.host}/{repository}: the blob {digest} sent does not match its digest")

    def _body(
        self, response: requests.Response, repository: str, *, what: str, limit: int | None = None
    ) -> Iterator[bytes]:
        """A streamed answer's bytes as they come (each read waits for one arrival, never a
        whole chunk: a registry that drips is seen dripping), counted against the image
        read's deadline (`adapters/readdeadline.py`) and, when given, `limit` bytes."""
        raw = response.raw
        count = 0
        try:
            while True:
                asked = time.monotonic()
                chunk = raw.read1(_CHUNK, decode_content=True)
                waited = time.monotonic() - asked
                if not chunk:
                    break
                count += len(chunk)
                self.traffic.bytes_downloaded += len(chunk)
                if limit is not None and count > limit:
                    raise InputError(
                        f"{self.host}/{repository}: {what} is larger than the {limit} bytes wheelpin reads of one"
                    )
                readdeadline.received(len(chunk), waited)
                yield chunk
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransientError(f"{self.host}/{repository}: {what} download broke ({type(exc).__name__})") from None

    def upload_blob(
        self,
        repository: str,
        digest: str,
        size: int,
        chunks: Callable[[], Iterable[bytes]],
        *,
        mount_from: str | None = None,
    ) -> int:
        """Upload a blob of `size` bytes streamed from `chunks()` (called again on a retry); bytes sent.

        The body goes with its Content-Length, never chunked: registries behind proxies
        that refuse chunked requests (411) and those that want a length on every PATCH
        take it as it is.
        """
        scope = self.scope(repository, push=True)
        if mount_from:
            # the token must grant pull on the source too, or a registry does not mount: it
            # answers 202 and the whole blob is uploaded again (Distribution's "Cross
            # Repository Blob Mount"; Docker Hub and GHCR behave so)
            scope = f"{scope} repository:{mount_from}:pull"
            mounted = self.request(
                "POST",
                f"/v2/{repository}/blobs/uploads/?" + urlencode({"mount": digest, "from": mount_from}),
                scope=scope,
            )
            mounted.close()
            if mounted.status_code == 201:
                return 0
        last: TransientError | None = None
        what = f"upload {self.host}/{repository} {short_digest(digest)}"
        for attempt in range(self.retry.attempts):
            try:
                return self._upload_once(repository, digest, size, lambda: tracked(chunks(), what, size), scope)
            except TransientError as exc:
                last = exc
                self._wait(attempt, exc.retry_after, "upload failed")
        assert last is not None
        raise last

    def _upload_once(
        self, repository: str, digest: str, size: int, chunks: Callable[[], Iterable[bytes]], scope: str
    ) -> int:
        started = self.request("POST", f"/v2/{repository}/blobs/uploads/", scope=scope)
        started.close()
        if started.status_code != 202 or "Location" not in started.headers:
            raise TransientError(f"{self.host}/{repository}: starting an upload answered {started.status_code}")
        location = urljoin(self.base + "/", started.headers["Location"])
        body = HashedBody(chunks, size)
        patched = self.request(
            "PATCH",
            location,
            scope=scope,
            replayable=False,
            headers={"Content-Type": "application/octet-stream", "Content-Range": f"0-{size - 1}"}
            if size
            else {"Content-Type": "application/octet-stream"},
            data=body.payload(),
        )
        patched.close()
        if patched.status_code in (400, 404, 405, 416, 501):  # no streamed PATCH: one PUT
            body = HashedBody(chunks, size)
            done = self.request(
                "PUT",
                with_digest(location, digest),
                scope=scope,
                replayable=False,
                headers={"Content-Type": "application/octet-stream"},
                data=body.payload(),
            )
        elif patched.status_code == 202:
            body.check(digest)
            location = urljoin(self.base + "/", patched.headers.get("Location", location))
            done = self.request(
                "PUT",
                with_digest(location, digest),
                scope=scope,
                replayable=False,
                headers={"Content-Length": "0"},
                data=b"",
            )
        else:
            raise TransientError(f"{self.host}/{repository}: uploading {digest} answered {patched.status_code}")
        done.close()
        if done.status_code != 201:
            raise TransientError(
                f"{self.host}/{repository}: finishing the upload of {digest} answered {done.status_code}"
            )
        body.check(digest)
        self.traffic.bytes_uploaded += body.sent
        return body.sent

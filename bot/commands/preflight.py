"""`config validate --online`: what the first pass will ask of the outside world, asked
before any build. For each component, through the adapters the pass speaks through (so
the same credentials, retries and deadlines apply):

- the upstream: `git ls-remote` for its branch, or the newest tag its pattern matches
  (adapters/upstream.py, 120 s a listing);
- the registry: the tag list of `image.repository`, as the pass looks for an image there
  (adapters/registry.py with the settings' retries and timeouts), or the OCI layout
  folder on disk;
- each pinned image, by its digest: that the registry holds it (a HEAD), then its
  manifest and config, and its wheels where those say them (adapters/imageread.py,
  within its deadline); an image whose wheels only its layers say (another tool pushed
  it) has its layers read when the manifest declares at most `LAYERS_READ_AT_MOST` bytes
  of config and layers (each layer held to its declared size as it streams), else they
  are left to the pass; that its wheels are of `wheel.distribution`; and that they pass
  the component's other `[wheel]` rules as the pass applies them to a build
  (core/checks/component.py), judged from what the image records of each wheel
  (WheelEntry.as_report), unless wheelpin published it under today's rules (its rules
  digest), when they passed already: a rule the build decides is a problem, one the
  next commit may meet otherwise (`version_carries_commit`) a warning;
- each pin's sha256 ARG (`sha256_arg`): that the image it pins today holds one wheel of
  the pin's python tag (or one wheel, for a pin naming none), from that read: several
  are where the pass's proposal stops (core/pins/sha256.py); and that the ARG holds that
  wheel's sha256, which the Dockerfile's build checks the wheel against;
- the consuming image (`consumer`), resolved to its manifest and config
  (adapters/consumerread.py, no layer read);
- with `trust`, the trusted roots attestations are verified against, loaded from the
  cache (adapters/sigstoreverify.py);
- with a GitHub repository named (and GitHub's settings), the file of each
  `build.workflow` on its base branch, where the pass dispatches it (the platform's
  `read_file`, as the pass reads the pins there).

The pins and the consumer's Dockerfile are read from the working tree, as offline
`config validate` reads them (the pass reads them from the base branch). Each check ends
in one sentence naming the component and what was asked of whom. An answer the pass
would stop at (no such branch, a digest the registry does not hold, credentials refused,
a malformed manifest, an upstream folder that is no git repository) is a problem; an
outside system that did not answer (refused, timed out, 5xx after the retries) is
`unanswered`, as the pass's TransientError is; a rule the pinned wheels break that the
next build may meet is a `warning`. Nothing is written but the cache folder's
content-addressed copies of what was read.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapters.consumerread import ConsumerPlatforms, resolve_consumer
from ..adapters.github.workflowfile import workflow_path
from ..adapters.imageread import ImageInfo, read_image
from ..adapters.imagestore import ImageStore, LayoutStore, RegistryRepository, layout_folder, reference_of
from ..adapters.platform import Platform
from ..adapters.referrers import is_attachment_tag
from ..adapters.upstream import LsRemoteFailed, UpstreamRefMissing, UpstreamRepo, host_folder
from ..core.checks.base import WheelCheck
from ..core.checks.commit import CommitCheck
from ..core.checks.digest import rules_digest
from ..core.checks.name import NameCheck, same_distribution
from ..core.config.load import LoadedConfig
from ..core.config.model import ActionsBuild, Component
from ..core.decide.revision import is_full_commit
from ..core.errors import TransientError, WheelpinError
from ..core.image.oci import ANNOTATION_RULES, REVISION, named_architecture
from ..core.image.reference import ImageRef, ImageRefError
from ..core.pins.bump import PinState, read_pins
from ..core.pins.sha256 import Several, ambiguity, wheel_sha256s
from ..core.redact import public_url
from ..core.sizes import size_text

if TYPE_CHECKING:
    from ..app.wiring import Registries

OK = "ok"
PROBLEM = "problem"  # an answer the pass would stop at: fix the config, the image or the credentials
UNANSWERED = "unanswered"  # the outside did not answer: try again
WARNING = "warning"  # what the pass may stop at, or may not: look at it

# The most bytes of config and layers (as its manifest declares them) of a pinned image
# whose wheels only its layers say that validate streams to read them (as `image show`
# does); a larger image's wheels are left to the pass. Wheel images of one ROCm wheel
# per python tag are tens to hundreds of MB; a self-contained torch wheel is GBs.
LAYERS_READ_AT_MOST = 500_000_000

# The rules a pinned wheel may break while the next build meets them, and why: a rule
# not named here asks what the config and the build decide (the distribution name, the
# python tags, the libraries needed, the GPU archs, the manylinux tag, the local
# segments), which the next build of the same recipe decides alike.
_MAY_PASS_NEXT = {
    CommitCheck.name: "the next commit's build may carry its commit: a build of a release tag's commit often carries "
    "none (set version_carries_commit = false for an upstream whose every build is of a tag)",
}


@dataclass(frozen=True)
class Check:
    """One question asked of the outside world for one component, and how it ended."""

    component: str
    # "upstream" | "registry" | "pinned" | "distribution" | "rules" | "sha256" | "consumer" | "trust" | "workflow"
    check: str
    asked: str  # what was asked of whom
    outcome: str  # OK | PROBLEM | UNANSWERED | WARNING
    sentence: str  # one sentence naming the component

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def online_checks(loaded: LoadedConfig, registries: Registries, *, cache: Path) -> list[Check]:
    """Every check of every component, in the config's order."""
    checks: list[Check] = []
    for component in loaded.config.components:
        checks += _component_checks(loaded, component, registries, cache)
    return checks


def _component_checks(
    loaded: LoadedConfig, component: Component, registries: Registries, cache: Path
) -> Iterator[Check]:
    yield _upstream(component, loaded.root, cache)
    layout = LayoutStore(layout_folder(component.image.repository, loaded.root)) if component.image.is_layout else None
    registry = _registry(component, layout, registries)
    yield registry
    texts = {pin.file: (loaded.root / pin.file).read_text(encoding="utf-8") for pin in component.pins}
    read: dict[str, ImageInfo | None] = {}  # each pinned image read once, whichever pins share it
    for state in read_pins(component, texts):  # offline validate read them already: they read
        if state.image not in read:
            read[state.image] = None
            if registry.outcome == UNANSWERED and layout is None:
                # offline validate saw the pin in image.repository: the same registry, which has just
                # spent its retries unanswered; asking again would only wait as long once more
                yield Check(
                    component.name,
                    "pinned",
                    f"the manifest of {state.image}",
                    UNANSWERED,
                    f"{component.name}: {state.file}:{state.line}: the pinned image {state.image} was not "
                    "asked for: its registry did not answer the tag list",
                )
            else:
                check, read[state.image] = _pinned(component, state, layout, registries)
                yield check
                misnamed = _distribution(component, state, read[state.image])
                if misnamed is not None:
                    yield misnamed
                yield from _rules(component, state, read[state.image], name_refused=misnamed is not None)
        if state.pin.sha256_arg:
            sha256 = _sha256(component, state, read[state.image])
            if sha256 is not None:
                yield sha256
    infos = [info for info in read.values() if info is not None]
    if component.consumer is not None:
        # the registry that has just spent its retries unanswered is not asked again, for a
        # consuming image it holds either: it would only wait as long once more
        silent = registry.outcome == UNANSWERED and layout is None
        yield _consumer(loaded, component, infos, registries, silent=silent)
    if component.trust.checked:
        yield _trusted_roots(component, cache)


def _trusted_roots(component: Component, cache: Path) -> Check:
    """The roots the pass verifies attestations against (`trust`), loaded from the cache."""
    from ..adapters.sigstoreverify import TRUSTED_ROOTS, TrustedRoots  # sigstore: for a component that asks

    asked = f"the trusted roots in {cache / TRUSTED_ROOTS}"
    try:
        roots = TrustedRoots.load(cache)
    except WheelpinError as exc:
        return Check(component.name, "trust", asked, PROBLEM, f"{component.name}: trust: {exc.message}")
    return Check(
        component.name,
        "trust",
        asked,
        OK,
        f"{component.name}: trust: {len(roots.roots)} trusted "
        f"root{'s' if len(roots.roots) != 1 else ''} at {roots.path} to verify attestations by "
        f"{component.trust.identity} with",
    )


def _upstream(component: Component, root: Path, cache: Path) -> Check:
    name, upstream = component.name, UpstreamRepo(component.upstream, cache=cache, root=root)
    url = public_url(upstream.url)
    wanted = (
        f"branch {component.upstream.branch}"
        if component.upstream.branch is not None
        else f"the newest tag matching {component.upstream.tags or '*'}"
    )
    asked = f"git ls-remote {url} ({wanted})"
    try:
        head = upstream.head()
    except LsRemoteFailed as exc:
        # a folder here that git cannot list is no passing fault: it is not a repository
        local = host_folder(component.upstream.repo, root) is not None
        return Check(
            name,
            "upstream",
            asked,
            PROBLEM if local else UNANSWERED,
            f"{name}: the upstream {url} did not answer git ls-remote: {exc.reason}",
        )
    except UpstreamRefMissing:
        sentence = (
            f"{name}: the upstream {url} has no branch {component.upstream.branch} (upstream.branch)"
            if component.upstream.branch is not None
            else f"{name}: no tag of the upstream {url} matches {component.upstream.tags} (upstream.tags)"
        )
        return Check(name, "upstream", asked, PROBLEM, sentence)
    except WheelpinError as exc:
        return _failed(name, "upstream", asked, f"the upstream {url}", f"its {wanted}", exc)
    tag = upstream.tag_of(head)
    found = f"tag {tag} at {head[:12]}" if tag else f"{wanted} at {head[:12]}"
    return Check(name, "upstream", asked, OK, f"{name}: the upstream {url} answered git ls-remote: {found}")


def _registry(component: Component, layout: LayoutStore | None, registries: Registries) -> Check:
    name = component.name
    if layout is not None:
        asked = f"the OCI layout folder {layout.folder}"
        if layout.folder.exists() and not layout.folder.is_dir():
            return Check(
                name,
                "registry",
                asked,
                PROBLEM,
                f"{name}: the OCI layout folder {layout.folder} (image.repository) is not a folder",
            )
        if not layout.folder.exists():
            return Check(
                name,
                "registry",
                asked,
                OK,
                f"{name}: the OCI layout folder {layout.folder} does not exist yet; the first publish makes it",
            )
    store = layout or registries.store(ImageRef.parse(component.image.repository))
    asked = f"the tag list of {store.name}"
    try:
        tags = store.list_tags()
    except WheelpinError as exc:
        return _failed(name, "registry", asked, _who(store), f"the tag list of {store.name} (image.repository)", exc)
    attachments = sum(map(is_attachment_tag, tags))
    counted = f"{len(tags) - attachments} tag(s)" + (
        f", and {attachments} holding attached documents" if attachments else ""
    )
    return Check(
        name, "registry", asked, OK, f"{name}: {_who(store)} answered the tag list of {store.name} ({counted})"
    )


def _pinned(
    component: Component, state: PinState, layout: LayoutStore | None, registries: Registries
) -> tuple[Check, ImageInfo | None]:
    """The image a pin holds, as the pass reads it to learn the pinned commit: from the
    component's layout folder, else from the registry the reference names."""
    name, where = component.name, f"{state.file}:{state.line}"
    ref = state.ref
    assert ref is not None  # offline validate refused a pin that holds no reference
    reference = reference_of(ref)
    assert reference is not None
    store = layout or registries.store(ref)
    holder = f"the OCI layout folder {layout.folder}" if layout is not None else "the registry"
    asked = f"the manifest of {store.name}@{reference}"
    what = "digest" if ref.digest else "tag"
    try:
        digest = _digest_held(store, reference)
        if digest is None:
            status = "" if layout is not None else " (404)"
            return Check(
                name,
                "pinned",
                asked,
                PROBLEM,
                f"{name}: {where}: the pinned {what} is not in {holder}{status}: {store.name}@{reference}",
            ), None
        info = read_image(store, digest, layers=False)
        if info.metadata_from == "unread" and info.size <= LAYERS_READ_AT_MOST:
            info = read_image(store, digest)  # its manifest is the cache's now; its layers streamed once
    except WheelpinError as exc:
        return _failed(
            name, "pinned", asked, _who(store), f"the image pinned at {where}, {store.name}@{reference}", exc
        ), None
    if info.wheels:
        wheels = ", ".join(f"{wheel.name} {wheel.version}" for wheel in info.wheels)
        said = f"{wheels} (from its {info.metadata_from})"
    elif info.metadata_from == "layers":
        said = "its layers hold no wheel"
    else:
        said = (
            f"its wheels are said only by its layers ({size_text(info.size)}), more than the "
            f"{size_text(LAYERS_READ_AT_MOST)} validate reads of them; the pass reads them"
        )
    return Check(
        name, "pinned", asked, OK, f"{name}: {where}: the pinned image {store.name}@{digest} is readable: {said}"
    ), info


def _distribution(component: Component, state: PinState, info: ImageInfo | None) -> Check | None:
    """The pinned image's wheels against `wheel.distribution`, compared as the pass's name
    check compares each wheel it builds (core/checks/name.py): an upstream's build gives its
    wheel one name commit after commit, so a config naming another one has the pass refuse
    its next build. A problem then; None, no check, when the names agree or the image was
    not read, or says its wheels only in its layers (the pinned check says which)."""
    if info is None or info.metadata_from == "unread":
        return None
    configured = component.wheel.distribution
    others = list(
        dict.fromkeys(f"{w.name} {w.version}" for w in info.wheels if not same_distribution(w.name, configured))
    )
    if not others:
        return None
    name, where = component.name, f"{state.file}:{state.line}"
    wheels = f"wheel is {others[0]}" if len(others) == 1 else f"wheels are {', '.join(others)}"
    return Check(
        name,
        "distribution",
        f"the wheels of {state.image} against wheel.distribution",
        PROBLEM,
        f"{name}: {where}: the pinned image's {wheels}, but wheel.distribution says {configured}, so the pass "
        "refuses the wheels its next build makes (the distribution names compared as PEP 503 normalizes them)",
    )


def _published_under_todays_rules(component: Component, info: ImageInfo) -> bool:
    """Whether wheelpin published the image under the component's rules as they are now (its
    rules digest, core/checks/digest.py): its wheels passed them, and the next build is
    judged by them alike."""
    return info.annotations.get(ANNOTATION_RULES) == rules_digest(component)


def _rules(
    component: Component, state: PinState, info: ImageInfo | None, *, name_refused: bool = False
) -> Iterator[Check]:
    """The pinned image's wheels against the component's `[wheel]` rules, by the pass's own
    checks (core/checks/component.py checked_wheels) applied to what the image records of
    them (WheelEntry.as_report), for the commit it names it was built from (none named: the
    commit rule is not judged). One check per rule broken, in the rule's own sentences: a
    problem where the config and the build decide it, so the next build of the same recipe
    breaks it too; a warning for a rule the next commit may meet otherwise
    (`_MAY_PASS_NEXT`). The name rule is the distribution check's, and a rule asking
    for what ELF files carry is not judged of a wheel whose image records none of them.
    Nothing is judged of an image wheelpin published under today's rules (its wheels
    passed them), nor of one not read or holding no wheel (the pinned check says which);
    one passing every rule judged is one ok check, which names them "the other rules" where
    the distribution check refused the name (`name_refused`): "passes" is not said of a
    wheel a problem line above refuses."""
    from ..core.checks.component import checked_wheels, component_rules

    if info is None or not info.wheels:
        return
    name, where = component.name, f"{state.file}:{state.line}"
    asked = f"the wheels of {state.image} against today's [wheel] rules"
    what = "wheel" if len(info.wheels) == 1 else f"{len(info.wheels)} wheels"
    if _published_under_todays_rules(component, info):
        yield Check(
            name,
            "rules",
            asked,
            OK,
            f"{name}: {where}: the pinned image's {what} passed today's [wheel] rules when wheelpin published it "
            f"(its rules digest {info.annotations.get(ANNOTATION_RULES)} is today's)",
        )
        return
    revision = info.annotations.get(REVISION) or info.labels.get(REVISION)
    unknown = {wheel.file for wheel in info.wheels if wheel.needed is None}
    try:
        rules = component_rules(component, commit=revision if revision and is_full_commit(revision) else None)
        found = checked_wheels(component, [wheel.as_report() for wheel in info.wheels], rules)
    except ValueError:  # a record no wheel has (a version or arch that does not parse): the pass reads the wheel
        return
    broken: dict[WheelCheck[Any], list[str]] = {}
    for check, problem in found:
        if check is None or isinstance(check, NameCheck) or (check.wants_elf and problem.file in unknown):
            continue
        broken.setdefault(check, []).append(str(problem))
    for check, texts in broken.items():
        said = "; ".join(dict.fromkeys(texts))
        later = _MAY_PASS_NEXT.get(check.name)
        yield Check(
            name,
            "rules",
            asked,
            WARNING if later else PROBLEM,
            f"{name}: {where}: today's wheel.{check.field} refuses the pinned image's {what}: {said}; "
            + (later or "the pass refuses its next build if it makes wheels like these"),
        )
    if not broken:
        rules_said = "other [wheel] rules (all but wheel.distribution)" if name_refused else "[wheel] rules"
        yield Check(
            name,
            "rules",
            asked,
            OK,
            f"{name}: {where}: the pinned image's {what} {'passes' if len(info.wheels) == 1 else 'pass'} today's "
            f"{rules_said}, judged from its {info.metadata_from}",
        )


def _sha256(component: Component, state: PinState, info: ImageInfo | None) -> Check | None:
    """Whether the pin's sha256 ARG has one wheel to take in the image it pins today, by the
    rule a pass's bump follows (core/pins/sha256.py): several wheels answering its key are
    where the pass's proposal stops, so the image the next pass builds the same way would be
    refused too. That is a forecast, made only of an image wheelpin published under the
    component's rules as they are now (its rules digest): one another tool pushed, or made
    under other rules, says nothing of the wheels the next build makes. Read from the pinned
    check's read, not asked again. None, no check, where the pinned image tells nothing to
    judge: it was not read (the pinned check says why), its wheels are said only by its
    layers not read yet, several answer and it is no forecast, or it holds no wheel of that
    key (the next one may: a pin moving to a new python tag). One wheel answering
    is fine only where the ARG holds its sha256 already (as the pin's format reads it,
    core/pins/bump.py), since the Dockerfile's build checks the wheel it copies against it
    today: another value is a problem the bump to the same image mends."""
    arg, python_tag = state.pin.sha256_arg, state.pin.python_tag
    assert arg is not None
    if info is None or info.metadata_from == "unread":
        return None
    name, where = component.name, f"{state.file}:{state.sha256_line}"
    wheel = f"one {python_tag} wheel" if python_tag else "one wheel"
    asked = f"the {python_tag or 'only'} wheel of {state.image} for {arg}"
    answer = wheel_sha256s(info.wheels).get(python_tag)
    if answer is None:
        return None
    if isinstance(answer, Several):
        if not _published_under_todays_rules(component, info):
            return None
        sentence = ambiguity(where, arg, python_tag, answer, image="the pinned image")
        return Check(name, "sha256", asked, PROBLEM, f"{name}: {sentence}")
    written = state.sha256
    if written is not None and written.lower() != answer:  # sha256sum -c reads hex of either case
        return Check(
            name,
            "sha256",
            asked,
            PROBLEM,
            f"{name}: {where}: ARG {arg} holds {_short(written)}, but the pinned image's "
            f"{python_tag + ' ' if python_tag else ''}wheel has sha256 {_short(answer)}, so the build's "
            f"sha256 check of that wheel fails: `wheelpin pins bump --component {shlex.quote(name)} "
            f"--image {shlex.quote(state.image)}` writes the pin and its sha256 from that image",
        )
    return Check(name, "sha256", asked, OK, f"{name}: {where}: the pinned image holds {wheel} and {arg} is its sha256")


def _short(sha256: str) -> str:
    """A sha256 said to a person: its first 12 hex digits (a longer value cut visibly)."""
    if not sha256:
        return "an empty value"
    return sha256 if len(sha256) <= 12 else f"{sha256[:12]}…"


def _digest_held(store: ImageStore, reference: str) -> str | None:
    """The digest `reference` names in `store`, asked of the store itself (a HEAD to a
    registry, never the cache folder, which keeps what a registry may have deleted since);
    None when the store does not hold it."""
    if isinstance(store, RegistryRepository):
        return store.client.manifest_digest(store.repository, reference)
    if reference.startswith("sha256:"):
        return reference if store.has_blob(reference) else None
    return store.tag_digest(reference)


def _consumer(
    loaded: LoadedConfig, component: Component, infos: list[ImageInfo], registries: Registries, *, silent: bool
) -> Check:
    """The consuming image, named by the config or by the Dockerfile, resolved for the
    wheels' architecture as the pass resolves it: the one the pinned wheels name; when they
    name none (none read, or pure Python), the build decides, and an index is resolved to
    its one linux image, or left to the build when it has several (loop/consumers.py). A
    platform pip there refuses the pinned wheels for is a problem: the pass refuses the
    wheels its next build makes alike, as the rules check forecasts of a rule broken.
    `silent`: the registry of `image.repository` did not answer its tag list, so a consuming
    image in that registry is not asked for."""
    from ..core.image.consumer import reference_in  # the consumer checks' module: loaded for a component with one
    from ..loop.consumers import Resolved, platform_said

    consumer, name = component.consumer, component.name
    assert consumer is not None
    file = consumer.file or component.pins[0].file
    try:
        reference = consumer.image or reference_in(
            consumer, (loaded.root / file).read_text(encoding="utf-8"), where=file
        )
        target = ImageRef.parse(reference)
        pinned = tuple(wheel.file for info in infos for wheel in info.wheels)
        architecture = named_architecture(pinned)
    except (OSError, UnicodeDecodeError, ValueError, ImageRefError) as exc:
        return Check(name, "consumer", f"the consuming image in {file}", PROBLEM, f"{name}: consumer: {exc}")
    store = registries.store(target)
    named = reference_of(target)
    assert named is not None  # ImageRef.parse gives a tag or a digest
    platform = architecture or "the built wheels' architecture"  # the build decides (loop/consumers.py)
    asked = f"the manifest and config of {store.name}@{named} ({platform})"
    own = registries.store(ImageRef.parse(component.image.repository)) if silent else None
    if isinstance(store, RegistryRepository) and isinstance(own, RegistryRepository):
        if store.client.host == own.client.host:
            return Check(
                name,
                "consumer",
                asked,
                UNANSWERED,
                f"{name}: the consuming image {reference} was not asked for: its registry {store.client.host} "
                f"did not answer the tag list of {own.name}",
            )
    try:
        if _digest_held(store, named) is None:
            return Check(
                name,
                "consumer",
                asked,
                PROBLEM,
                f"{name}: the consuming image {reference} is not in its registry (404)",
            )
        resolved = resolve_consumer(store, named, architecture=architecture)
    except WheelpinError as exc:
        return _failed(name, "consumer", asked, _who(store), f"the consuming image {reference}", exc)
    one = Resolved(resolved, pinned, architecture)
    said = platform_said([one], built=False)
    if one.refusal() is not None:  # a forecast the pass makes true after the build, as the rules check's
        return Check(
            name,
            "consumer",
            asked,
            PROBLEM,
            f"{name}: the consuming image {reference} resolves to {resolved.name}; its platform: {said}; "
            "the pass refuses its next build if it makes wheels like these",
        )
    if isinstance(resolved, ConsumerPlatforms):
        return Check(
            name,
            "consumer",
            asked,
            OK,
            f"{name}: the consuming image {reference} is {resolved.name}; its platform: {said}",
        )
    return Check(
        name,
        "consumer",
        asked,
        OK,
        f"{name}: the consuming image {reference} resolves to "
        f"{resolved.name} ({len(resolved.layers)} layer(s), read by the pass)"
        + (f"; its platform: {said}" if said else ""),
    )


def _who(store: ImageStore) -> str:
    if isinstance(store, RegistryRepository):
        return f"the registry {store.client.host}"
    return f"the OCI layout folder {store.name.removeprefix('oci:')}"


def workflow_checks(loaded: LoadedConfig, platform: Platform, repository: str) -> list[Check]:
    """Each `build.workflow`'s file on `repository`'s base branch, read through `platform`
    as the pass reads that branch: a workflow missing there is never dispatched."""
    components = [component for component in loaded.config.components if isinstance(component.build, ActionsBuild)]
    branch = loaded.config.defaults.base_branch
    checks: list[Check] = []
    try:
        base = platform.resolve(f"refs/heads/{branch}")
    except WheelpinError as exc:
        return [
            _failed(
                c.name,
                "workflow",
                f"the branch {branch} of {repository}",
                f"GitHub ({repository})",
                f"its branch {branch}",
                exc,
            )
            for c in components
        ]
    for component in components:
        assert isinstance(component.build, ActionsBuild)
        name, workflow = component.name, component.build.workflow
        path = workflow_path(workflow)
        asked = f"{path or workflow} on {repository}'s branch {branch}"
        if base is None:
            checks.append(
                Check(
                    name,
                    "workflow",
                    asked,
                    PROBLEM,
                    f"{name}: {repository} has no branch {branch} "
                    "(defaults.base_branch), where the pass reads the pins and dispatches the build",
                )
            )
            continue
        if path is None:  # a workflow id: GitHub knows it, no file name to look for (offline validate said so)
            continue
        try:
            text = platform.read_file(base, path)
        except WheelpinError as exc:
            checks.append(_failed(name, "workflow", asked, f"GitHub ({repository})", path, exc))
            continue
        checks.append(
            Check(name, "workflow", asked, OK, f"{name}: {path} is on {repository}'s branch {branch}")
            if text is not None
            else Check(
                name,
                "workflow",
                asked,
                PROBLEM,
                f"{name}: {path} is not on {repository}'s branch "
                f"{branch}, where the pass dispatches it (build.workflow)",
            )
        )
    return checks


def _failed(name: str, check: str, asked: str, who: str, what: str, exc: WheelpinError) -> Check:
    """A check an error ended: unanswered for the pass's transient failures (`who` did not
    answer), else a problem (credentials refused, a malformed or missing document, a TLS
    handshake that failed)."""
    if isinstance(exc, TransientError):
        return Check(name, check, asked, UNANSWERED, f"{name}: {who} did not answer for {what}: {exc.message}")
    return Check(name, check, asked, PROBLEM, f"{name}: asking {who} for {what} failed: {exc.message}")

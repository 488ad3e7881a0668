"""`wheelpin image publish WHEEL… --to REF`, `wheelpin image show REF` and `wheelpin image check
WHEEL… --consumer REF`."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..adapters import logs
from ..adapters.imageread import ImageInfo, read_image
from ..adapters.imagestore import ImageStore, reference_of
from ..adapters.inspectpool import inspect_wheel
from ..adapters.provenance import Attached, attach_provenance, attached_to, facts_of, statement_summary, verify_attached
from ..adapters.publisher import publish
from ..adapters.smoke import smoke_said, smoke_wheels
from ..app.settings import Settings
from ..app.wiring import Registries, signing_key, target_of
from ..core.checks.commit import tag_commit_problems
from ..core.checks.component import Problem, check_wheels, component_rules, summary
from ..core.checks.digest import rules_digest
from ..core.checks.rules import WheelRules
from ..core.decide.revision import is_full_commit
from ..core.errors import UsageError, VerificationError, WheelpinError, doing
from ..core.image.consumer import ConsumerReport, check, conflicts_with, wheel_rocm, wrong_platform
from ..core.image.oci import WheelEntry
from ..core.image.reference import ImageRef, LayoutTarget
from ..core.proposal.requirements import Conflict
from ..core.sizes import size_text
from ..core.wheel.amdgpu import TargetId
from ..loop.consumers import Consumers, libraries_found
from .output import emit_json, emit_text
from .publishtrust import Trusted, judge_published
from .repo import load

log = logs.get_logger("wheelpin.image")


@dataclass(frozen=True, kw_only=True)
class PublishOptions:
    wheels: tuple[Path, ...]
    to: str
    component: str | None = None
    config: Path | None = None
    repo: Path | None = None
    revision: str | None = None
    source: str | None = None
    require_archs: tuple[str, ...] = ()
    mount_from: str | None = None
    json: bool = False


def publish_command(options: PublishOptions, settings: Settings) -> int:
    target = target_of(options.to)
    tag = getattr(target, "tag", None)
    if tag is None or getattr(target, "digest", None):
        raise UsageError(f"{options.to}: publish to a tag (REF:tag), not a digest")
    revision = options.revision.strip().lower() if options.revision is not None else None
    if revision is not None and not is_full_commit(revision):
        # the image records it for good, and a pass finds the commit's build by it
        raise UsageError(
            f"--revision {options.revision} is not a whole commit: give all 40 hex of the commit the wheels were "
            f"built from (`git rev-parse {options.revision}` in the upstream's repository prints them)"
        )
    if isinstance(target, LayoutTarget):
        check_layout_folder(Path(target.folder))
    component = loaded = None
    source = options.source
    if options.component is not None:
        loaded = load(config=options.config, repo=options.repo, check_files=False)
        component = loaded.config.get(options.component)
        if component is None:
            raise UsageError(f"{loaded.path}: {loaded.config.unknown_components([options.component])}")
        rules = component_rules(component, commit=revision)
        source = source or component.upstream.repo
    else:
        try:
            rules = WheelRules(
                require_archs=tuple(TargetId.parse_known(a) for a in options.require_archs),
                expect_commit=revision,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    reports = [inspect_wheel(wheel) for wheel in options.wheels]
    found = check_wheels(component, reports, rules) + [
        Problem("commit", text) for text in tag_commit_problems(tag, reports)
    ]
    if found:
        raise VerificationError(
            f"nothing published: {summary(found, wheels=len(reports))}", problems=tuple(map(str, found))
        )
    key = signing_key(settings)  # a key that cannot be used is said before anything is pushed
    said = _smoke(component.wheel.smoke, options.wheels) if component and component.wheel.smoke else []
    # who built the wheels, judged as a pass judges them before it publishes
    trusted = judge_published(loaded, component, reports, settings) if loaded and component else Trusted()
    if trusted.judgement.refused:
        refused = trusted.judgement.refused
        raise VerificationError(f"nothing published: {refused}", problems=(refused,))
    registries = Registries(settings)
    readers = Registries(settings, anonymous=True)
    store = registries.store(target)
    rules_of = rules_digest(component) if component else None
    with doing(f"publishing {options.to}"):
        result = publish(
            store,
            tag,
            list(options.wheels),
            reports,
            source=source,
            revision=revision,
            component=component.name if component else None,
            rules=rules_of,
            reader=_anonymous_if_public(readers, target),
            mount_from=options.mount_from,
        )
    with doing(f"attaching the provenance of {result.ref}"):
        facts = facts_of(
            result,
            source=source,
            revision=revision,
            component=component.name if component else None,
            rules=rules_of,
            build=f"wheels given to `wheelpin image publish` on {socket.gethostname()}",
            smoke=said,
        )
        attached, sent = attach_provenance(store, facts, key)
    if options.json:
        emit_json(
            {
                **result.to_json(),
                "smoke": said,
                "verification": list(trusted.judgement.verification),
                "notes": list(trusted.notes),
                "attached": [item.to_json() for item in attached],
                "attached_bytes_uploaded": sent,
            }
        )
    else:
        emit_text(result.ref)
        emit_text(f"{result.status}: {len(result.wheels)} wheel(s), {size_text(result.bytes_uploaded)} uploaded")
        emit_text(attached_line(attached))
        for line in said:
            emit_text(line)
        for line in trusted.judgement.verification:
            emit_text(f"✅ {line}")
        for line in trusted.notes:
            emit_text(f"⚠️ {line}")
    return 0


def attached_line(attached: list[Attached]) -> str:
    """One line of what the publish attached (or found attached already)."""
    kinds = ", ".join(f"{item.kind} ({'signed' if item.signed else 'unsigned'}, {item.status})" for item in attached)
    return f"attached: {kinds}"


def _smoke(command: str, wheels: tuple[Path, ...]) -> list[str]:
    """`wheel.smoke` on the exact wheels before they are published, as a pass runs it
    (loop/execute.py): a failure publishes nothing; what passed, and each python tag with
    no interpreter here, is said."""
    smoked = smoke_wheels(command, list(wheels))
    if smoked.failed:
        raise VerificationError(
            f"smoke test failed, nothing published: {'; '.join(smoked.failed)}", problems=tuple(smoked.failed)
        )
    return smoke_said(command, smoked)


def check_layout_folder(folder: Path) -> None:
    """UsageError, before anything is written, when `oci:PATH` cannot become a layout folder:
    PATH (or the nearest parent that exists) is not a directory, or cannot be written."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"oci:{folder}: {existing} is not a directory; name a folder for the image layout")
    if not os.access(existing, os.W_OK | os.X_OK) or not _writable(existing):
        raise UsageError(f"oci:{folder}: {existing} cannot be written; name a folder wheelpin may write")


def _writable(folder: Path) -> bool:
    """Whether a file can be created in `folder` (os.access says yes to root on a read-only mount)."""
    try:
        probe = folder / f".wheelpin-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError:
        return False
    return True


def _anonymous_if_public(readers: Registries, target: ImageRef | LayoutTarget) -> ImageStore | None:
    """A reader that reads back anonymously, if the repository lets it (else None)."""
    if not isinstance(target, ImageRef):
        return None
    store = readers.store(target)
    try:
        store.tag_digest(target.tag or "latest")
    except WheelpinError:  # private, or not readable anonymously: read back with credentials
        return None
    return store


def show_command(*, ref: str, json: bool, settings: Settings) -> int:
    target = target_of(ref)
    reference = reference_of(target)
    if reference is None:
        raise UsageError(f"{ref}: name a tag or a digest (REF:tag or REF@sha256:…)")
    store = Registries(settings).store(target)
    with doing(f"reading {ref}"):
        info = read_image(store, reference)
    with doing(f"listing what is attached to {ref}"):
        attached = attached_to(store, info.digest)
    if json:
        emit_json({**info.to_json(), "attached": [item.to_json() for item in attached]})
    else:
        emit_text(show_text(info, attached))
    return 0


def verify_command(*, ref: str, key: Path, json: bool, settings: Settings) -> int:
    """`wheelpin image verify REF --key PUB`: an attached Sigstore bundle whose DSSE signature
    the key made over an in-toto statement with a SLSA provenance predicate naming this
    image; exit 1, in one sentence, when there is none."""
    from ..core.provenance.dsse import load_public_key

    target = target_of(ref)
    reference = reference_of(target)
    if reference is None:
        raise UsageError(f"{ref}: name a tag or a digest (REF:tag or REF@sha256:…)")
    try:
        public = load_public_key(key.read_bytes(), str(key))
    except OSError as exc:
        raise UsageError(f"{key}: cannot read the public key ({exc.strerror})") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    store = Registries(settings).store(target)
    with doing(f"verifying the provenance of {ref}"):
        digest = store.tag_digest(reference) if not reference.startswith("sha256:") else reference
        if digest is None:
            raise VerificationError(f"{store.name}:{reference}: no such tag")
        summary_of = statement_summary(verify_attached(store, digest, public))
    if json:
        emit_json({"image": f"{store.name}@{digest}", "verified": True, **summary_of})
    else:
        parameters = summary_of["external_parameters"]
        source = f"{parameters.get('repository', 'an unnamed repository')}@{parameters.get('revision', '?')}"
        emit_text(
            f"{store.name}@{digest}: signed provenance verified ({summary_of['predicate_type']}), "
            f"built from {source}" + (f" by {summary_of['build']}" if summary_of.get("build") else "")
        )
    return 0


def show_text(info: ImageInfo, attached: Sequence[Attached] = ()) -> str:
    lines = [
        f"{info.name}@{info.digest}",
        f"  size {size_text(info.size)} (config and layers, as pulled)",
        f"  metadata from {info.metadata_from} ({size_text(info.bytes_fetched)} fetched)",
    ]
    for key, value in sorted({**info.labels, **info.annotations}.items()):
        if key != "io.wheelpin.wheels":
            lines.append(f"  {key} = {value}")
    for wheel in info.wheels:
        lines.append(f"  {wheel.file}")
        installed = size_text(wheel.installed) if wheel.installed is not None else "not recorded"
        lines.append(f"    sha256 {wheel.sha256}  size {size_text(wheel.size)}  installed {installed}")
        if wheel.variant is not None:
            lines.append(f"    variant {wheel.variant}: {', '.join(wheel.variant_properties) or 'no properties'}")
        lines.append(
            f"    tags {', '.join(wheel.tags) or 'none'}  GPU archs {wheel.archs_text}"
            + (f" (in only some GPU libraries: {', '.join(wheel.archs_partial)})" if wheel.archs_partial else "")
        )
        if wheel.needed is not None:
            lines.append(f"    needs {', '.join(wheel.needed) or 'no shared library'}")
        lines += [f"    requires {requirement}" for requirement in wheel.requires_dist]
    lines += [f"  attached {item.text()}" for item in attached]
    return "\n".join(lines)


def check_command(*, wheels: tuple[Path, ...], consumer: str, json: bool, settings: Settings) -> int:
    """`wheelpin image check WHEEL… --consumer REF`: the wheels against the image that will
    consume them, read from its layers as a pass reads it (loop/consumers.py): for each
    architecture the wheels name, its image; for pure-Python wheels, each linux image of
    an index. Exit 1 when the image is another platform than a wheel's, a library is
    missing there, or the image's installed packages conflict with the wheels; the
    requirements the image has no distribution for are said (`absent`), and are no
    failure. `--json`: the first image's report, and each one's under `images`."""
    target = target_of(consumer)
    reference = reference_of(target)
    if isinstance(target, LayoutTarget) or reference is None:
        raise UsageError(f"{consumer}: name the consuming image in a registry, by tag or digest")
    reports = [inspect_wheel(wheel) for wheel in wheels]
    consumers = Consumers(Registries(settings), settings.cache_dir)
    images = consumers.images_of(consumer, target, [report.filename for report in reports])
    failed = False
    said: list[dict[str, object]] = []
    lines: list[str] = []
    for image, files in images:
        checked = [report for report in reports if report.filename in files]
        wrong = wrong_platform(image.name, image.platform, files)
        if wrong is not None:  # its files are another platform's: nothing else is checked
            failed = True
            said.append({"image": image.name, "platform": wrong})
            lines += [f"Against {image.name}:", f"  {wrong}"]
            continue
        found = check(image.name, image.files, checked, checked)
        conflicts = conflicts_with(found, checked, image.files)
        built = wheel_rocm([r.version for r in checked], [n for r in checked for e in r.elf for n in e.needed])
        failed = failed or bool(found.unresolved or conflicts or found.dependents)
        said.append(
            {
                **found.to_json(),
                "conflicts": [c.to_json() for c in conflicts],
                "wheel_rocm": built,
                "layers_read": image.layers_read,
                "layers_cached": image.layers_cached,
                "platform": None,
            }
        )
        lines += against_lines(
            found,
            conflicts,
            built,
            f"{image.layers_read} layers read, {image.layers_cached} cached",
            libraries=libraries_found([WheelEntry.of_report(report) for report in checked]),
        )
    if json:
        emit_json({**said[0], "images": said})
    else:
        emit_text("\n".join(lines))
    return 1 if failed else 0


def against_lines(
    found: ConsumerReport,
    conflicts: list[Conflict],
    rocm: str | None,
    read: str,
    *,
    libraries: str,
) -> list[str]:
    """What `image check` prints: the image, then one line per problem; with none, that
    nothing conflicts and `libraries` (loop/consumers.libraries_found: what was found of the
    libraries the wheels need, the same words as the proposal's). Then what is only said,
    each line marked `(info)` so that no reader takes it for one more problem: the ROCm the
    wheel is built for beside the image's, the requirements new to the image."""
    lines = [f"Against {found.image} (Python {found.python or 'unknown'}, ROCm {found.rocm or 'unknown'}; {read}):"]
    installed = found.installed
    for conflict in conflicts:
        name = conflict.constraint.split("==", 1)[0]
        lines.append(f"  {name} {installed.get(name, '?')} installed, the wheel asks {conflict.requirement}")
    lines += [f"  {d.dependent} needs {d.requirement}: {d.why}" for d in found.dependents]
    lines += [f"  {problem}" for problem in found.unresolved]
    if len(lines) == 1:
        packages = f"{len(installed)} installed package{'' if len(installed) == 1 else 's'}"
        lines.append(f"  no conflict with its {packages}; {libraries}")
    if rocm is not None:
        lines.append(f"  (info) the wheel is built for ROCm {rocm}; the image has ROCm {found.rocm or 'unknown'}")
    if found.absent:  # not a failure: pip installs them with the wheel, but the image grows by them
        lines.append(f"  (info) new to the image: {', '.join(found.absent)}")
    return lines

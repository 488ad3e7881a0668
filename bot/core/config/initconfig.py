"""What `wheelpin init` proposes for one component, from the wheel pins it found
(core/pins/scan.py) and what their pinned image holds, and the commented TOML it writes.
Pure: the command reads the files and the images, and asks for what is not inferred.

Each value says where it came from, as a comment beside it in the file: the pin's file and
line, the wheel in the image, the option given. The text is TOML 1.0 (inline tables on one
line; `[component.wheel]` and `[[component.pins]]` as tables of their own), so any TOML
reader and an editor's schema check (its first line, `#:schema`) read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from ... import SCHEMA_URL
from ..checks.wheelset import python_tags_of
from ..decide.revision import commit_hints
from ..errors import UsageError
from ..image.oci import SOURCE, WheelEntry
from ..image.reference import short_digest
from ..pins.formats.base import FoundPin
from ..wheel.amdgpu import TargetId
from ..wheel.localversion import ABI_NAMES, segment_name, segments
from ..wheel.rocmlibs import ROCM_RUNTIMES, library_of
from .model import PIN_KINDS
from .templates import infer_tag_template

DEFAULT_TAG = "{component}-v{version_base}-g{sha8}"  # when the pinned tag gives no template


@dataclass(frozen=True)
class PinnedImage:
    """One wheel pin and what its image holds (read as `image show` reads it)."""

    pin: FoundPin
    wheels: tuple[WheelEntry, ...]
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    metadata_from: str  # "annotations" | "labels" | "layers"

    @property
    def distribution(self) -> str:
        return self.wheels[0].name

    @property
    def version(self) -> str:
        return self.wheels[0].version


def distributions(image: PinnedImage) -> set[str]:
    return {str(canonicalize_name(wheel.name)) for wheel in image.wheels}


def component_name(distribution: str) -> str:
    """A component's name from its distribution: `mooncake-transfer-engine-rocm`."""
    return str(canonicalize_name(distribution))[:64]


def group(images: Sequence[PinnedImage]) -> dict[str, list[PinnedImage]]:
    """The pins of each component: one per distribution, in the order first found."""
    groups: dict[str, list[PinnedImage]] = {}
    for image in images:
        groups.setdefault(component_name(image.distribution), []).append(image)
    return groups


@dataclass(frozen=True)
class Upstream:
    repo: str
    branch: str | None = None
    tags: str | None = None
    said: str = ""  # where the repository came from


@dataclass(frozen=True)
class Build:
    command: str | None = None
    workflow: str | None = None
    inputs: Mapping[str, str] = field(default_factory=dict)
    said: str = ""  # where it came from, when not from an option


@dataclass(frozen=True)
class PinDraft:
    file: str
    kind: str  # the pin format (core/pins/formats/api.py)
    key: str  # its config key (`image_arg`), which says where the pin is…
    named: str  # …and its value
    sha256_arg: str | None
    python_tag: str | None
    said: str

    def table(self) -> dict[str, str]:
        """The pin's table, as the config writes it: `kind` only for a format its key does
        not choose by itself (those older configs wrote are chosen by their key)."""
        said_kind = self.kind if PIN_KINDS[self.kind].model_fields["kind"].is_required() else None
        table = {
            "file": self.file,
            "kind": said_kind,
            self.key: self.named,
            "sha256_arg": self.sha256_arg,
            "python_tag": self.python_tag,
        }
        return {key: value for key, value in table.items() if value is not None}


@dataclass
class Draft:
    """One component as `init` proposes it, with what each value came from."""

    name: str
    distribution: str
    version: str
    repository: str
    tag: str
    commit: str | None
    version_carries_commit: bool
    python_tags: list[str]
    archs: list[str]
    local_segments: list[str]
    pins: list[PinDraft]
    consumer: dict[str, str] | None
    source: str | None  # the image's org.opencontainers.image.source, when it names one
    said: dict[str, str]  # key → where its value came from
    require_needed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "commit": self.commit,
            "image": {"repository": self.repository, "tag": self.tag},
            "wheel": {
                "python_tags": self.python_tags,
                "archs": self.archs,
                "local_segments": self.local_segments,
                "version_carries_commit": self.version_carries_commit,
                "require_needed": self.require_needed,
            },
            "pins": [pin.table() for pin in self.pins],
            "consumer": self.consumer,
            "source": self.source,
            "said": self.said,
        }


def propose(name: str, images: Sequence[PinnedImage]) -> Draft:
    """What the pinned images say of component `name`: UsageError, in one sentence, when a
    pin cannot be told apart (a sha256 ARG naming no wheel of a several-wheel image)."""
    first = images[0]
    pin, wheels = first.pin, first.wheels
    ref = pin.ref
    version = first.version
    read_from = {"annotations": "wheelpin's annotations", "labels": "its labels", "layers": "its layers"}.get(
        first.metadata_from, first.metadata_from
    )
    files = (
        wheels[0].file
        if len(wheels) == 1
        else f"its {len(wheels)} wheels, " + ", ".join(sorted(tag for w in wheels for tag in python_tags_of(w.file)))
    )
    said = {
        "distribution": f"from {pin.where}, the image's wheel {first.distribution} {version} "
        f"(read from {read_from}: {files})"
    }
    hints = commit_hints(
        annotations=first.annotations,
        labels=first.labels,
        tag=ref.tag,
        template="",
        component=name,
        versions=[w.version for w in wheels],
    )
    commit = hints[0] if hints else None
    carries = bool(commit_hints(annotations={}, labels={}, tag=None, template="", component=name, versions=[version]))
    template = infer_tag_template(ref.tag, version=version, commit=commit, component=name) if ref.tag else None
    if template is not None:
        said["image.tag"] = f"from the pinned tag {ref.tag} and the wheel's version {version}"
    else:
        template = DEFAULT_TAG
        said["image.tag"] = (
            f"the pinned tag {ref.tag or '(none)'} gives no template carrying the commit; "
            "the first bump publishes under this one"
        )
    said["image.repository"] = f"from {pin.where}"
    python_tags = sorted({tag for w in wheels for tag in python_tags_of(w.file)}) if len(wheels) > 1 else []
    if python_tags:
        said["wheel.python_tags"] = f"the image holds {len(wheels)} wheels, one per python tag"
    archs = _archs(wheels)
    said["wheel.archs"] = (
        f"the GPU targets every HIP library of {files} carries"
        if archs
        else f"the image does not record the GPU targets of {files} (an older wheelpin's): add those it must carry"
        if all(w.needed is None for w in wheels)
        else f"no GPU code in {files}: add the archs it must carry, if any"
    )
    local = [
        s
        for s in segments(version)
        if segment_name(s) in ABI_NAMES or (ref.tag is not None and (s in ref.tag or s.replace(".", "") in ref.tag))
    ]
    if local:
        said["wheel.local_segments"] = (
            f"the ABI segments of the local version {version} "
            "(the torch and C++ ABI it binds to, and those the tag names)"
        )
    required, needed = _required(wheels)
    if required:
        said["wheel.require_needed"] = (
            f"the ROCm runtime every wheel of the image links (DT_NEEDED {', '.join(needed)}): a build whose "
            "wheels stop linking it (its C extension dropped, or built without ROCm) is refused"
        )
    pins: list[PinDraft] = []
    for image in images:
        pins += _pin_drafts(image, multiple=len(wheels) > 1)
    consumer, consumer_said = _consumer(pin)
    if consumer_said:
        said["consumer"] = consumer_said
    if commit:
        said["commit"] = commit
    source = first.annotations.get(SOURCE) or first.labels.get(SOURCE)
    return Draft(
        name,
        first.distribution,
        version,
        ref.repository,
        template,
        commit,
        carries,
        python_tags,
        archs,
        local,
        pins,
        consumer,
        source,
        said,
        required,
    )


def _archs(wheels: Sequence[WheelEntry]) -> list[str]:
    """The GPU targets every wheel carries in all its GPU libraries, as LLVM names them."""
    common: list[str] | None = None
    for wheel in wheels:
        whole = [arch for arch in wheel.archs if arch not in wheel.archs_partial]
        common = whole if common is None else [arch for arch in common if arch in whole]
    known = []
    for arch in common or []:
        try:
            known.append(str(TargetId.parse_known(arch)))
        except ValueError:
            continue
    return known


def _required(wheels: Sequence[WheelEntry]) -> tuple[list[str], list[str]]:
    """The ROCm runtimes (libamdhip64, libhsa-runtime64) every wheel's ELF files need, as
    `require_needed` globs of any version (`libamdhip64.so*`: a move to the next ROCm keeps
    it), and the DT_NEEDED entries they were read from. Only the runtimes: any wheel with
    HIP code links them, while a math library (librocblas) a new commit stops using is no
    broken wheel. None when a wheel's DT_NEEDED is not recorded, or one needs none (pure
    Python), or carries its own copy (auditwheel's grafted `libamdhip64-5f3a9c1e.so.6`)."""
    common: set[str] | None = None
    runtime_of: dict[str, str] = {}  # DT_NEEDED entry → the runtime it names
    for wheel in wheels:
        if wheel.needed is None:
            return [], []
        found = {
            entry: read.name
            for entry in wheel.needed
            if (read := library_of(entry)) is not None and read.hash is None and read.name in ROCM_RUNTIMES
        }
        runtime_of |= found
        common = set(found.values()) if common is None else common & set(found.values())
    kept = sorted(common or ())
    return [f"{name}.so*" for name in kept], sorted(entry for entry, name in runtime_of.items() if name in kept)


def _pin_drafts(image: PinnedImage, *, multiple: bool) -> list[PinDraft]:
    pin = image.pin
    by_sha = {wheel.sha256: wheel for wheel in image.wheels}
    drafts = []
    for arg in pin.sha256_args:
        wheel = by_sha.get(arg.value)
        tag = arg.python_tag
        if tag is None and multiple and wheel is not None:
            tag = min(python_tags_of(wheel.file), default=None)
        if multiple and tag is None:
            raise UsageError(
                f"{pin.file}:{arg.line}: ARG {arg.name} holds the sha256 of none of the "
                f"{len(image.wheels)} wheels in {pin.reference}, and its name names no python tag "
                f"({arg.name}_CP312): say which wheel it pins, then run init again"
            )
        which = f"{tag} wheel" if multiple and tag else "wheel"
        said = (
            f"line {arg.line}: the sha256 of the {which} in the image"
            if wheel is not None
            else f"line {arg.line}: a sha256 of no wheel in the pinned image; the first bump corrects it"
        )
        drafts.append(PinDraft(pin.file, pin.kind, pin.key, pin.named, arg.name, tag if multiple else None, said))
    if not drafts:
        drafts.append(
            PinDraft(pin.file, pin.kind, pin.key, pin.named, None, None, f"line {pin.line}: {_short(pin.reference)}")
        )
    else:
        drafts[0] = PinDraft(
            **{**vars(drafts[0]), "said": f"line {pin.line}: {_short(pin.reference)}; " + drafts[0].said}
        )
    return drafts


def _short(reference: str) -> str:
    name, _, digest = reference.partition("@")
    return f"{name}@{short_digest(digest)}…" if digest else name


def _consumer(pin: FoundPin) -> tuple[dict[str, str] | None, str]:
    site = pin.consumer
    if site is None:
        return None, ""
    if site.from_arg:
        value = {"from_arg": site.from_arg}
    elif site.from_stage:
        value = {"from_stage": site.from_stage}
    else:
        value = {"image": site.image or ""}
    if site.file != pin.file:
        value["file"] = site.file
    return value, (
        f"from {site.file}:{site.line}: the stage that copies the wheel in is built on "
        f"{site.value}; its packages and libraries are checked against the wheel"
    )


# -- the text ----------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_string(text: str) -> str:
    """A TOML basic string: `"` and `\\` escaped, control characters as \\uXXXX (TOML 1.0,
    "String")."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 and char != "\t" or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _key(name: object) -> str:
    text = str(name)
    return text if _BARE_KEY.match(text) else toml_string(text)


def _line(key: str, value: object, comment: str | None = None) -> str:
    text = f"{_key(key)} = {toml_value(value)}"
    return text + (f"  # {_one_line(comment)}" if comment else "")


def _one_line(text: str) -> str:
    """A comment's text: one line, no control character (TOML 1.0 allows none but tab)."""
    return " ".join("".join("?" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text.replace("\n", " ")).split())


def render(draft: Draft, upstream: Upstream, build: Build, *, written_by: str) -> str:
    """The config's text: `#:schema` first, then the component with a comment per value."""
    header = [
        f"#:schema {SCHEMA_URL}",
        f"# wheelpin's config for this repository, written by `{written_by}` from the wheel pins",
        "# it found in the Dockerfiles; each value says where it came from. Check it with",
        "# `wheelpin config validate --online`, then see a pass's plan: `wheelpin reconcile --once --dry-run`.",
        "",
    ]
    return "\n".join(header) + "\n" + component_tables(draft, upstream, build)


def component_tables(draft: Draft, upstream: Upstream, build: Build) -> str:
    """The component's `[[component]]` table and its subtables, a comment per value: the
    whole of it in a new config, or what init adds to an existing one."""
    said = draft.said
    lines = [
        "[[component]]",
        _line("name", draft.name),
        f"# {_one_line(said['distribution'])}",
    ]
    ref = {"repo": upstream.repo, **({"branch": upstream.branch} if upstream.branch else {"tags": upstream.tags or ""})}
    lines.append(_line("upstream", ref, upstream.said or None))
    if build.command is not None:
        lines.append(
            _line(
                "build",
                {"command": build.command},
                "run in a clean checkout of each upstream commit; it writes the wheels to {out} ($WHEELPIN_OUT)",
            )
        )
    else:
        lines.append("# with publishes_image = true when the workflow pushes the image itself")
        lines.append(
            _line(
                "build",
                {"workflow": build.workflow or "", **({"inputs": dict(build.inputs)} if build.inputs else {})},
                build.said or "dispatched with each upstream commit",
            )
        )
    lines.append(f"# image.tag: {_one_line(said['image.tag'])}")
    lines.append(_line("image", {"repository": draft.repository, "tag": draft.tag}, said["image.repository"]))
    if draft.consumer is not None:
        lines.append(f"# {_one_line(said['consumer'])}")
        lines.append(_line("consumer", draft.consumer))
    else:
        lines.append(
            '# consumer = { from_arg = "BASE_IMAGE" }  # the image the wheel is installed into: '
            "none was found by digest or ARG"
        )
    lines += ["", "[component.wheel]", _line("distribution", draft.distribution)]
    if draft.python_tags:
        lines.append(_line("python_tags", draft.python_tags, said["wheel.python_tags"]))
    lines.append(f"# {_one_line(said['wheel.archs'])}")
    lines.append(_line("archs", draft.archs))
    if draft.local_segments:
        lines.append(f"# {_one_line(said['wheel.local_segments'])}")
        lines.append(_line("local_segments", draft.local_segments))
    if draft.require_needed:
        lines.append(f"# {_one_line(said['wheel.require_needed'])}")
        lines.append(_line("require_needed", draft.require_needed))
    if not draft.version_carries_commit:
        lines.append(
            _line(
                "version_carries_commit", False, f"its version {draft.version} names no commit (g<sha8>): the tag must"
            )
        )
    for pin in draft.pins:
        lines += ["", "[[component.pins]]", _line("file", pin.file, pin.said)]
        lines += [_line(key, value) for key, value in pin.table().items() if key != "file"]
    return "\n".join(lines) + "\n"

"""Placeholder templates of the config: image tags, build commands, workflow inputs.

`{sha}` the full commit, `{sha8}` its first 8 digits, `{version}` the wheel's version
with `+` written as `-` (OCI tags allow no `+`), `{version_base}` the public version
without its local part, `{out}` the folder a build leaves its wheels in, `{component}`
the component's name. A tag may also take values from the wheel's local version, so that
it cannot drift from its wheel: `{local_torch}` is `2.10` for a wheel carrying torch2.10,
`{local_torch_digits}` is `210` (core/wheel/localversion.py). Each field allows only the
placeholders it can fill.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass

from packaging.version import Version

from ..image.reference import TAG
from ..wheel.localversion import is_local_placeholder, local_value

TAG_FIELDS = frozenset({"sha", "sha8", "version", "version_base", "component"})
COMMAND_FIELDS = frozenset({"sha", "sha8", "out", "component"})
INPUT_FIELDS = frozenset({"sha", "sha8", "component"})
COMMIT_FIELDS = frozenset({"sha", "sha8"})

_PATTERNS = {
    "sha": "[0-9a-f]{40}",
    "sha8": "[0-9a-f]{8}",
    "version": "[A-Za-z0-9._-]+",
    "version_base": "[A-Za-z0-9.]+",
    "component": "[A-Za-z0-9._-]+",
}
# A long, real version (LMCache's ROCm builds), to prove a tag template fits 128 chars.
SAMPLE_VERSION = "0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"
SAMPLE_SHA = "05fc77a0" + "c" * 32


class TemplateError(ValueError):
    pass


def fields_of(template: str) -> list[str]:
    """The placeholder names of a template; TemplateError on `{` misuse or format specs."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TemplateError(f"template {template!r} is malformed ({exc})") from None
    names: list[str] = []
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise TemplateError(f"template {template!r}: placeholder {{{name}}} takes no format")
        names.append(name)
    return names


def check_fields(template: str, allowed: frozenset[str]) -> list[str]:
    names = fields_of(template)
    unknown = sorted(
        name for name in set(names) - allowed if not (allowed is TAG_FIELDS and is_local_placeholder(name))
    )
    if unknown:
        raise TemplateError(
            f"placeholder {{{unknown[0]}}} cannot be filled here (allowed: "
            + ", ".join(f"{{{n}}}" for n in sorted(allowed))
            + ")"
        )
    return names


def commit_values(sha: str, component: str) -> dict[str, str]:
    """The values every template of a component's build of `sha` may use."""
    return {"sha": sha, "sha8": sha[:8], "component": component}


@dataclass(frozen=True, kw_only=True)
class TagValues:
    sha: str
    component: str
    version: str | None = None

    def as_mapping(self) -> dict[str, str]:
        values = commit_values(self.sha, self.component)
        if self.version is not None:
            parsed = Version(self.version)
            values["version"] = str(parsed).replace("+", "-")
            values["version_base"] = parsed.public
        return values


def render(template: str, values: Mapping[str, str]) -> str:
    return template.format_map(dict(values))


def render_tag(template: str, values: TagValues) -> str:
    """The OCI tag a template gives; TemplateError when it is not a valid tag, or when a
    `{local_…}` placeholder names a segment the wheel's version does not carry."""
    mapping = values.as_mapping()
    for name in fields_of(template):
        if is_local_placeholder(name):
            value = local_value(values.version, name) if values.version is not None else None
            if value is None:
                raise TemplateError(
                    f"tag template {template!r}: placeholder {{{name}}} has no value, as "
                    f"version {values.version} carries no {_segment_of(name)} segment"
                )
            mapping[name] = value
    tag = render(template, mapping)
    if not TAG.match(tag):
        raise TemplateError(
            f"tag template {template!r} gives {tag!r}, which is not a valid OCI tag "
            "([A-Za-z0-9_][A-Za-z0-9._-]{0,127})"
        )
    return tag


def _segment_of(placeholder: str) -> str:
    return placeholder.removeprefix("local_").removesuffix("_digits")


def sample_tag(template: str, *, component: str, sha: str = SAMPLE_SHA) -> str:
    """The tag `template` gives a long real version (carrying every segment a `{local_…}`
    placeholder names, as `99.99`): a stand-in for a tag whose version is not known yet."""
    extra = "".join(f".{_segment_of(name)}99.99" for name in fields_of(template) if is_local_placeholder(name))
    return render_tag(template, TagValues(sha=sha, component=component, version=SAMPLE_VERSION + extra))


def validate_tag_template(template: str, *, component: str) -> None:
    """A tag template must always yield a valid OCI tag: check it on a long real version."""
    check_fields(template, TAG_FIELDS)
    sample_tag(template, component=component)


def render_known(template: str, values: Mapping[str, str]) -> str:
    """`template` with the placeholders `values` fill filled, and the others left as they
    are written (`{version}`): a tag as far as it is known before the build."""
    parts: list[str] = []
    for literal, name, _spec, _conversion in string.Formatter().parse(template):
        parts.append(literal)
        if name is not None:
            parts.append(values[name] if name in values else f"{{{name}}}")
    return "".join(parts)


def tag_pattern(template: str, *, component: str, sha: str | None = None) -> re.Pattern[str]:
    """A regex that the tags this template can give match (for `pins bump` and lookups);
    with `sha`, only the tags of that commit: the version is the only wildcard."""
    fixed = {"component": component}
    if sha is not None:
        fixed |= {"sha": sha, "sha8": sha[:8]}
    parts: list[str] = []
    for literal, name, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is not None:
            pattern = "[a-z0-9.]+" if is_local_placeholder(name) else _PATTERNS[name]
            parts.append(re.escape(fixed[name]) if name in fixed else f"({pattern})")
    return re.compile("^" + "".join(parts) + "$")


def commit_in_tag(template: str, tag: str, *, component: str) -> str | None:
    """The commit (40 hex digits, or 8 from `{sha8}`) a tag made by `template` names, or
    None when the tag does not fit the template or the template names no commit."""
    parts: list[str] = []
    named = False
    for literal, name, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is None:
            continue
        pattern = "[a-z0-9.]+" if is_local_placeholder(name) else _PATTERNS[name]
        if name in COMMIT_FIELDS and not named:
            pattern, named = f"(?P<commit>{pattern})", True
        elif name == "component":
            pattern = re.escape(component)
        parts.append(f"(?:{pattern})")
    match = re.fullmatch("".join(parts), tag) if named else None
    return match.group("commit") if match else None


def commit_only(template: str) -> bool:
    """Whether the tag follows from the commit alone (no version placeholder)."""
    fields = set(fields_of(template))
    return not {"version", "version_base"} & fields and not any(map(is_local_placeholder, fields))


def infer_tag_template(tag: str, *, version: str, commit: str | None, component: str) -> str | None:
    """The tag template that gives `tag` for a wheel of `version` built from `commit` (full
    or abbreviated hex), read back from a pinned tag: the first of `{sha}`, `{version}`,
    `{version_base}`, `{sha8}` found in it takes its place, the rest stays literal
    (`lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210` → `lmcache-v{version_base}-g{sha8}-rocm-torch210`).
    None when no template carrying the commit gives the tag back."""
    parsed = Version(version)
    values = {"version": str(parsed).replace("+", "-"), "version_base": parsed.public}
    if commit is not None and len(commit) == 40:
        values["sha"] = commit
    if commit is not None and len(commit) >= 8:
        values["sha8"] = commit[:8]
    template = tag.replace("{", "{{").replace("}", "}}")
    for name in ("sha", "version", "version_base", "sha8"):
        value = values.get(name)
        if value and value in template:
            template = template.replace(value, "{" + name + "}", 1)
    names = set(fields_of(template))
    if not names & COMMIT_FIELDS and not (
        "version" in names and "sha8" in values and f"g{values['sha8']}" in values["version"]
    ):
        return None
    sha = commit if commit is not None and len(commit) == 40 else (values.get("sha8", "") + "0" * 40)[:40]
    try:
        given = render_tag(template, TagValues(sha=sha, component=component, version=version))
    except TemplateError:
        return None
    return template if given == tag else None

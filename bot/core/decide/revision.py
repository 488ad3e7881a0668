"""Which upstream commit a pinned image was built from (docs/design.md §2, observe), for
images wheelpin did not publish too. Pure: `loop/observe.py` confirms a hint against the
upstream's history before it is believed.

In the order of their trust: the image's `org.opencontainers.image.revision` annotation,
then the same key among its config's labels (`docker build --label`, buildah), then the
commit the component's tag template puts in the tag (`lmcache-v0.5.6.dev98-g05fc77a0-…`
by `…-g{sha8}-…`), then the `g<hex>` local segment of its wheels' version (setuptools-scm
writes the commit so: `0.5.6.dev98+g05fc77a0`), then a `g<hex>` in the tag.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..config.templates import commit_in_tag
from ..image.oci import REVISION

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_FULL = re.compile(r"^[0-9a-f]{40}$")
# setuptools-scm's `g<hex>` node segment, in a local version or a tag (`…-g05fc77a0-…`)
_NODE = re.compile(r"(?:^|[^A-Za-z0-9])g([0-9a-f]{7,40})(?=$|[^A-Za-z0-9])")


def is_full_commit(value: str) -> bool:
    """`value` is a whole commit id (40 lowercase hex), as wheelpin records a revision."""
    return bool(_FULL.match(value))


def names_commit(revision: str | None, commit: str) -> bool:
    """The one rule for a recorded revision (an image's annotation or label, a hint, a
    `--commit`): it names `commit` when it is `commit` or an abbreviation of it, the first 7
    or more of its hex digits (git's shortest `--short`, setuptools-scm's `g<hex>`)."""
    if revision is None:
        return False
    value = revision.strip().lower()
    return bool(_HEX.match(value)) and commit.startswith(value)


def commit_hints(
    *,
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    tag: str | None,
    template: str,
    component: str,
    versions: Sequence[str],
) -> list[str]:
    """The commits (full or abbreviated hex) the image says it was built from, most trusted
    first, each once."""
    hints: list[str] = []
    for value in (annotations.get(REVISION), labels.get(REVISION)):
        if value and _HEX.match(value.strip().lower()):
            hints.append(value.strip().lower())
    if tag is not None:
        found = commit_in_tag(template, tag, component=component)
        if found:
            hints.append(found)
    for version in versions:
        hints += _NODE.findall(version.partition("+")[2].replace(".", "-"))
    if tag is not None:
        hints += _NODE.findall(tag)
    return list(dict.fromkeys(hints))

"""Which rules an image's wheels were verified against: a digest of the component's
`[wheel]` table and tag template, written into each image wheelpin publishes
(core/image/oci.py ANNOTATION_RULES) and compared by every pass that finds an image
(loop/observe.py), which needs no check loaded to do so."""

from __future__ import annotations

import hashlib

from ..config.model import Component

# The `[wheel]` fields when rules digests were first written.
_DIGESTED = (
    "distribution",
    "archs",
    "archs_wanted",
    "require_needed",
    "forbid_needed",
    "rocm",
    "allow_vendored_rocm",
    "python_tags",
    "version_carries_commit",
    "smoke",
    "local_segments",
)


def rules_digest(component: Component) -> str:
    """A digest of what a component's wheels are verified against (its `[wheel]` table and
    its tag template). wheelpin writes it into the images it publishes: an image found
    later is taken as verified only under the same rules, and is verified again, as an
    adopted one, under any other (a local_segments added since, an image someone else
    pushed with wheelpin's other annotations). A rule added to `[wheel]` since these
    digests were first written is in it only when set, so that an upgrade of wheelpin
    leaves the digests of the images it published as they were."""
    wheel = component.wheel
    later = {
        name
        for name in type(wheel).model_fields
        if name not in _DIGESTED and getattr(wheel, name) == type(wheel).model_fields[name].default
    }
    text = wheel.model_dump_json(exclude=later or None) + "\n" + component.image.tag
    return hashlib.sha256(text.encode()).hexdigest()[:16]

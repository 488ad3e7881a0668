"""The CycloneDX SBOM of a wheel image, made with cyclonedx-python-lib (CycloneDX 1.6
JSON).

The image is the BOM's `metadata.component` (type container, named by its digest); each
wheel is a library component: its name and version, a `pkg:pypi` purl naming the file,
its sha256, and wheelpin's facts as properties (python tags, GPU archs, DT_NEEDED,
Requires-Dist, installed bytes, a variant wheel's label and properties), named under
`wheelpin:` as CycloneDX's property taxonomy asks of a tool's own names. The serial
number is derived from the image digest and no timestamp is written, so the same image
gives the same bytes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

from cyclonedx.model import HashAlgorithm, HashType, Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from ..image.oci import WheelEntry, canonical_json

SBOM_TYPE = "application/vnd.cyclonedx+json"


def sbom_bytes(repository: str, digest: str, wheels: Sequence[WheelEntry]) -> bytes:
    bom = Bom(serial_number=uuid.uuid5(uuid.NAMESPACE_URL, f"{repository}@{digest}"))
    bom.metadata.timestamp = None  # type: ignore[assignment]  # its default is now: bytes that change per run;
    # the library writes no timestamp for None (a setter typed narrower than it accepts)
    image = Component(
        name=repository,
        type=ComponentType.CONTAINER,
        bom_ref=digest,
        version=digest,
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=digest.removeprefix("sha256:"))],
    )
    bom.metadata.component = image
    components = [_wheel(wheel) for wheel in wheels]
    for component in components:
        bom.components.add(component)
    bom.register_dependency(image, components)
    text = JsonV1Dot6(bom).output_as_string(indent=None)
    return canonical_json(json.loads(text))


def _wheel(wheel: WheelEntry) -> Component:
    properties = [Property(name="wheelpin:python_tag", value=tag) for tag in wheel.tags]
    properties += [Property(name="wheelpin:gpu_arch", value=arch) for arch in wheel.archs]
    properties += [Property(name="wheelpin:needed", value=library) for library in wheel.needed or ()]
    properties += [Property(name="wheelpin:requires_dist", value=requirement) for requirement in wheel.requires_dist]
    if wheel.installed is not None:
        properties.append(Property(name="wheelpin:installed_bytes", value=str(wheel.installed)))
    if wheel.variant is not None:
        properties.append(Property(name="wheelpin:variant_label", value=wheel.variant))
        properties += [Property(name="wheelpin:variant_property", value=item) for item in wheel.variant_properties]
    return Component(
        name=wheel.name,
        version=wheel.version,
        type=ComponentType.LIBRARY,
        bom_ref=wheel.file,
        purl=PackageURL("pypi", None, wheel.name, wheel.version, qualifiers={"file_name": wheel.file}),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=wheel.sha256)],
        properties=properties,
    )

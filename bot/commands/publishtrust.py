"""The `trust` check of `wheelpin image publish --component`: the one a pass makes before it
publishes (loop/trustcheck.py, decided by core/trust/decide.py), run on the wheels given by
hand, with the image the checkout pins today as the pinned one a downgrade is judged against.
A component whose `trust.attestations` is "off" (the default) costs nothing here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..adapters.checkoutfiles import canonical_component, read_texts
from ..adapters.imageread import ImageInfo, read_image
from ..adapters.imagestore import LayoutStore, layout_folder
from ..app.forges import attestations_reader
from ..app.settings import Settings
from ..app.wiring import Registries
from ..core.config.load import LoadedConfig
from ..core.config.model import Component
from ..core.errors import TransientError, WheelpinError, doing
from ..core.pins.bump import read_pins
from ..core.trust.decide import Judgement
from ..core.wheel.report import WheelReport


@dataclass(frozen=True)
class Trusted:
    """What `image publish` says of the wheels' provenance: the decision, and why the pinned
    image's provenance could not be weighed (when that decided and it could not be read)."""

    judgement: Judgement = field(default_factory=Judgement)
    unweighed: tuple[str, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        return (*self.judgement.notes, *self.unweighed)


def judge_published(
    loaded: LoadedConfig, component: Component, reports: Sequence[WheelReport], settings: Settings
) -> Trusted:
    """The pass's decision for `reports` (refused: nothing may be pushed)."""
    trust = component.trust
    if not trust.checked:
        return Trusted()
    from ..loop.trustcheck import TrustCheck, Wheel  # sigstore: loaded for a component whose `trust` asks

    unweighed: list[str] = []

    def pinned() -> ImageInfo | None:
        try:
            return pinned_image(loaded, component, Registries(settings))
        except TransientError:
            raise
        except WheelpinError as exc:
            unweighed.append(f"the pinned image's provenance was not weighed (a trust downgrade is not judged): {exc}")
            return None

    check = TrustCheck(lambda: attestations_reader(settings), settings.cache_dir)
    with doing(f"checking the attestations of {component.name}'s wheels"):
        judgement = check.judge(trust, pinned, [Wheel(report.filename, report.sha256) for report in reports])
    return Trusted(judgement, tuple(unweighed))


def pinned_image(loaded: LoadedConfig, component: Component, registries: Registries) -> ImageInfo | None:
    """The image the checkout's first pin of `component` names by digest, read where a pass
    reads it (loop/observe.py: the component's layout folder, else the pin's registry);
    None when the pin names no digest."""
    component = canonical_component(component, loaded.root)
    texts = read_texts(loaded.root, sorted({pin.file for pin in component.pins}))
    state = read_pins(component, texts)[0]
    ref = state.ref
    if ref is None or ref.digest is None:
        return None
    store = (
        LayoutStore(layout_folder(component.image.repository, loaded.root))
        if component.image.is_layout
        else registries.store(ref)
    )
    try:
        with doing(f"reading the image pinned at {state.file}:{state.line} (to weigh its provenance)"):
            return read_image(store, ref.digest)
    except TransientError:
        raise
    except WheelpinError as exc:  # not there, or not an image wheelpin can read: said with its pin
        raise WheelpinError(f"{state.file}:{state.line}: {exc.message}") from None

"""Which wheel's sha256 a pin's sha256 ARG takes (the config's `sha256_arg`, docs/pins.md):
the wheel of the pin's `python_tag`, or the image's only wheel for a pin that names none.
One rule for both places that write such an ARG, a pass's proposal and `wheelpin pins bump
--image`, both through `plan_bump`. Where more than one wheel answers a pin's key (variant
wheels of one python tag, two platform tags, cp313 beside the free-threaded cp313t), the
key holds them all, so the bump refuses rather than take one of them by chance; `config
validate --online` says the same sentence of the image pinned today, before a pass builds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.utils import InvalidWheelFilename
from packaging.version import InvalidVersion

from ..checks.wheelset import python_tags_of
from ..errors import VerificationError

if TYPE_CHECKING:
    from ..image.oci import WheelEntry


@dataclass(frozen=True)
class Several:
    """The wheels that answer one key: more than one, so none of their sha256s is the pin's."""

    files: tuple[str, ...]


def wheel_sha256s(wheels: Sequence[WheelEntry]) -> dict[str | None, str | Several]:
    """Each wheel's sha256 by python tag, and under None that of the only wheel; a python tag
    (or None) more than one wheel answers to holds their files instead."""
    found: dict[str | None, list[WheelEntry]] = {}
    for wheel in wheels:
        for tag in sorted(python_tags_of(wheel.file)):
            found.setdefault(tag, []).append(wheel)
    if wheels:
        found[None] = list(wheels)
    return {
        key: entries[0].sha256 if len(entries) == 1 else Several(tuple(sorted(entry.file for entry in entries)))
        for key, entries in found.items()
    }


def held_sha256s(wheels: Sequence[WheelEntry]) -> dict[str | None, str | Several]:
    """`wheel_sha256s` of the pinned image's wheels, to tell which wheel a sha256 ARG held
    (`tags_holding`): nothing where a file name of them does not parse (an image another
    tool pushed), since that is only ever said, never a reason to stop."""
    try:
        return wheel_sha256s(wheels)
    except (InvalidWheelFilename, InvalidVersion):
        return {}


def tags_holding(sha256s: Mapping[str | None, str | Several], value: str | None) -> tuple[str, ...]:
    """The python tags of the one wheel of `sha256s` (as `wheel_sha256s` gives them) whose
    sha256 is `value`: none where no wheel of them has it (or it is not known)."""
    return tuple(sorted(tag for tag, held in sha256s.items() if tag is not None and value and held == value))


def tag_moved(where: str, arg: str, old: Sequence[str], new: Sequence[str]) -> str | None:
    """The sentence saying that `arg` (at `where`, file:line), which takes the image's only
    wheel, now holds the sha256 of a wheel of other python tags than the one it held (`old`,
    the pinned image's wheel; `new`, the new image's): a cp311 wheel become py3 installs
    where it did, so the bump goes on, but the ARG's name and the Dockerfile may say cp311.
    None where either side is not known or they share a tag. Said by `pins bump` and the
    dry run's pin lines, both from the bump's plan (core/pins/bump.py)."""
    if not old or not new or set(old) & set(new):
        return None
    return (
        f"{where} {arg} now holds the {'.'.join(new)} wheel's sha256: no {'.'.join(old)} wheel in the image "
        "(the pin takes its only wheel)"
    )


def ambiguity(where: str, arg: str, python_tag: str | None, several: Several, *, image: str = "the image") -> str:
    """The sentence refusing to write `arg` (at `where`, file:line) when several wheels of
    `image` answer its key: what was asked, which wheels answer, and what would let the pin
    be written. Said by the bump that refuses (`ambiguous`) and, of the image pinned today,
    by `config validate --online` before the pass gets there. Variant wheels of one python
    tag (PEP 825, which the wheel set rule lets a pass publish) are said as such: no
    python_tag tells them apart, so only dropping the sha256 ARG or building one wheel does."""
    files = ", ".join(several.files)
    variants = _variants_of_one_tag(several)
    asked = f"the {python_tag} wheel" if python_tag else "the image's only wheel"
    if variants is not None:
        tag, labels = variants
        return (
            f"{where}: {arg} takes the sha256 of {asked}, but {image} holds {len(several.files)} variant "
            f"wheels of {tag} ({', '.join(labels)}: {files}), and a sha256 ARG names its wheel by python tag, "
            "never by variant label: drop the pin's sha256_arg (its image pin alone moves to an image of any "
            f"wheels), or have the component's image hold one {tag} wheel"
        )
    if python_tag is None:
        return (
            f"{where}: {arg} takes the sha256 of the image's only wheel, but {image} holds "
            f"{len(several.files)} wheels ({files}): give the pin the python_tag of the wheel "
            "its Dockerfile installs (the image must hold one wheel of that tag), or drop its sha256_arg"
        )
    return (
        f"{where}: {arg} takes the sha256 of the {python_tag} wheel, but {image} holds "
        f"{len(several.files)} {python_tag} wheels ({files}), and a sha256 ARG names its wheel "
        f"by python tag alone: the component's image must hold one {python_tag} wheel for this "
        "pin to be written, or the pin must drop its sha256_arg"
    )


def _variants_of_one_tag(several: Several) -> tuple[str, list[str]] | None:
    """The python tag and the labels of `several` where they are variant wheels of one
    python tag (a non-variant one among them said as "no variant"), and no two of one label;
    None otherwise (two platform tags, cp313 beside cp313t: another sentence)."""
    from ..wheel.metadata import split_variant_label

    labels = [split_variant_label(file)[1] for file in several.files]
    tags = {".".join(sorted(python_tags_of(file))) for file in several.files}
    if len(tags) != 1 or all(label is None for label in labels) or len(set(labels)) != len(labels):
        return None
    return tags.pop(), [label or "no variant" for label in labels]


def ambiguous(where: str, arg: str, python_tag: str | None, several: Several) -> VerificationError:
    """The refusal of writing `arg` (at `where`, file:line) when several wheels answer its key."""
    sentence = ambiguity(where, arg, python_tag, several)
    return VerificationError(sentence, problems=(sentence,))

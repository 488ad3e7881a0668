"""The contract every pin format of bot/core/pins/formats/api.py keeps (as Renovate's contract
tests hold each manager of lib/modules/manager/api.ts to one interface): its name is a `kind`
of the config, whose model requires the format's key and is chosen by that key alone; it
reads the pinned reference and the wheel sha256 from a file's text with their lines; a bump
planned through it re-reads as the new pin with every other byte as it was (for any
reference, sha256 and quoting: hypothesis); a pin naming what the file lacks is refused
with the file and the closest name it has; it lists its pin's reference at the site the
pin's table claims (what no pin claims is said to be left behind); and before any config (`wheelpin init`) it finds
the pin in a file it looks in, as its config key names it, which reads back through it.

Each format's case is a Dockerfile written as a downstream repository writes it (ATOM's
`docker/Dockerfile` shape: comments, CRLF-free continuation, other stages around it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticUndefined

from bot.core.config.initconfig import PinDraft
from bot.core.config.model import PIN_KINDS, Component
from bot.core.pins.behind import left_behind
from bot.core.pins.bump import plan_bump, read_pins
from bot.core.pins.formats.api import FORMATS
from bot.core.pins.formats.base import PinError, PinSites, rewrite
from bot.core.pins.scan import looked_in, scan

REPOSITORY = "rocm/atom-dev"
OLD_IMAGE = f"{REPOSITORY}:lmcache-v0.5.6.dev98-g05fc77a0@sha256:" + "1" * 64
NEW_IMAGE = f"{REPOSITORY}:lmcache-v0.5.6.dev103-g3d3aa833@sha256:" + "2" * 64
OLD_SHA, NEW_SHA = "a" * 64, "b" * 64


@dataclass(frozen=True)
class Case:
    pin: dict[str, str]  # the pin's table as a config writes it, without `kind`
    dockerfile: Callable[[str, str, str], str]  # (image, sha256, quote) → the file's text
    image_line: int
    sha256_line: int
    misspelt: dict[str, str]  # the pin naming what the file lacks…
    closest: str  # …and the name the file has that the refusal suggests


def _arg_file(image: str, sha256: str, quote: str) -> str:
    return (
        f"# syntax=docker/dockerfile:1\nARG BASE=rocm/vllm-dev:nightly\nARG LMCACHE_WHEEL_IMAGE={quote}{image}{quote}\n"
        f"ARG LMCACHE_WHEEL_SHA256={quote}{sha256}{quote}\n\nFROM ${{LMCACHE_WHEEL_IMAGE}} AS lmcache-wheel\n"
        "FROM ${BASE}\nCOPY --from=lmcache-wheel / /wheels/\nRUN pip install /wheels/*.whl \\\n    && rm -rf /wheels\n"
    )


def _from_file(image: str, sha256: str, quote: str) -> str:
    return (
        f"# the wheel image\nARG LMCACHE_WHEEL_SHA256={quote}{sha256}{quote}\nFROM {image} AS lmcache-wheel\n\n"
        "FROM rocm/vllm-dev:nightly AS base\nCOPY --from=lmcache-wheel / /wheels/\n"
        "RUN --mount=type=bind,from=lmcache-wheel,target=/w pip install /w/*.whl\n"
    )


CASES: dict[str, Case] = {
    "dockerfile-arg": Case(
        {"image_arg": "LMCACHE_WHEEL_IMAGE", "sha256_arg": "LMCACHE_WHEEL_SHA256"},
        _arg_file,
        3,
        4,
        {"image_arg": "LMCACHE_WHEEL_IMG"},
        "LMCACHE_WHEEL_IMAGE",
    ),
    "dockerfile-from": Case(
        {"from_stage": "lmcache-wheel", "sha256_arg": "LMCACHE_WHEEL_SHA256"},
        _from_file,
        3,
        2,
        {"from_stage": "lmcache-whel"},
        "lmcache-wheel",
    ),
}


def component(pin: dict[str, str]) -> Component:
    return Component.model_validate(
        {
            "name": "lmcache",
            "upstream": {"repo": "https://github.com/LMCache/LMCache", "branch": "dev"},
            "wheel": {"distribution": "lmcache"},
            "build": {"command": "make"},
            "image": {"repository": REPOSITORY, "tag": "lmcache-v{version_base}-g{sha8}"},
            "pins": [{"file": "docker/Dockerfile", **pin}],
        }
    )


def test_every_format_is_a_config_kind_and_every_kind_a_format() -> None:
    assert list(FORMATS) == list(PIN_KINDS) == list(CASES)
    for name, fmt in FORMATS.items():
        assert fmt.name == name
        model = PIN_KINDS[name]
        assert model.model_fields["kind"].default in (name, PydanticUndefined)  # inferred, or to be written
        assert model.model_fields[fmt.key].is_required()  # the key that says where the pin is


# Only the formats older configs wrote (their `kind` has a default) are chosen by their key alone.
_CHOSEN = [(name, True) for name in FORMATS] + [
    (name, False) for name in FORMATS if not PIN_KINDS[name].model_fields["kind"].is_required()
]


@pytest.mark.parametrize(("name", "with_kind"), _CHOSEN)
def test_the_format_is_chosen_by_its_key_or_by_kind(name: str, with_kind: bool) -> None:
    table = {**CASES[name].pin, **({"kind": name} if with_kind else {})}
    pin = component(table).pins[0]
    assert type(pin) is PIN_KINDS[name] and pin.kind == name
    assert FORMATS[name].named(pin)  # what `pins list` says the pin names


def _read(name: str, text: str) -> PinSites:
    pin = component(CASES[name].pin).pins[0]
    return FORMATS[name].read(pin, text)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_format_reads_the_reference_and_sha256_with_their_lines(name: str) -> None:
    case = CASES[name]
    sites = _read(name, case.dockerfile(OLD_IMAGE, OLD_SHA, '"'))
    assert {site.value for site in sites.image} == {OLD_IMAGE}
    assert {site.value for site in sites.sha256} == {OLD_SHA}
    assert (sites.image[0].line, sites.sha256[0].line) == (case.image_line, case.sha256_line)


def _round_trip(name: str, image: str, sha256: str, quote: str) -> None:
    case = CASES[name]
    text = case.dockerfile(OLD_IMAGE, OLD_SHA, quote)
    sites = _read(name, text)
    values = {site.start: (site, image) for site in sites.image} | {site.start: (site, sha256) for site in sites.sha256}
    edited, changed = rewrite(text, values)
    assert edited == case.dockerfile(image, sha256, quote)  # every other byte as it was
    again = _read(name, edited)
    assert ({s.value for s in again.image}, {s.value for s in again.sha256}) == ({image}, {sha256})
    assert len(changed) == len([site for site, value in values.values() if site.value != value])
    # the bump as `pins bump` and a pass plan it goes through the same format
    plan = plan_bump(component(case.pin), {"docker/Dockerfile": text}, image, {None: sha256})
    assert plan.new_texts == ({"docker/Dockerfile": edited} if changed else {})
    (state,) = read_pins(component(case.pin), {"docker/Dockerfile": edited})
    assert (state.image, state.sha256, state.line) == (image, sha256, case.image_line)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_planned_edit_re_reads_as_the_new_pin_and_changes_no_other_byte(name: str) -> None:
    _round_trip(name, NEW_IMAGE, NEW_SHA, '"')
    _round_trip(name, OLD_IMAGE, OLD_SHA, "")  # to what is pinned already: nothing changes


_HEX = st.text("0123456789abcdef", min_size=64, max_size=64)


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=25, deadline=None)
@given(
    digest=_HEX,
    sha256=_HEX,
    version=st.lists(st.integers(0, 999), min_size=1, max_size=4),
    sha8=st.text("0123456789abcdef", min_size=8, max_size=8),
    quote=st.sampled_from(['"', "'", ""]),
)
def test_any_reference_and_sha256_round_trip(
    name: str, digest: str, sha256: str, version: list[int], sha8: str, quote: str
) -> None:
    tag = f"lmcache-v{'.'.join(map(str, version))}-g{sha8}"  # one the component's tag template gives
    _round_trip(name, f"{REPOSITORY}:{tag}@sha256:{digest}", sha256, quote)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_name_the_file_lacks_is_refused_with_the_closest_one(name: str) -> None:
    case = CASES[name]
    pin: dict[str, Any] = {**case.pin, **case.misspelt}
    with pytest.raises(PinError) as refused:
        FORMATS[name].read(component(pin).pins[0], case.dockerfile(OLD_IMAGE, OLD_SHA, '"'))
    said = str(refused.value)
    assert said.startswith("docker/Dockerfile") and f"did you mean {case.closest}?" in said, said


@pytest.mark.parametrize("name", list(FORMATS))
def test_init_finds_the_pin_as_its_config_key_names_it_and_it_reads_back(name: str) -> None:
    case = CASES[name]
    fmt = FORMATS[name]
    text = case.dockerfile(OLD_IMAGE, OLD_SHA, '"')
    assert fmt.looks_in("docker/Dockerfile") and looked_in("docker/Dockerfile")
    (found,), _skipped = fmt.find(text, "docker/Dockerfile")
    assert (found.kind, found.key, found.reference, found.line) == (name, fmt.key, OLD_IMAGE, case.image_line)
    assert [(arg.name, arg.value, arg.line) for arg in found.sha256_args] == [
        (case.pin["sha256_arg"], OLD_SHA, case.sha256_line)
    ]
    sha256_arg = found.sha256_args[0].name
    table = PinDraft("docker/Dockerfile", found.kind, found.key, found.named, sha256_arg, None, "").table()
    assert {k: v for k, v in table.items() if k not in ("file", "kind")} == case.pin  # as a downstream writes it
    sites = fmt.read(component(table).pins[0], text)  # what init writes is a pin of this format
    assert ({s.value for s in sites.image}, sites.image[0].line) == ({OLD_IMAGE}, found.line)
    assert [pin.kind for pin in scan(text, "docker/Dockerfile")[0]] == [name]  # found once, by its format alone


@pytest.mark.parametrize("name", list(FORMATS))
def test_the_references_a_format_lists_hold_its_pin_at_the_site_its_config_claims(name: str) -> None:
    """What a component's pins leave behind (core/pins/behind.py) is every reference of its
    repository but those at a site some pin claims: the format says its pin's reference at
    the site the pin's table claims, so a pinned line is never said to be left behind."""
    case = CASES[name]
    pin = component(case.pin).pins[0]
    text = case.dockerfile(OLD_IMAGE, OLD_SHA, '"')
    listed = FORMATS[name].references(text, "docker/Dockerfile")
    assert [r.line for r in listed] == sorted(r.line for r in listed)
    (own,) = [r for r in listed if r.value == OLD_IMAGE]
    assert (own.file, own.line) == ("docker/Dockerfile", case.image_line)
    assert own.site == pin.sites()[0][1]
    assert not left_behind(component(case.pin), {"docker/Dockerfile": text}, ())


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_format_finds_nothing_in_a_file_it_does_not_look_in(name: str) -> None:
    assert not FORMATS[name].looks_in("docker/README.md")
    assert scan(CASES[name].dockerfile(OLD_IMAGE, OLD_SHA, '"'), "docker/README.md") == ([], [])


@pytest.mark.parametrize("name", list(FORMATS))
def test_an_unreadable_file_is_a_pin_error_naming_it(name: str) -> None:
    with pytest.raises(PinError, match=r"^docker/Dockerfile:2: .*NUL"):
        FORMATS[name].find("FROM scratch\nARG A=\0\n", "docker/Dockerfile")

"""What a component's pins leave behind: its image repository named where no pin of the
config moves it, in each shape a Dockerfile names an image (`COPY --from=`, `RUN
--mount=…,from=`, a stage's FROM, an ARG), and nothing that some pin moves or that names
another repository or a stage."""

from __future__ import annotations

from typing import Any

from bot.core.config.model import Component
from bot.core.pins.behind import left_behind
from bot.core.pins.bump import plan_bump

REPOSITORY = "ghcr.io/rocm/lmcache-wheel"
OLD = f"{REPOSITORY}:lmcache-v0.1-g1111aaaa@sha256:" + "1" * 64
NEW = f"{REPOSITORY}:lmcache-v0.2-g2222bbbb@sha256:" + "2" * 64
OTHER = "ghcr.io/rocm/mooncake-wheel:m@sha256:" + "3" * 64
ROCM7 = f"{REPOSITORY}:lmcache-rocm7-v0.1-g1111aaaa@sha256:" + "4" * 64  # another component, one repository

DOCKERFILE = f"""\
ARG LMCACHE_WHEEL_IMAGE="{OLD}"
ARG LMCACHE_ROCM7_IMAGE="{ROCM7}"
ARG LMCACHE_OLD_IMAGE="{OLD}"
ARG MOONCAKE_IMAGE="{OTHER}"
FROM ${{LMCACHE_WHEEL_IMAGE}} AS lmcache_wheel
FROM ${{LMCACHE_ROCM7_IMAGE}} AS rocm7_wheel
FROM {OLD} AS compat
FROM python:3.12-slim AS base
COPY --from=lmcache_wheel / /w/
COPY --from=0 / /w0/
COPY --from={OTHER} / /m/
COPY --from=${{LMCACHE_WHEEL_IMAGE}} / /v/
COPY --from={OLD} / /old/
RUN --mount=type=bind,from={OLD},target=/w pip install /w/*.whl
FROM base
"""
# The repository holds the images a downstream builds on too (as rocm/atom-dev holds ATOM's
# nightly images beside LMCache's wheel images): a stage built on one runs in it.
DEV = f"{REPOSITORY}:nightly@sha256:" + "5" * 64
BASES = f"""\
FROM ${{BASE_IMAGE}} AS dev
RUN pip list
FROM {DEV} AS tools
FROM tools
"""


def component(name: str, pins: list[dict[str, Any]]) -> Component:
    return Component.model_validate(
        {
            "name": name,
            "upstream": {"repo": "https://github.com/LMCache/LMCache", "branch": "dev"},
            "wheel": {"distribution": "lmcache"},
            "build": {"command": "make"},
            "image": {"repository": REPOSITORY, "tag": name + "-v{version_base}-g{sha8}"},
            "pins": [{"file": "docker/Dockerfile", **pin} for pin in pins],
        }
    )


LMCACHE = component("lmcache", [{"image_arg": "LMCACHE_WHEEL_IMAGE"}])
ROCM7_COMPONENT = component("lmcache-rocm7", [{"image_arg": "LMCACHE_ROCM7_IMAGE"}])


def test_every_reference_of_the_repository_no_pin_moves_is_left_behind() -> None:
    found = left_behind(LMCACHE, {"docker/Dockerfile": DOCKERFILE}, [LMCACHE, ROCM7_COMPONENT])
    assert [(r.line, r.what, r.value, r.site) for r in found] == [
        (3, "ARG LMCACHE_OLD_IMAGE", OLD, "ARG LMCACHE_OLD_IMAGE"),
        (7, "FROM", OLD, "FROM AS compat"),
        (13, "COPY --from", OLD, None),
        (14, "RUN --mount from", OLD, None),
    ]


def test_a_site_another_component_pins_is_its_own_and_not_left_behind() -> None:
    alone = left_behind(LMCACHE, {"docker/Dockerfile": DOCKERFILE}, [LMCACHE])
    assert (2, ROCM7) in [(r.line, r.value) for r in alone]  # no component pins it: said
    compat = component("compat", [{"from_stage": "COMPAT"}])  # a stage is named regardless of case
    found = left_behind(LMCACHE, {"docker/Dockerfile": DOCKERFILE}, [LMCACHE, ROCM7_COMPONENT, compat])
    assert [r.line for r in found] == [3, 13, 14]


def test_the_bump_leaves_them_as_they_are_and_its_plan_says_them() -> None:
    plan = plan_bump(LMCACHE, {"docker/Dockerfile": DOCKERFILE}, NEW, {}, [LMCACHE, ROCM7_COMPONENT])
    assert [(e.line, e.what) for e in plan.edits] == [(1, "image")]
    assert plan.new_texts["docker/Dockerfile"].count(OLD) == 4  # lines 3, 7, 13 and 14, as they were
    assert plan.left_behind_said[2] == (
        f"docker/Dockerfile:13: COPY --from names {OLD}, of lmcache's image repository, but no pin moves it: "
        "a bump leaves it as it is"
    )


def test_a_base_image_of_the_repository_is_no_wheel_image_left_behind() -> None:
    text = f'ARG BASE_IMAGE="{DEV}"\n' + DOCKERFILE + BASES
    found = left_behind(LMCACHE, {"docker/Dockerfile": text}, [LMCACHE, ROCM7_COMPONENT])
    assert [r.line for r in found] == [4, 8, 14, 15]  # not line 1 nor 19, which stages run in

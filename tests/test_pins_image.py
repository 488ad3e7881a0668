"""`wheelpin pins bump --image REF` with no `--sha256`: each pin's wheel sha256 read from the
image in the real registry, by the rule a pass's proposal follows (core/pins/sha256.py). An
image holding two wheels of the python tag a sha256 ARG names is refused in one sentence,
the Dockerfile untouched; an image pin alone, one wheel per python tag, and a sha256 given
by hand move as before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.adapters.imagestore import RegistryRepository
from bot.adapters.publisher import publish
from bot.adapters.registry import RegistryClient
from bot.core.wheel.report import inspect_wheel
from tests.cli import Result, wheelpin
from tests.fixtures.servers import Registry
from tests.fixtures.wheels import build_wheel

OLD_SHA = "0" * 64
SHA256_ARGS = {"cp311": "KERNELS_SHA256_CP311", "cp312": "KERNELS_SHA256_CP312"}
CONFIG = """\
[[component]]
name = "kernels"
upstream = {{ repo = "https://github.com/o/kernels", branch = "main" }}
wheel = {{ distribution = "kernels" }}
build = {{ command = ["true"] }}
image = {{ repository = "{repository}", tag = "kernels-g{{sha8}}" }}
pins = [{pins}]
"""


def kernels_wheels(folder: Path, *tags: str) -> list[Path]:
    """A kernels 1.0.0 wheel for each python-abi-platform tag, as its build yields them."""
    return [
        build_wheel(
            folder / tag,
            name="kernels",
            version="1.0.0",
            tag=tag,
            files={"kernels/__init__.py": f"BUILT_FOR = {tag!r}\n".encode()},
        )
        for tag in tags
    ]


def published(registry: Registry, repository: str, wheels: list[Path], tag: str = "kernels-g22222222") -> str:
    """The image of `wheels`, pushed to the registry: its `repository:tag@digest`."""
    path = repository.partition("/")[2]
    result = publish(
        RegistryRepository(RegistryClient(registry.host), path),
        tag,
        wheels,
        [inspect_wheel(wheel) for wheel in wheels],
        component="kernels",
        settle=0,
    )
    return f"{repository}:kernels-g22222222@{result.digest}"


def pin(python_tag: str | None) -> str:
    """The config's pin of the kernels image, with the sha256 ARG of `python_tag`'s wheel."""
    sha256 = f', sha256_arg = "{SHA256_ARGS[python_tag]}", python_tag = "{python_tag}"' if python_tag else ""
    return f'{{ file = "docker/Dockerfile", image_arg = "KERNELS_IMAGE"{sha256} }}'


def downstream(tmp_path: Path, repository: str, python_tags: tuple[str, ...]) -> Path:
    """A repository pinning the kernels image, with a sha256 ARG for each of `python_tags`."""
    repo = tmp_path / "downstream"
    (repo / "docker").mkdir(parents=True)
    pins = ", ".join(pin(tag) for tag in python_tags) or pin(None)
    (repo / "wheelpin.toml").write_text(CONFIG.format(repository=repository, pins=pins))
    (repo / "docker" / "Dockerfile").write_text(
        f'ARG KERNELS_IMAGE="{repository}:kernels-g11111111@sha256:{"1" * 64}"\n'
        + "".join(f"ARG {SHA256_ARGS[tag]}={OLD_SHA}\n" for tag in python_tags)
        + "FROM ${KERNELS_IMAGE} AS kernels\n"
    )
    return repo


def bump(tmp_path: Path, repo: Path, image: str, *extra: str) -> Result:
    return wheelpin(
        "pins",
        "bump",
        "--repo",
        str(repo),
        "--component",
        "kernels",
        "--image",
        image,
        *extra,
        env={"WHEELPIN_CACHE_DIR": str(tmp_path / "cache"), "WHEELPIN_REGISTRY_BACKOFF": "0.05"},
    )


@pytest.fixture()
def repository(registry: Registry, tmp_path: Path) -> str:
    """A repository of the session's registry that is this test's alone."""
    return f"{registry.host}/{re.sub(r'[^a-z0-9]+', '-', tmp_path.name.lower()).strip('-')}/kernels"


TWO_CP312 = ("cp312-cp312-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_34_x86_64")


def test_two_wheels_of_the_pins_python_tag_are_refused_and_nothing_is_written(
    registry: Registry, repository: str, tmp_path: Path
) -> None:
    wheels = kernels_wheels(tmp_path / "wheels", *TWO_CP312)
    image = published(registry, repository, wheels)
    repo = downstream(tmp_path, repository, ("cp312",))
    before = (repo / "docker" / "Dockerfile").read_bytes()
    result = bump(tmp_path, repo, image)
    first, second = sorted(wheel.name for wheel in wheels)
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == (
        "wheelpin: docker/Dockerfile:2: KERNELS_SHA256_CP312 takes the sha256 of the cp312 wheel, but the "
        f"image holds 2 cp312 wheels ({first}, {second}), and a sha256 ARG names its wheel by python tag "
        "alone: the component's image must hold one cp312 wheel for this pin to be written, or the pin "
        "must drop its sha256_arg\n"
    )
    assert (repo / "docker" / "Dockerfile").read_bytes() == before
    as_json = bump(tmp_path, repo, image, "--json").json()
    assert (as_json["kind"], as_json["exit"]) == ("verification", 1) and "2 cp312 wheels" in as_json["error"]
    # the user who knows which wheel the Dockerfile installs names it: nothing is read or guessed
    given = bump(tmp_path, repo, image, "--sha256", "cp312=" + "f" * 64)
    assert given.code == 0, given.stderr
    assert f"ARG KERNELS_SHA256_CP312={'f' * 64}\n" in (repo / "docker" / "Dockerfile").read_text()


def test_an_image_pin_alone_moves_to_an_image_of_two_wheels_of_one_tag(
    registry: Registry, repository: str, tmp_path: Path
) -> None:
    image = published(registry, repository, kernels_wheels(tmp_path / "wheels", *TWO_CP312))
    repo = downstream(tmp_path, repository, ())
    result = bump(tmp_path, repo, image)
    assert result.code == 0, result.stderr
    assert (repo / "docker" / "Dockerfile").read_text().startswith(f'ARG KERNELS_IMAGE="{image}"\n')


def test_one_wheel_per_python_tag_gives_each_pin_its_own_wheels_sha256(
    registry: Registry, repository: str, tmp_path: Path
) -> None:
    wheels = kernels_wheels(tmp_path / "wheels", "cp311-cp311-manylinux_2_28_x86_64", *TWO_CP312[:1])
    image = published(registry, repository, wheels)
    repo = downstream(tmp_path, repository, ("cp311", "cp312"))
    result = bump(tmp_path, repo, image)
    assert result.code == 0, result.stderr
    cp311, cp312 = (inspect_wheel(wheel).sha256 for wheel in wheels)
    assert (repo / "docker" / "Dockerfile").read_text() == (
        f'ARG KERNELS_IMAGE="{image}"\n'
        f"ARG KERNELS_SHA256_CP311={cp311}\n"
        f"ARG KERNELS_SHA256_CP312={cp312}\n"
        "FROM ${KERNELS_IMAGE} AS kernels\n"
    )


def test_a_sha256_the_image_does_not_say_is_asked_for_by_its_option(
    registry: Registry, repository: str, tmp_path: Path
) -> None:
    """The image holds a cp311 wheel alone; the pin wants the cp312 wheel's sha256."""
    image = published(registry, repository, kernels_wheels(tmp_path / "wheels", "cp311-cp311-manylinux_2_28_x86_64"))
    repo = downstream(tmp_path, repository, ("cp312",))
    before = (repo / "docker" / "Dockerfile").read_bytes()
    result = bump(tmp_path, repo, image)
    assert (result.code, result.stderr) == (
        2,
        "wheelpin: docker/Dockerfile: KERNELS_SHA256_CP312 needs the sha256 of the cp312 wheel, which the image "
        "does not say: pass --sha256 cp312=HEX\n",
    )
    assert (repo / "docker" / "Dockerfile").read_bytes() == before


def test_an_only_wheel_sha256_arg_moved_from_a_cp311_wheel_to_a_py3_one_is_said(
    registry: Registry, repository: str, tmp_path: Path
) -> None:
    """A pin with no python_tag whose ARG holds the pinned image's cp311 wheel's sha256,
    bumped to an image of one py3 wheel: the py3 wheel's sha256 is written (it installs on
    CPython 3.11 too), and a warning names the ARG, its line and both tags, read from the
    pinned image in the registry; `--json` lists it under `tags_moved`."""
    (cp311,) = kernels_wheels(tmp_path / "old", "cp311-cp311-manylinux_2_28_x86_64")
    (py3,) = kernels_wheels(tmp_path / "new", "py3-none-any")
    pinned = published(registry, repository, [cp311], "kernels-g11111111")
    image = published(registry, repository, [py3])
    repo = tmp_path / "downstream"
    (repo / "docker").mkdir(parents=True)
    only = '{ file = "docker/Dockerfile", image_arg = "KERNELS_IMAGE", sha256_arg = "KERNELS_SHA256_CP311" }'
    (repo / "wheelpin.toml").write_text(CONFIG.format(repository=repository, pins=only))
    old_sha = inspect_wheel(cp311).sha256
    dockerfile = (
        f'ARG KERNELS_IMAGE="{pinned}"\nARG KERNELS_SHA256_CP311={old_sha}\nFROM ${{KERNELS_IMAGE}} AS kernels\n'
    )
    (repo / "docker" / "Dockerfile").write_text(dockerfile)
    result = bump(tmp_path, repo, image, "--json")
    assert result.code == 0, result.stderr
    sentence = (
        "docker/Dockerfile:2 KERNELS_SHA256_CP311 now holds the py3 wheel's sha256: no cp311 wheel in the image "
        "(the pin takes its only wheel)"
    )
    assert result.json()["tags_moved"] == [sentence]
    assert f"ARG KERNELS_SHA256_CP311={inspect_wheel(py3).sha256}\n" in (repo / "docker" / "Dockerfile").read_text()
    (repo / "docker" / "Dockerfile").write_text(dockerfile)
    text = bump(tmp_path, repo, image)
    assert text.code == 0 and text.stderr.count(f"warning: {sentence}\n") == 1, text.stderr

"""What a proposal says of the consuming image (loop/consumers.py): its header line counted
as written, the wheels' requirements it has nothing for in one line that claims no install
command, and the libraries check said as what it was for wheels with no library to find."""

from __future__ import annotations

import pytest

from bot.adapters.consumerread import MAX_PLATFORMS, ConsumerImage, ConsumerPlatforms, platforms_read
from bot.commands.image_cmd import against_lines
from bot.core.errors import InputError
from bot.core.image.consumer import ConsumerReport, check
from bot.core.image.files import ImageFiles, Installed
from bot.core.image.oci import WheelEntry
from bot.loop.consumers import against_header, by_architecture, libraries_found, new_to_image

SITE = "usr/lib/python3.12/site-packages"


def wheel(needed: tuple[str, ...] | None) -> WheelEntry:
    return WheelEntry(
        "minicache-0.1.0-py3-none-any.whl",
        "a" * 64,
        1_200,
        "minicache",
        "0.1.0",
        ("msgspec>=0.18",),
        needed=needed,
        installed=3_400,
    )


def image(*names: str) -> ConsumerImage:
    dists = tuple(Installed(name, "1.0", (), SITE) for name in names)
    return ConsumerImage(
        "r/base:1@sha256:" + "b" * 64, "sha256:" + "b" * 64, ImageFiles(dists, {}, {}, (), {}), 1, 0, 4_500_000
    )


def test_the_header_counts_its_packages_as_written() -> None:
    one = image("numpy")
    header = against_header(one, check(one.name, one.files, [wheel(())]), [wheel(())])
    assert (
        "): 1 installed package read from its layers; 4.5 MB as pulled, to which the wheels add 3.4 kB installed"
        in header
    )
    two = image("numpy", "torch")
    assert "): 2 installed packages read" in against_header(two, check(two.name, two.files, [wheel(())]), [wheel(())])


def test_a_requirement_new_to_the_image_is_one_line_with_one_parenthetical() -> None:
    assert new_to_image(()) == ()
    (line,) = new_to_image(("msgspec>=0.18",))
    assert line == (
        "new to the consuming image: `msgspec>=0.18` (nothing installed there provides it; pip brings it in "
        "with the wheel, `--no-deps` leaves it out)"
    )
    assert line.count("(") == 1
    (two,) = new_to_image(("msgspec>=0.18", "redis"))
    assert "`msgspec>=0.18`, `redis` (nothing installed there provides them; pip brings them in" in two


def test_wheels_with_no_library_to_find_say_so() -> None:
    assert libraries_found([wheel(())]) == "no ELF file in the wheels needs a shared library"
    assert (
        libraries_found([wheel(("libc.so.6",))]) == "every library the wheels' ELF files need is in the consuming image"
    )
    # an image that does not record DT_NEEDED: the check ran on the wheels themselves before publishing
    assert libraries_found([wheel(None)]) == "every library the wheels' ELF files need is in the consuming image"


def test_image_check_counts_its_packages_as_written_too() -> None:
    one = ConsumerReport("r/base:1", "3.12", "7.2.4", {"numpy": "2.3.5"}, ())
    lines = against_lines(one, [], None, "read", libraries=libraries_found([wheel(())]))
    assert lines[1] == "  no conflict with its 1 installed package; no ELF file in the wheels needs a shared library"


def test_image_check_says_its_information_apart_from_its_problems() -> None:
    """A refusal and what is only said (the ROCm versions, what pip brings in) are told
    apart line by line: the problems first, then each piece of information marked so."""
    missing = "mooncake/engine.so needs libibverbs.so.1, which the image does not have where the loader looks"
    one = ConsumerReport("r/base:1", "3.11", "6.4.1-83", {"numpy": "2.3.5"}, (), (missing,), ("redis",))
    lines = against_lines(one, [], "6", "read", libraries=libraries_found([wheel(())]))
    assert lines[1:] == [
        f"  {missing}",
        "  (info) the wheel is built for ROCm 6; the image has ROCm 6.4.1-83",
        "  (info) new to the image: redis",
    ]
    fine = ConsumerReport("r/base:1", "3.11", "6.4.1-83", {"numpy": "2.3.5"}, ())
    lines = against_lines(fine, [], "6", "read", libraries=libraries_found([wheel(())]))
    assert lines[1:] == [
        "  no conflict with its 1 installed package; no ELF file in the wheels needs a shared library",
        "  (info) the wheel is built for ROCm 6; the image has ROCm 6.4.1-83",
    ]


def test_wheels_are_read_against_the_image_of_each_architecture_they_name() -> None:
    """A set spanning amd64 and arm64 is read twice, pure-Python wheels with each; a set that
    names none is read for the image's own platforms (None)."""
    x86, arm, pure = "a-1-cp312-cp312-linux_x86_64.whl", "a-1-cp311-cp311-linux_aarch64.whl", "b-1-py3-none-any.whl"
    assert by_architecture([x86, pure, arm]) == {"amd64": [x86, pure], "arm64": [pure, arm]}
    assert by_architecture([pure]) == {None: [pure]}
    assert by_architecture([]) == {None: []}


def test_pure_wheels_are_read_against_at_most_max_platforms_of_an_index() -> None:
    many = ("amd64", "arm", "arm64", "386", "mips64le", "ppc64le", "riscv64", "s390x", "loong64")
    digest = "sha256:" + "d" * 64
    images = tuple(f"sha256:{number:064x}" for number in range(len(many)))
    read = platforms_read(ConsumerPlatforms(f"r/base@{digest}", many[:MAX_PLATFORMS], images[:MAX_PLATFORMS]))
    assert list(read.items()) == list(zip(many, images, strict=False))[:MAX_PLATFORMS]
    with pytest.raises(InputError) as raised:
        platforms_read(ConsumerPlatforms(f"r/base@{digest}", many[: MAX_PLATFORMS + 1], images[: MAX_PLATFORMS + 1]))
    assert raised.value.message == (
        f"r/base@{digest}: the image index has {MAX_PLATFORMS + 1} linux platforms, more than the "
        f"{MAX_PLATFORMS} wheelpin checks pure-Python wheels against"
    )

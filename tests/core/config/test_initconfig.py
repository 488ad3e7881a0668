"""What `wheelpin init` proposes of a wheel's libraries: `require_needed` from the ROCm
runtimes every wheel of the pinned image links (DT_NEEDED), and nothing for a wheel that
links none, or whose image does not record what it links."""

from __future__ import annotations

import tomllib

import pytest

from bot.core.config.initconfig import Build, PinnedImage, Upstream, propose, render
from bot.core.image.oci import WheelEntry
from bot.core.pins.scan import scan

DOCKERFILE = """\
ARG MOONCAKE_WHEEL_IMAGE="registry.example/wheels/mooncake-lite:latest@sha256:{digest}"
FROM ${{MOONCAKE_WHEEL_IMAGE}} AS mooncake_wheel
FROM registry.example/rocm/base:6.4 AS base
COPY --from=mooncake_wheel / /tmp/
""".format(digest="e" * 64)


def wheel(tag: str, needed: tuple[str, ...] | None) -> WheelEntry:
    return WheelEntry(
        f"mooncake_lite-0.3.13.post1-{tag}-{tag}-linux_x86_64.whl",
        "a" * 64,
        1000,
        "mooncake-lite",
        "0.3.13.post1",
        (),
        needed=needed,
    )


def wheel_table(*wheels: WheelEntry) -> dict:  # type: ignore[type-arg]
    (pin,), _ = scan(DOCKERFILE, "docker/Dockerfile")
    draft = propose("mooncake-lite", [PinnedImage(pin, wheels, {}, {}, "layers")])
    text = render(draft, Upstream("https://example.org/mooncake", branch="main"), Build(command="make"), written_by="t")
    return tomllib.loads(text)["component"][0]["wheel"]  # type: ignore[no-any-return]


HIP6 = ("libamdhip64.so.6", "libc.so.6", "libibverbs.so.1")


@pytest.mark.parametrize(
    ("wheels", "required"),
    [
        ((wheel("cp311", HIP6),), ["libamdhip64.so*"]),
        ((wheel("cp311", HIP6), wheel("cp312", (*HIP6, "libhsa-runtime64.so.1"))), ["libamdhip64.so*"]),
        ((wheel("cp311", ("libc.so.6",)),), None),  # pure Python, or a C extension with no ROCm in it
        ((wheel("cp311", ("libamdhip64-5f3a9c1e.so.6", "libc.so.6")),), None),  # a copy auditwheel grafted in
        ((wheel("cp311", HIP6), wheel("cp312", None)), None),  # one wheel's DT_NEEDED not recorded
        ((wheel("cp311", ("librocblas.so.4", "libamdhip64.so.6")),), ["libamdhip64.so*"]),  # the runtime alone
    ],
)
def test_require_needed_is_the_rocm_runtime_every_wheel_links(
    wheels: tuple[WheelEntry, ...], required: list[str] | None
) -> None:
    assert wheel_table(*wheels).get("require_needed") == required

"""The ROCm libraries a consuming image ships, by name: the one list of them (docs/design.md
§1.3). The verify rules read it (a wheel must not carry one, and its local version's ROCm
must be the HIP runtime's its ELF files need); the from → to diff reads the runtimes
(their soname version is ROCm's major). Pure.

A library is named here as its files are, without `.so` and what follows: `libamdhip64`
for `libamdhip64.so.7`. The names were checked against the files ROCm's packages install
in `/opt/rocm/lib` (hip-runtime-amd: libamdhip64, libhiprtc, libhiprtc-builtins; hsa-rocr:
libhsa-runtime64; comgr: libamd_comgr; roctracer: libroctracer64, libroctx64; rocm-smi-lib,
amdsmi, rocprofiler(-sdk, -register); the math libraries), and against what PyTorch's ROCm
wheels copy in beside torch (librocfft-device-0…, a library of rocFFT's own).

auditwheel repair copies every library it does not `--exclude` into `<package>.libs/` and
renames it `<name>-<8 hex of its sha256>.<rest>` (`libamdhip64-5f3a9c1e.so.7`), setting
that name as its SONAME and rewriting the DT_NEEDED of the wheel's ELF files to it
(auditwheel's `repair.copylib`: "Rename the shared object from soname to
soname.<unique>"; `--exclude SONAME`: "Exclude SONAME from grafting into the resulting
wheel", globs allowed). `library_of` sees through that renaming.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# The runtimes whose soname version is ROCm's major version (libamdhip64.so.7 is ROCm 7).
HIP_RUNTIME = "libamdhip64"
ROCM_RUNTIMES: tuple[str, ...] = (HIP_RUNTIME, "libhsa-runtime64")

# Every library of ROCm that an image ships and a wheel must link against, not carry. A
# name also covers its package's own `name-…` libraries (librocfft-device-0,
# libhiprtc-builtins, librocprofiler-sdk), but not a longer name (libhipblas is not
# libhipblaslt, which is listed of its own).
ROCM_LIBRARIES: tuple[str, ...] = ROCM_RUNTIMES + (
    "libamd_comgr",
    "libhiprtc",
    "libhsakmt",
    "librocm-core",
    "librocm_smi64",
    "libamd_smi",
    "libroctracer64",
    "libroctx64",
    "librocprofiler",
    "librocprofiler64",
    "librocprofiler64v2",
    "librocblas",
    "libhipblas",
    "libhipblaslt",
    "librocfft",
    "libhipfft",
    "librocrand",
    "libhiprand",
    "librocsparse",
    "libhipsparse",
    "libhipsparselt",
    "librocsolver",
    "libhipsolver",
    "libMIOpen",
    "librccl",
)

# name[-8 hex].so[.version]: auditwheel puts its hash before the first dot of the file name.
_FILE = re.compile(r"^(?P<name>[^/.]+?)(?:-(?P<hash>[0-9a-f]{8}))?\.so(?:\.(?P<version>[^/]*))?$")


@dataclass(frozen=True)
class SharedLibrary:
    """A shared library's file name or soname, read: `libamdhip64-5f3a9c1e.so.7` is
    library libamdhip64, renamed by auditwheel (hash 5f3a9c1e), version 7."""

    name: str
    hash: str | None
    version: str | None

    @property
    def major(self) -> str | None:
        """The first number of the version after `.so` (7 of libamdhip64.so.7.2.70200)."""
        first = (self.version or "").split(".")[0]
        return first if first.isdigit() else None


def library_of(file_name: str) -> SharedLibrary | None:
    """`file_name` (a soname, a DT_NEEDED entry or a path's last part) read as a shared
    library; None if it is not named like one."""
    match = _FILE.match(file_name.rsplit("/", 1)[-1])
    if match is None:
        return None
    return SharedLibrary(match.group("name"), match.group("hash"), match.group("version"))


def grafted(file_name: str) -> bool:
    """Whether `file_name` is a copy auditwheel grafted into a wheel (libamdhip64-5f3a9c1e.so.7)."""
    read = library_of(file_name)
    return read is not None and read.hash is not None


def rocm_library(name: str) -> str | None:
    """The ROCm library (from ROCM_LIBRARIES) that a library named `name` is, or None."""
    for library in ROCM_LIBRARIES:
        if name == library or name.startswith(library + "-"):
            return library
    return None


def hip_majors(needed: Sequence[str]) -> list[str]:
    """The majors of the HIP runtime that DT_NEEDED entries name (`libamdhip64.so.6` → 6), sorted."""
    majors = {lib.major for name in needed if (lib := library_of(name)) and lib.name == HIP_RUNTIME and lib.major}
    return sorted(majors, key=int)

"""The verify rules about ROCm itself (docs/design.md §1.3): the consuming image provides
ROCm, so a wheel carries none of its libraries (core/wheel/rocmlibs.py names them), and the
ROCm a wheel's local version names is the one its ELF files link against. Pure; each
broken rule is one sentence, which `checks` files under its kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .localversion import carried
from .rocmlibs import HIP_RUNTIME, ROCM_RUNTIMES, grafted, hip_majors, library_of, rocm_library

if TYPE_CHECKING:  # a wheel's report is read here; the reading (wheelreport) loads where a wheel is read
    from .report import WheelReport


def vendored_rocm_problems(report: WheelReport) -> list[str]:
    """One sentence per ROCm library the wheel carries: an ELF member named like one or
    whose soname is one, renamed by auditwheel or not; else a DT_NEEDED naming a renamed
    copy (libamdhip64-5f3a9c1e.so.7) no member carries. The image must provide them: two
    copies of the HIP runtime in one process, or one of another ROCm than the image's
    driver stack, is what the image's ROCm exists to prevent."""
    found: list[str] = []
    carried_names: set[str] = set()
    for elf in report.elf:
        names = [elf.path.rsplit("/", 1)[-1], *([elf.soname] if elf.soname else [])]
        carried_names.update(names)
        library = next((rocm for name in names if (rocm := _rocm_name(name))), None)
        if library is not None:
            found.append(f"{elf.path} carries {_what(library)}; the image must provide it {_exclude(library)}")
    for elf in report.elf:
        for needed in elf.needed:
            library = _rocm_name(needed) if grafted(needed) and needed not in carried_names else None
            if library is not None:
                found.append(
                    f"{elf.path} needs {needed}, a copy of {_what(library)} grafted by auditwheel; "
                    f"the image must provide it {_exclude(library)}"
                )
    return found


def _rocm_name(file_name: str) -> str | None:
    """The name of the ROCm library a file or soname is (librocfft-device-0), else None."""
    read = library_of(file_name)
    return read.name if read is not None and rocm_library(read.name) else None


def _what(library: str) -> str:
    return f"the ROCm runtime {library}" if library in ROCM_RUNTIMES else f"the ROCm library {library}"


def _exclude(library: str) -> str:
    return f"(auditwheel repair --exclude '{library}.so*')"


def rocm_major_problems(report: WheelReport) -> list[str]:
    """A local version naming a ROCm (rocm7.2.4) whose major is not the HIP runtime's its
    ELF files need (libamdhip64.so.6): the wheel was built against another ROCm than it
    says, and its image tag would promise the wrong one. Not judged when either is absent."""
    segment = carried(report.version, "rocm")
    majors = hip_majors([library for elf in report.elf for library in elf.needed])
    if segment is None or not majors:
        return []
    said = segment[len("rocm") :].split(".")[0]
    wrong = [major for major in majors if major != said]
    if not wrong:
        return []
    needs = ", ".join(f"{HIP_RUNTIME}.so.{major}" for major in majors)
    return [f"version {report.version} says {segment}, but its ELF files need {needs} (ROCm {'/'.join(majors)})"]

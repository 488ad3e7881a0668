"""What the verify step needs from one ELF file: its DT_NEEDED list and its device code.

pyelftools reads the headers, the dynamic section and the section table; the device
code sections (`.hip_fatbin`, `.nv_fatbin`) are read by `offload` through a bounded
window, so no offset in a hostile file can make us read outside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from .amdgpu import processor_sort_key, sorted_processors
from .binwindow import Window
from .offload import Bundle, BundleError, CudaEntry, ReadBudget, read_bundles, read_cuda_fatbin

ELF_MAGIC = b"\x7fELF"
HIP_SECTIONS = (".hip_fatbin",)
CUDA_SECTIONS = (".nv_fatbin", "__nv_relfatbin")

if TYPE_CHECKING:  # pyelftools (many modules to import) loads when an ELF is read, not with the loop
    from elftools.elf.elffile import ELFFile


class ElfError(ValueError):
    """The file starts like an ELF but cannot be read as one."""


@dataclass(frozen=True)
class ElfReport:
    """One ELF member of a wheel: what it links against and the GPU code it carries."""

    path: str
    needed: tuple[str, ...]
    gpu: str | None  # "hip" | "cuda" | None
    targets: tuple[str, ...]  # HIP target ids as written (features kept), in AMD's order
    archs: tuple[str, ...]  # HIP processors (no features) or CUDA sm_/compute_ names
    bundles: int  # HIP bundles read (one per source file in a linked library)
    compressed_bundles: int
    runpath: tuple[str, ...] = ()  # DT_RUNPATH folders, as written: `$ORIGIN/../lib`
    rpath: tuple[str, ...] = ()  # DT_RPATH folders: searched before LD_LIBRARY_PATH, and only with no DT_RUNPATH
    soname: str | None = None  # DT_SONAME: the name a library is linked by (auditwheel sets a grafted one's)

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "needed": list(self.needed),
            "gpu": self.gpu,
            "archs": list(self.archs),
            "targets": list(self.targets),
            "bundles": self.bundles,
            "compressed_bundles": self.compressed_bundles,
            "runpath": list(self.runpath),
            "rpath": list(self.rpath),
            "soname": self.soname,
        }


def read_elf(stream: BinaryIO, size: int, path: str, budget: ReadBudget | None = None) -> ElfReport:
    """Read an ELF from a seekable stream of `size` bytes; ElfError on malformed data or
    device code past `budget` (shared by the members of one wheel)."""
    from elftools.elf.elffile import ELFFile

    budget = ReadBudget() if budget is None else budget
    try:
        elf = ELFFile(stream)
        needed, runpath, rpath, soname = _needed(elf)
        sections = {
            section.name: (section["sh_offset"], section["sh_size"], section["sh_type"])
            for section in elf.iter_sections()
        }
    except ElfError:
        raise
    except Exception as exc:  # pyelftools raises many kinds on malformed input
        raise ElfError(f"{path} is not a readable ELF file ({type(exc).__name__}: {exc})") from None

    bundles: list[Bundle] = []
    cuda: list[CudaEntry] = []
    has_cuda = False
    for name, (offset, length, kind) in sections.items():
        if kind == "SHT_NOBITS" or name not in HIP_SECTIONS + CUDA_SECTIONS:
            continue
        if offset + length > size:
            raise ElfError(f"{path}: section {name} runs past the end of the file")
        window = Window(stream, offset, length)
        if name in CUDA_SECTIONS:
            has_cuda = True
            try:
                cuda += read_cuda_fatbin(window) if name == ".nv_fatbin" else []
            except BundleError:
                pass  # CUDA code is refused whatever its shape; its archs are a courtesy
            continue
        try:
            bundles += read_bundles(window, budget)
        except BundleError as exc:
            raise ElfError(f"{path}: {name}: {exc}") from None

    parsed = {entry.target for bundle in bundles for entry in bundle.entries if entry.target}
    targets = [str(target) for target in sorted(parsed, key=lambda t: (processor_sort_key(t.processor), str(t)))]
    processors = {entry.target.processor for bundle in bundles for entry in bundle.entries if entry.target}
    gpu: str | None = None
    archs: list[str] = []
    if has_cuda:
        gpu = "cuda"
        archs = sorted({entry.arch for entry in cuda if entry.sm})
    elif targets:
        gpu = "hip"
        archs = sorted_processors(processors)
    return ElfReport(
        path=path,
        needed=tuple(needed),
        gpu=gpu,
        targets=tuple(targets),
        archs=tuple(archs),
        bundles=len(bundles),
        compressed_bundles=sum(1 for bundle in bundles if bundle.compression),
        runpath=tuple(runpath),
        rpath=tuple(rpath),
        soname=soname,
    )


def _needed(elf: ELFFile) -> tuple[list[str], list[str], list[str], str | None]:
    """DT_NEEDED; the folders DT_RUNPATH and DT_RPATH add to the search
    (`$ORIGIN/../torch/lib`, as written), both kept: the loader searches them at
    different places, and ignores DT_RPATH when DT_RUNPATH is there (ld.so(8)); and
    DT_SONAME."""
    from elftools.elf.dynamic import DynamicSection

    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            tags = list(section.iter_tags())  # pyelftools sets each tag's attribute at run time: getattr
            needed = [str(getattr(tag, "needed")) for tag in tags if tag.entry.d_tag == "DT_NEEDED"]  # noqa: B009
            runpath = [str(getattr(tag, "runpath")) for tag in tags if tag.entry.d_tag == "DT_RUNPATH"]  # noqa: B009
            rpath = [str(getattr(tag, "rpath")) for tag in tags if tag.entry.d_tag == "DT_RPATH"]  # noqa: B009
            sonames = [str(getattr(tag, "soname")) for tag in tags if tag.entry.d_tag == "DT_SONAME"]  # noqa: B009
            return needed, _folders(runpath), _folders(rpath), (sonames[0] if sonames else None)
    return [], [], [], None


def _folders(texts: list[str]) -> list[str]:
    return [folder for text in texts for folder in text.split(":") if folder]

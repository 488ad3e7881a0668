"""A stub HIP library, written byte by byte: what `wheelpin demo`'s upstream ships so that
the verify step (docs/design.md §1.3) has real device code to read on a machine with no
compiler.

`hip_library` returns a small x86-64 ELF shared object laid out as a linker lays out a
HIP library: a dynamic section (DT_NEEDED on the HIP runtime, DT_SONAME, and the
DT_HASH / DT_SYMTAB / DT_STRTAB the gABI requires of a shared object), a `.hip_fatbin`
section holding one clang offload bundle, and a section header table. The bundle holds
an empty host entry and one AMDGPU code object per target. The library has no host code
and no kernels a GPU could run; it carries the shapes wheelpin's verifier and LLVM's
tools read (`llvm-readelf`, `clang-offload-bundler`), nothing more.

Formats, as documented (facts, not code, taken from each):
- ELF: the System V gABI, chapters 4 (header, sections, symbol and string tables) and 5
  (program headers, the dynamic section, the SysV hash table); x86-64 is EM_X86_64 (62).
- Offload bundle: LLVM's ClangOffloadBundler docs, "Bundled Code Object Layout": the
  magic string, a u64 entry count, per entry u64 offset (from the bundle's start), u64
  size, u64 id length and the id, then the code objects. Ids are
  `<offload kind>-<target triple>-<target id>`; clang 19 writes the host's as
  `host-x86_64-unknown-linux--` and puts it first, then the others sorted, each code
  object at a multiple of 4096.
- AMDGPU code objects: LLVM's AMDGPUUsage, "ELF Header": EM_AMDGPU (224),
  ELFOSABI_AMDGPU_HSA (64), EI_ABIVERSION 3 for code object v5 (clang 19's default),
  ET_DYN; e_flags holds the processor in EF_AMDGPU_MACH (table "AMDGPU ELF Header
  e_flags") and, from code object v4 on, the xnack and sramecc settings (0x100 and 0x400
  for "any", what clang emits for a target id that names neither).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from .amdgpu import TargetId
from .elf import ELF_MAGIC, HIP_SECTIONS
from .offload import PLAIN_MAGIC

# LLVM AMDGPUUsage, table "AMDGPU ELF Header e_flags for Code Object V4 and After":
# EF_AMDGPU_MACH_AMDGCN_<processor>, for the processors the stub is asked for.
EF_AMDGPU_MACH = {"gfx90a": 0x03F, "gfx942": 0x04C, "gfx950": 0x04F}
EF_AMDGPU_FEATURE_XNACK_ANY = 0x100
EF_AMDGPU_FEATURE_SRAMECC_ANY = 0x400
EM_X86_64, EM_AMDGPU = 62, 224
ELFOSABI_NONE, ELFOSABI_AMDGPU_HSA = 0, 64
ELFABIVERSION_AMDGPU_HSA_V5 = 3
HOST_ENTRY = "host-x86_64-unknown-linux--"
HIP_ENTRY_PREFIX = "hipv4-amdgcn-amd-amdhsa--"
BUNDLE_ALIGN = 4096
S_ENDPGM = struct.pack("<I", 0xBF810000)  # the one instruction of each code object's .text

_ET_DYN = 3
_SHT_PROGBITS, _SHT_STRTAB, _SHT_HASH, _SHT_DYNAMIC, _SHT_DYNSYM = 1, 3, 5, 6, 11
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 1, 2, 4
_PT_LOAD, _PT_DYNAMIC = 1, 2
_PF_X, _PF_W, _PF_R = 1, 2, 4
_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB = 0, 1, 4, 5, 6
_DT_STRSZ, _DT_SYMENT, _DT_SONAME = 10, 11, 14
_EHDR, _PHDR, _SHDR, _SYM, _DYN = "<16sHHIQQQIHHHHHH", "<IIQQQQQQ", "<IIQQQQIIQQ", 24, "<qQ"


@dataclass(frozen=True)
class _Section:
    name: str
    kind: int
    data: bytes
    flags: int = 0
    align: int = 1
    entsize: int = 0
    link: str = ""  # the name of the section sh_link names
    info: int = 0


def hip_library(*, soname: str, needed: Sequence[str], targets: Sequence[str]) -> bytes:
    """An x86-64 shared object named `soname`, needing `needed`, whose `.hip_fatbin`
    holds one offload bundle with a code object for each of `targets` (gfx942…)."""
    strings = _Strings()
    needed_at = [strings.add(name) for name in needed]
    soname_at = strings.add(soname)

    def dynamic(at: dict[str, int]) -> _Section:
        tags = [
            *((_DT_NEEDED, offset) for offset in needed_at),
            (_DT_SONAME, soname_at),
            (_DT_HASH, at.get(".hash", 0)),
            (_DT_SYMTAB, at.get(".dynsym", 0)),
            (_DT_STRTAB, at.get(".dynstr", 0)),
            (_DT_STRSZ, len(strings.data)),
            (_DT_SYMENT, _SYM),
            (_DT_NULL, 0),
        ]
        return _Section(
            ".dynamic",
            _SHT_DYNAMIC,
            b"".join(struct.pack(_DYN, *tag) for tag in tags),
            _SHF_WRITE | _SHF_ALLOC,
            8,
            struct.calcsize(_DYN),
            ".dynstr",
        )

    sections = [
        # the SysV hash table of the one (null) symbol: nbucket 1, nchain 1, both empty
        _Section(".hash", _SHT_HASH, struct.pack("<4I", 1, 1, 0, 0), _SHF_ALLOC, 8, 4, ".dynsym"),
        _Section(".dynsym", _SHT_DYNSYM, bytes(_SYM), _SHF_ALLOC, 8, _SYM, ".dynstr", info=1),
        _Section(".dynstr", _SHT_STRTAB, strings.data, _SHF_ALLOC),
        _Section(HIP_SECTIONS[0], _SHT_PROGBITS, offload_bundle(targets), _SHF_ALLOC, BUNDLE_ALIGN),
    ]
    # Addresses are file offsets (one PT_LOAD maps the file from 0); the dynamic section's
    # size does not depend on them, so a first layout gives the addresses it holds.
    at = _layout([*sections, dynamic({})])
    return _elf([*sections, dynamic(at)], machine=EM_X86_64, osabi=ELFOSABI_NONE, abiversion=0, flags=0)


def offload_bundle(targets: Sequence[str]) -> bytes:
    """A plain clang offload bundle: the host's empty entry first, then a code object per
    target, each at a multiple of BUNDLE_ALIGN from the bundle's start."""
    entries = {HOST_ENTRY: b""} | {HIP_ENTRY_PREFIX + target: code_object(target) for target in sorted(targets)}
    header = len(PLAIN_MAGIC) + 8 + sum(24 + len(entry_id) for entry_id in entries)
    offset = _aligned(header, BUNDLE_ALIGN)
    table, payload = b"", b""
    for entry_id, data in entries.items():
        payload += bytes(offset - _aligned(header, BUNDLE_ALIGN) - len(payload)) + data
        table += struct.pack("<QQQ", offset, len(data), len(entry_id)) + entry_id.encode("ascii")
        offset = _aligned(offset + len(data), BUNDLE_ALIGN)
    head = PLAIN_MAGIC + struct.pack("<Q", len(entries)) + table
    return head + bytes(_aligned(header, BUNDLE_ALIGN) - len(head)) + payload


def code_object(target: str) -> bytes:
    """An AMDGPU code object (v5) for `target`, a processor without features (gfx942)."""
    parsed = TargetId.parse_known(target)
    if parsed.features or parsed.processor not in EF_AMDGPU_MACH:
        raise ValueError(
            f"the stub has no EF_AMDGPU_MACH value for {target!r} "
            f"(it knows {', '.join(EF_AMDGPU_MACH)}, without features)"
        )
    flags = EF_AMDGPU_MACH[parsed.processor] | EF_AMDGPU_FEATURE_XNACK_ANY | EF_AMDGPU_FEATURE_SRAMECC_ANY
    text = _Section(".text", _SHT_PROGBITS, S_ENDPGM, _SHF_ALLOC | _SHF_EXECINSTR, 256)
    return _elf(
        [text], machine=EM_AMDGPU, osabi=ELFOSABI_AMDGPU_HSA, abiversion=ELFABIVERSION_AMDGPU_HSA_V5, flags=flags
    )


class _Strings:
    """A string table: NUL first, each string once, NUL-terminated."""

    def __init__(self) -> None:
        self.data = b"\0"

    def add(self, text: str) -> int:
        at = self.data.find(text.encode() + b"\0")
        if at > 0 and self.data[at - 1] == 0:
            return at
        at = len(self.data)
        self.data += text.encode() + b"\0"
        return at


def _aligned(value: int, align: int) -> int:
    return -(-value // align) * align


def _phdr_count(sections: Sequence[_Section]) -> int:
    return 1 + any(section.kind == _SHT_DYNAMIC for section in sections)


def _layout(sections: Sequence[_Section]) -> dict[str, int]:
    """The file offset of each section: after the ELF and program headers, each aligned."""
    position = struct.calcsize(_EHDR) + _phdr_count(sections) * struct.calcsize(_PHDR)
    at: dict[str, int] = {}
    for section in sections:
        position = _aligned(position, section.align)
        at[section.name] = position
        position += len(section.data)
    return at


def _elf(sections: list[_Section], *, machine: int, osabi: int, abiversion: int, flags: int) -> bytes:
    """An ELF64 little-endian ET_DYN file of `sections` (all SHF_ALLOC), plus .shstrtab
    and the section header table; one PT_LOAD maps it all at address = file offset, and
    PT_DYNAMIC points at a .dynamic."""
    names = _Strings()
    name_at = {section.name: names.add(section.name) for section in sections}
    shstrtab_name = names.add(".shstrtab")
    at = _layout(sections)
    loaded = max(at[s.name] + len(s.data) for s in sections)
    shstrtab_at = loaded
    shoff = _aligned(shstrtab_at + len(names.data), 8)
    phnum = _phdr_count(sections)
    segment = (
        _PF_R
        | (_PF_W if any(s.flags & _SHF_WRITE for s in sections) else 0)
        | (_PF_X if any(s.flags & _SHF_EXECINSTR for s in sections) else 0)
    )
    phdrs = struct.pack(_PHDR, _PT_LOAD, segment, 0, 0, 0, loaded, loaded, 0x1000)
    for section in sections:
        if section.kind == _SHT_DYNAMIC:
            start, size = at[section.name], len(section.data)
            phdrs += struct.pack(_PHDR, _PT_DYNAMIC, _PF_R | _PF_W, start, start, start, size, size, 8)
    ident = ELF_MAGIC + bytes([2, 1, 1, osabi, abiversion]) + bytes(7)  # ELFCLASS64, LSB, EV_CURRENT
    header = struct.pack(
        _EHDR,
        ident,
        _ET_DYN,
        machine,
        1,
        0,
        struct.calcsize(_EHDR),
        shoff,
        flags,
        struct.calcsize(_EHDR),
        struct.calcsize(_PHDR),
        phnum,
        struct.calcsize(_SHDR),
        len(sections) + 2,
        len(sections) + 1,
    )
    body = bytearray(header + phdrs)
    index = {section.name: number for number, section in enumerate(sections, start=1)}
    table = bytes(struct.calcsize(_SHDR))
    for section in sections:
        body += bytes(at[section.name] - len(body)) + section.data
        table += struct.pack(
            _SHDR,
            name_at[section.name],
            section.kind,
            section.flags,
            at[section.name],
            at[section.name],
            len(section.data),
            index.get(section.link, 0),
            section.info,
            section.align,
            section.entsize,
        )
    body += names.data + bytes(shoff - shstrtab_at - len(names.data))
    table += struct.pack(_SHDR, shstrtab_name, _SHT_STRTAB, 0, 0, shstrtab_at, len(names.data), 0, 0, 1, 0)
    return bytes(body) + table

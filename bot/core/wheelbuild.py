"""Writing a wheel file from files and metadata, byte for byte reproducibly.

wheelpin itself never builds the wheels it ships (builders do); this serves the `demo`
(whose small upstream package is built into a wheel) and the tests, which need wheels
of every shape, good and bad, built the way a real build backend lays them out.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.tags import parse_tag
from packaging.utils import canonicalize_name

_EPOCH = (1980, 1, 1, 0, 0, 0)


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def build_wheel(
    out_dir: Path,
    *,
    name: str,
    version: str,
    files: Mapping[str, bytes],
    requires_dist: Iterable[str] = (),
    tag: str = "py3-none-any",
    build: str | None = None,
    summary: str = "",
) -> Path:
    """Write `name-version[-build]-tag.whl` into `out_dir` and return its path."""
    stem = canonicalize_name(name).replace("-", "_")
    dist_info = f"{stem}-{version}.dist-info"
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        *([f"Summary: {summary}"] if summary else []),
        *(f"Requires-Dist: {requirement}" for requirement in requires_dist),
    ]
    purelib = tag.endswith("-none-any")
    wheel = [
        "Wheel-Version: 1.0",
        "Generator: wheelpin",
        f"Root-Is-Purelib: {'true' if purelib else 'false'}",
        *(f"Tag: {t}" for t in sorted(str(t) for t in parse_tag(tag))),
        *([f"Build: {build}"] if build else []),
    ]
    members: dict[str, bytes] = dict(files)
    members[f"{dist_info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    members[f"{dist_info}/WHEEL"] = ("\n".join(wheel) + "\n").encode()
    record_lines = [f"{path},{record_hash(data)},{len(data)}" for path, data in members.items()]
    record_lines.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = ("\n".join(record_lines) + "\n").encode()

    parts = [stem, version, *([build] if build else []), tag]
    path = out_dir / ("-".join(parts) + ".whl")
    out_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            info = zipfile.ZipInfo(member, date_time=_EPOCH)
            executable = data.startswith(b"\x7fELF")
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path

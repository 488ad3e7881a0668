"""Benchmark: what attaching the provenance and SBOM adds to a publish (bytes and time).

Run from the project root:  python bench/provenance.py [--wheels 1,4] [--runs 5]
Starts Debian's docker-registry on a loopback port (no referrers API: the fallback tag
is written too, the dearer path), publishes images of N small wheels with settle 0, and
prints, for each N: the publish's bytes uploaded and time; what attaching the documents
adds, unsigned and signed (ECDSA P-256), bytes uploaded and time; and what the attach
costs again when the documents are there already (a republish: nothing is pushed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

from bot.adapters.imagestore import RegistryRepository  # noqa: E402
from bot.adapters.logs import configure_logging  # noqa: E402
from bot.adapters.provenance import attach_provenance, facts_of  # noqa: E402
from bot.adapters.publisher import publish  # noqa: E402
from bot.adapters.registry import RegistryClient  # noqa: E402
from bot.core.wheel.report import inspect_wheel  # noqa: E402
from tests.fixtures.servers import Registry  # noqa: E402
from tests.fixtures.wheels import build_wheel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheels", default="1,4", help="wheels per image, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="images published per case (medians printed)")
    args = parser.parse_args()
    configure_logging(level="warning")
    key = ec.generate_private_key(ec.SECP256R1())
    print(
        f"{'wheels':>6} {'publish B':>10} {'publish ms':>10} {'+unsigned B':>11} {'+unsigned ms':>12} "
        f"{'+signed B':>9} {'+signed ms':>10} {'again B':>7} {'again ms':>8}"
    )
    with tempfile.TemporaryDirectory(prefix="wheelpin-bench-") as scratch:
        folder = Path(scratch)
        registry = Registry(folder / "registry")
        try:
            for count in (int(n) for n in args.wheels.split(",")):
                rows = [run(registry, folder, count, run_index, key) for run_index in range(args.runs)]
                medians = [statistics.median(column) for column in zip(*rows, strict=True)]
                print(
                    f"{count:>6} {medians[0]:>10.0f} {medians[1]:>10.1f} {medians[2]:>11.0f} {medians[3]:>12.1f} "
                    f"{medians[4]:>9.0f} {medians[5]:>10.1f} {medians[6]:>7.0f} {medians[7]:>8.1f}"
                )
        finally:
            registry.stop()


def run(registry: Registry, folder: Path, count: int, index: int, key: ec.EllipticCurvePrivateKey) -> list[float]:
    made = folder / f"w{count}-{index}"
    made.mkdir()
    wheels = [
        build_wheel(
            made,
            name="benchwheel",
            version=f"1.{index}+g05fc77a0",
            files={"benchwheel/__init__.py": f"x = {index}\n".encode()},
            requires_dist=["numpy<=2.2.6", "torch>=2.9"],
            tag=f"cp3{10 + n}-cp3{10 + n}-linux_x86_64",
        )
        for n in range(count)
    ]
    reports = [inspect_wheel(wheel) for wheel in wheels]
    figures: list[float] = []
    for signed in (None, key):
        target = RegistryRepository(RegistryClient(registry.host), f"bench/prov-{count}-{'s' if signed else 'u'}")
        started = time.perf_counter()
        published = publish(target, f"v{index}", wheels, reports, revision="05fc77a0" * 5, settle=0)
        publish_ms = (time.perf_counter() - started) * 1000
        facts = facts_of(
            published,
            source="https://github.com/o/u",
            revision="05fc77a0" * 5,
            component="bench",
            rules=None,
            build="bench",
            smoke=[],
        )
        started = time.perf_counter()
        _, sent = attach_provenance(target, facts, signed)
        attach_ms = (time.perf_counter() - started) * 1000
        if signed is None:
            figures += [published.bytes_uploaded, publish_ms, sent, attach_ms]
        else:
            figures += [sent, attach_ms]
            started = time.perf_counter()
            _, again = attach_provenance(target, facts, signed)
            figures += [again, (time.perf_counter() - started) * 1000]
    return figures


if __name__ == "__main__":
    main()

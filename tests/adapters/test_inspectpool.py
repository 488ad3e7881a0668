"""Members checked by a few processes for a large wheel (bot/adapters/inspectpool.py over
bot/core/wheel/report.py's shares): the report is the one a single process makes, and
the per-wheel budget still holds when the bundles that pass it lie in members different
workers read."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.adapters import inspectpool
from bot.core.errors import InputError
from bot.core.wheel import offload
from bot.core.wheel import report as wheelreport
from tests.fixtures import hostile


def report_of(wheel: Path, monkeypatch: pytest.MonkeyPatch, *, parallel: bool) -> wheelreport.WheelReport:
    """A small test wheel taken as large (PARALLEL_FROM 0), read in two processes or here."""
    monkeypatch.setattr(wheelreport, "PARALLEL_FROM", 0)
    return wheelreport.inspect_wheel(
        wheel, spread=wheelreport.Spread(2, inspectpool.in_processes) if parallel else None
    )


def test_parallel_and_single_process_reports_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rocm_wheel: Path
) -> None:
    alone = report_of(rocm_wheel, monkeypatch, parallel=False)
    shared = report_of(rocm_wheel, monkeypatch, parallel=True)
    assert alone == shared and alone.elf and alone.archs


def test_a_record_mismatch_is_found_whichever_worker_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library = hostile.minimal_elf({".text": b"\x90" * 64})
    wheel = hostile.elf_wheel(tmp_path / hostile.WHEEL, library, listed=False)
    alone = report_of(wheel, monkeypatch, parallel=False)
    shared = report_of(wheel, monkeypatch, parallel=True)
    assert alone.integrity == shared.integrity and any("not listed in RECORD" in p for p in shared.integrity)


def test_entries_over_the_wheel_s_budget_in_two_members_are_refused_in_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each member keeps 60% of the entries a wheel may hold: each worker alone is within its
    budget; together they are not, as one process would have found."""
    share = offload.MAX_ENTRIES * 6 // 10
    members = [
        hostile.deflated(
            f"demo/_c{i}.so", hostile.minimal_elf({".hip_fatbin": hostile.plain_bundle_with(share, seed=i)})
        )
        for i in range(2)
    ]
    wheel = hostile.write_zip(tmp_path / hostile.WHEEL, [*members, *hostile.dist_info()])
    for parallel in (False, True):
        with pytest.raises(InputError, match="pass the"):
            report_of(wheel, monkeypatch, parallel=parallel)


def test_the_commands_read_a_large_wheel_in_processes_and_a_small_one_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rocm_wheel: Path
) -> None:
    """`inspectpool.inspect_wheel`, which every command and the loop call, spreads a wheel
    of PARALLEL_FROM compressed bytes or more over processes; below, no process starts."""
    runs: list[int] = []

    def counted(path: Path, shares: list[list[str]], inflate: int, entries: int) -> list[wheelreport.ShareResult]:
        runs.append(len(shares))
        return real(path, shares, inflate, entries)

    real = inspectpool.in_processes
    monkeypatch.setattr(inspectpool, "in_processes", counted)
    monkeypatch.setattr(inspectpool, "workers", lambda: 2)
    small = inspectpool.inspect_wheel(rocm_wheel)
    assert runs == []
    monkeypatch.setattr(wheelreport, "PARALLEL_FROM", 0)
    assert inspectpool.inspect_wheel(rocm_wheel) == small and runs == [2]

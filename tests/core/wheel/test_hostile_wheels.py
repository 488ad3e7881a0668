"""Hostile and unlucky wheels: `wheel inspect` stays bounded in memory and time and says
what it refused in one sentence. The wheels come from
tests/fixtures/hostile.py, here at small scale; bench/hostile_inputs.py builds the same
cases at the size they were reported at and prints time and peak RSS."""

from __future__ import annotations

import io
import signal
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.errors import InputError
from bot.core.wheel import archive, offload
from bot.core.wheel.binwindow import Window
from bot.core.wheel.report import MAX_MISSING_NAMED, inspect_wheel, read_wheel_metadata
from tests.cli import wheelpin
from tests.fixtures import hostile
from tests.fixtures.bundles import aligned, compressed_bundle, hip_entries, plain_bundle

HOSTILE = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail (TimeoutError) when the block runs longer than `seconds` of wall time."""

    def expired(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def refused(path: Path, message: str, *, seconds: float = 10) -> str:
    """inspect_wheel refuses `path` within `seconds` in one sentence naming it."""
    with within(seconds), pytest.raises(InputError, match=message) as caught:
        inspect_wheel(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and "\n" not in text, text
    return text


def test_a_clean_small_wheel_is_still_read(tmp_path: Path) -> None:
    """The bounds refuse nothing real: a wheel with a RECORD and an ELF passes clean."""
    library = hostile.minimal_elf({".hip_fatbin": aligned(plain_bundle(hip_entries("gfx942")))})
    report = inspect_wheel(hostile.elf_wheel(tmp_path / hostile.WHEEL, library))
    assert report.integrity == () and report.requires_dist == ("numpy",)
    assert report.elf[0].archs == ("gfx942",) or list(report.elf[0].archs) == ["gfx942"]


# ---------------------------------------------------------------- RECORD


def test_a_record_larger_than_its_members_could_need_is_refused_unread(tmp_path: Path) -> None:
    """A RECORD far larger than its members could need (bench/hostile_inputs.py builds one of
    255 MiB in a 1.1 MB wheel); here 8 MiB. RECORD's bound comes from the central directory,
    not from what RECORD declares."""
    wheel = hostile.huge_record_wheel(tmp_path, 8 << 20)
    limit = archive_limit(wheel)
    assert limit < 8 << 20
    refused(wheel, rf"RECORD is \d+ bytes, over {limit}")


def archive_limit(wheel: Path) -> int:
    from bot.core.wheel.report import record_limit

    with zipfile.ZipFile(wheel) as opened:
        return record_limit(opened)


def test_a_record_listing_absent_members_names_a_few_and_counts_the_rest(tmp_path: Path) -> None:
    rows = b"".join(f"demo/gone{i},,\n".encode() for i in range(100))
    wheel = hostile.write_zip(tmp_path / hostile.WHEEL, hostile.dist_info(record=rows))
    problems = [p for p in inspect_wheel(wheel).integrity if "the archive does not hold" in p]
    assert len(problems) == MAX_MISSING_NAMED + 1
    assert problems[-1] == f"RECORD lists {100 - MAX_MISSING_NAMED} more members the archive does not hold"


def test_a_record_field_past_csv_s_limit_is_malformed_not_an_internal_error(tmp_path: Path) -> None:
    members = [hostile.deflated("demo/" + "a" * 60000, b"")] * 3
    names = [hostile.RawMember(f"demo/{i}{'a' * 60000}".encode(), m.data, m.crc, m.size) for i, m in enumerate(members)]
    record = b"demo/x" + b"b" * 140_000 + b",,\n"  # one field over csv's 131,072 characters
    wheel = hostile.write_zip(tmp_path / hostile.WHEEL, [*names, *hostile.dist_info(record=record)])
    refused(wheel, "RECORD is malformed")


# ---------------------------------------------------------------- offload bundles


def test_a_plain_bundle_of_more_entries_than_a_wheel_may_keep_is_refused(tmp_path: Path) -> None:
    """One entry past the budget (bench/hostile_inputs.py runs 2M of them)."""
    wheel = hostile.many_entries_wheel(tmp_path, offload.MAX_ENTRIES + 1)
    refused(wheel, rf"its {offload.MAX_ENTRIES + 1} entries pass the {offload.MAX_ENTRIES}")


def test_entries_are_counted_across_the_bundles_of_a_section() -> None:
    one = plain_bundle(hip_entries("gfx942", "gfx950"))  # three entries with the host
    section = aligned(one, one, one, align=16)
    budget = offload.ReadBudget(entries=8)
    with pytest.raises(offload.BundleError, match="pass the"):
        offload.read_bundles(Window(io.BytesIO(section), 0, len(section)), budget)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_zstd_bundle_declaring_2_to_the_63_bytes_is_refused_before_inflating(tmp_path: Path, version: int) -> None:
    """Zstandard RLE blocks declaring 2**63 bytes: refused before a byte is inflated
    (bench/hostile_inputs.py, "zstd-rle-declaring-2^63")."""
    wheel = hostile.rle_bomb_wheel(tmp_path, member_bytes=1 << 20, version=version)
    refused(wheel, "decompression bomb", seconds=5)


def test_bundles_share_one_inflate_budget_per_wheel() -> None:
    """Each bundle declares what it holds, truthfully; together they pass the budget."""
    inner = plain_bundle(hip_entries("gfx942", payload=bytes(4000)))
    bundle = compressed_bundle(inner, version=3)
    section = aligned(bundle, bundle, bundle, align=16)
    budget = offload.ReadBudget(inflate=2 * len(inner) + 10)
    with pytest.raises(offload.BundleError, match="this wheel may still inflate"):
        offload.read_bundles(Window(io.BytesIO(section), 0, len(section)), budget)
    assert (
        len(
            offload.read_bundles(
                Window(io.BytesIO(section), 0, len(section)), offload.ReadBudget(inflate=3 * len(inner))
            )
        )
        == 3
    )


def test_a_wheel_s_inflate_budget_follows_its_size() -> None:
    assert offload.ReadBudget.for_wheel(5_000).inflate == offload.INFLATE_FLOOR
    assert offload.ReadBudget.for_wheel(1 << 30).inflate == offload.INFLATE_PER_WHEEL_BYTE << 30


@HOSTILE
@given(
    version=st.sampled_from([1, 2, 3]),
    method=st.sampled_from([0, 1]),
    declared=st.one_of(st.integers(0, 1 << 20), st.integers(0, (1 << 64) - 1)),
    blocks=st.integers(2, 4096),
    digest=st.integers(0, (1 << 64) - 1),
)
def test_any_compressed_bundle_header_ends_quickly_in_a_sentence_or_a_report(
    tmp_path_factory: pytest.TempPathFactory, version: int, method: int, declared: int, blocks: int, digest: int
) -> None:
    if version < 3:
        declared &= 0xFFFFFFFF
    bundle = hostile.ccob(
        hostile.zstd_rle_frame(blocks), version=version, declared=declared, method=method, digest=digest
    )
    folder = tmp_path_factory.mktemp("ccob")
    wheel = hostile.elf_wheel(folder / hostile.WHEEL, hostile.minimal_elf({".hip_fatbin": bundle}))
    with within(10):
        try:
            inspect_wheel(wheel)
        except InputError as exc:
            assert "\n" not in str(exc)


# ---------------------------------------------------------------- the archive as a whole


def test_two_thousand_members_of_4_mib_are_refused_from_the_central_directory(tmp_path: Path) -> None:
    """8 MB of file declaring 8 GiB, every member under the per-member ratio floor
    (bench/hostile_inputs.py, "2000-members-of-4MiB")."""
    wheel = hostile.zeros_members_wheel(tmp_path, members=2000, member_bytes=4 << 20)
    refused(wheel, r"a ratio over 100 \(zip bomb\?\)", seconds=5)


@HOSTILE
@given(members=st.integers(300, 600), member_bytes=st.integers(1 << 20, 2 << 20))
def test_any_archive_of_zeros_past_the_archive_ratio_is_refused(
    tmp_path_factory: pytest.TempPathFactory, members: int, member_bytes: int
) -> None:
    wheel = hostile.zeros_members_wheel(tmp_path_factory.mktemp("zeros"), members=members, member_bytes=member_bytes)
    refused(wheel, "zip bomb", seconds=5)


def test_more_members_than_a_wheel_may_hold_are_refused_before_zipfile_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zipfile spends about 1 KB on each member it lists: the count is read from the end
    record (zip64 here, past 65,535 members) first."""
    wheel = hostile.many_members_wheel(tmp_path, archive.MAX_MEMBERS + 1)

    def not_called(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("zipfile read the central directory")

    monkeypatch.setattr(archive.zipfile, "ZipFile", not_called)
    refused(wheel, f"holds more than {archive.MAX_MEMBERS} members")


def test_the_declared_member_count_reads_both_end_records(tmp_path: Path) -> None:
    assert archive.declared_members(hostile.many_members_wheel(tmp_path / "a", 70_000)) == 70_002
    assert archive.declared_members(hostile.many_members_wheel(tmp_path / "b", 10)) == 12
    (tmp_path / "c").write_bytes(b"not a zip")
    assert archive.declared_members(tmp_path / "c") == 0


# ---------------------------------------------------------------- names and text


@HOSTILE
@given(
    before=st.text(st.characters(codec="utf-8", exclude_characters="\0/\\"), min_size=1, max_size=20),
    after=st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=20),
)
def test_a_member_name_holding_nul_is_refused(
    tmp_path_factory: pytest.TempPathFactory, before: str, after: str
) -> None:
    """zipfile cuts `filename` at NUL (orig_filename keeps it): `demo/a\\0../x` would be
    checked as `demo/a`."""
    name = f"demo/{before}\0{after}".encode("utf-8", "surrogatepass")
    wheel = hostile.nul_name_wheel(tmp_path_factory.mktemp("nul"), name)
    refused(wheel, "holds a NUL byte")


@pytest.mark.parametrize("bad", [b"caf\xe9", b"\xff\xfe", b"\xc3", b"numpy \xa0>=1"])
def test_metadata_that_is_not_utf8_is_refused_not_a_requirement_dropped(tmp_path: Path, bad: bytes) -> None:
    """packaging sets undecodable fields aside silently: the Requires-Dist would vanish."""
    metadata = hostile.METADATA + b"Requires-Dist: " + bad + b"\n"
    wheel = hostile.write_zip(tmp_path / hostile.WHEEL, hostile.dist_info(metadata=metadata))
    refused(wheel, r"METADATA is malformed \(METADATA is not UTF-8")
    with pytest.raises(InputError, match="not UTF-8"):
        read_wheel_metadata(wheel)


def test_a_metadata_field_packaging_cannot_read_is_refused(tmp_path: Path) -> None:
    metadata = hostile.METADATA + b"Name: other\n"  # Name twice: packaging sets it aside
    wheel = hostile.write_zip(tmp_path / hostile.WHEEL, hostile.dist_info(metadata=metadata))
    refused(wheel, "METADATA's name cannot be read")


def test_the_command_line_says_one_sentence_and_exit_2(tmp_path: Path) -> None:
    wheel = hostile.rle_bomb_wheel(tmp_path)
    result = wheelpin("wheel", "inspect", str(wheel))
    assert result.code == 2, result.stderr
    assert "decompression bomb" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("requirement", [b"numpy >=", b"torch (==2.9", b"a; python_version >> '3'"])
def test_a_requires_dist_packaging_cannot_read_is_refused(tmp_path: Path, requirement: bytes) -> None:
    """packaging's parse_email keeps any text as a Requires-Dist: `wheel inspect` and
    `image check` (which inspects before it reads the image) say so in one sentence, exit 2."""
    metadata = hostile.METADATA + b"Requires-Dist: " + requirement + b"\n"
    wheel = hostile.write_zip(tmp_path / hostile.WHEEL, hostile.dist_info(metadata=metadata))
    refused(wheel, r"METADATA is malformed \(Requires-Dist: requirement .* is malformed")
    for args in (
        ("wheel", "inspect", str(wheel)),
        ("image", "check", str(wheel), "--consumer", "registry.invalid/x:1"),
    ):
        result = wheelpin(*args)
        assert result.code == 2 and "Requires-Dist" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr

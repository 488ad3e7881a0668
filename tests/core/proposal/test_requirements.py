"""Requires-Dist diffs and constraint conflicts: tables, and properties over generated sets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from bot.core.proposal.requirements import TargetEnvironment, compatible, diff_requirements, find_conflicts


def names(changes) -> list[str]:  # type: ignore[no-untyped-def]
    return [change.name for change in changes]


@pytest.mark.parametrize(
    ("old", "new", "added", "removed", "changed"),
    [
        (["numpy>=1.0,<2"], ["numpy<2,>=1.0"], [], [], []),  # same specifiers, other order
        (["NumPy>=1"], ["numpy>=1"], [], [], []),  # names normalised
        (["zope.interface"], ["Zope_Interface"], [], [], []),
        (["numpy>=2.3"], ["numpy<=2.2.6"], [], [], ["numpy"]),
        (["numpy"], ["numpy", "redis>=5"], ["redis"], [], []),
        (["numpy", "msgspec"], ["numpy"], [], ["msgspec"], []),
        (["redis; extra == 'redis'"], ['redis ; extra == "redis"'], [], [], []),  # marker spelling
        (["redis; extra == 'redis'"], ["redis; extra == 'kv'"], [], [], ["redis"]),
        (["torch[cuda]>=2"], ["torch[rocm]>=2"], [], [], ["torch"]),
        (["torch[b,a]"], ["torch[a,b]"], [], [], []),
        # a name listed several times is compared as the set of its entries
        (
            ["numpy<2; python_version < '3.12'", "numpy>=2; python_version >= '3.12'"],
            ["numpy>=2; python_version >= '3.12'", "numpy<2; python_version < '3.12'"],
            [],
            [],
            [],
        ),
        (["numpy<2; python_version < '3.12'", "numpy>=2; python_version >= '3.12'"], ["numpy>=2"], [], [], ["numpy"]),
        (["pkg @ https://example.invalid/pkg.whl"], ["pkg @ https://example.invalid/pkg2.whl"], [], [], ["pkg"]),
    ],
)
def test_diff_table(old: list[str], new: list[str], added: list[str], removed: list[str], changed: list[str]) -> None:
    diff = diff_requirements(old, new)
    assert (names(diff.added), names(diff.removed), names(diff.changed)) == (added, removed, changed)


def test_diff_keeps_markers_and_extras_visible() -> None:
    diff = diff_requirements(["redis; extra == 'redis'"], ["redis[hiredis]>=5; extra == 'redis'"])
    (change,) = diff.changed
    assert change.old == ('redis; extra == "redis"',)
    assert change.new == ('redis[hiredis]>=5; extra == "redis"',)
    document = change.to_json()
    assert document["old"] == 'redis; extra == "redis"'
    assert document["new"] == 'redis[hiredis]>=5; extra == "redis"'


def test_added_and_removed_carry_name_old_new() -> None:
    diff = diff_requirements(["a"], ["b>=1"]).to_json()
    assert diff["added"] == [{"name": "b", "old": None, "new": "b>=1", "old_entries": None, "new_entries": ["b>=1"]}]
    assert diff["removed"][0]["name"] == "a" and diff["removed"][0]["new"] is None


def test_malformed_requirement_names_its_source() -> None:
    with pytest.raises(ValueError, match="new.whl: requirement 'numpy >>= 1'"):
        diff_requirements([], ["numpy >>= 1"], new_source="new.whl")


@pytest.mark.parametrize(
    ("requirement", "constraint", "conflict"),
    [
        ("numpy<=2.2.6", "numpy==2.3.5", True),  # the ATOM case
        ("numpy>=2.3", "numpy==2.3.5", False),
        ("NumPy<=2.2.6", "numpy==2.3.5", True),  # names normalised
        ("numpy<=2.2.6; python_version < '3.12'", "numpy==2.3.5", False),  # marker not for cp312
        ("numpy<=2.2.6; sys_platform == 'win32'", "numpy==2.3.5", False),
        ("numpy<=2.2.6; platform_machine == 'x86_64'", "numpy==2.3.5", True),
        ("numpy<=2.2.6; extra == 'dev'", "numpy==2.3.5", False),  # extras not installed
        ("torch>=2.10.0a0", "torch==2.10.0a0+git3d3aa83", False),  # pre-releases allowed
        ("torch>=2.10", "torch==2.10.0a0+git3d3aa83", True),
        ("torch==2.10.*", "torch==2.10.0a0+git3d3aa83", False),
        ("numpy>1.0,<1.1", "numpy>=1.0.5", False),  # ranges that overlap
        ("numpy<1.0", "numpy>1.0", True),  # ranges that do not
        ("numpy~=2.2.0", "numpy==2.3.5", True),
        ("numpy!=2.3.5", "numpy==2.3.5", True),
        ("numpy", "numpy==2.3.5", False),
        ("scipy<1", "numpy==2.3.5", False),  # another package
    ],
)
def test_conflicts(requirement: str, constraint: str, conflict: bool) -> None:
    found = find_conflicts([requirement], [constraint])
    assert bool(found) is conflict
    if conflict:
        assert found[0].requirement == requirement and found[0].constraint == constraint


def test_conflicts_follow_the_target_environment() -> None:
    requirement = ["numpy<=2.2.6; python_version < '3.12'"]
    assert find_conflicts(requirement, ["numpy==2.3.5"], environment=TargetEnvironment(python_version="3.11"))
    extra = ["numpy<=2.2.6; extra == 'dev'"]
    assert find_conflicts(extra, ["numpy==2.3.5"], environment=TargetEnvironment(extras=("dev",)))
    machine = ["numpy<=2.2.6; platform_machine == 'aarch64'"]
    assert find_conflicts(machine, ["numpy==2.3.5"], environment=TargetEnvironment(platform="linux_aarch64"))


def test_compatible_admits_equal_bounds() -> None:
    assert compatible(SpecifierSet(">=1.0"), SpecifierSet("<=1.0"))
    assert not compatible(SpecifierSet(">1.0"), SpecifierSet("<=1.0"))


REQUIREMENTS = st.sampled_from(
    [
        "numpy",
        "numpy>=2",
        "numpy<=2.2.6",
        "numpy<2; python_version < '3.12'",
        "torch>=2.9",
        "torch==2.10.0a0",
        "redis; extra == 'redis'",
        "redis[hiredis]>=5",
        "msgspec",
        "Msgspec>=0.18",
        "pyzmq!=26.0",
        "nixl>=0.5; platform_machine == 'x86_64'",
    ]
)
SETS = st.lists(REQUIREMENTS, max_size=8)


@given(SETS)
def test_diff_of_a_set_with_itself_is_empty(requirements: list[str]) -> None:
    assert diff_requirements(requirements, list(reversed(requirements))).empty


@given(SETS, SETS)
def test_diff_mirrors(a: list[str], b: list[str]) -> None:
    forward, backward = diff_requirements(a, b), diff_requirements(b, a)
    assert [(c.name, c.new) for c in forward.added] == [(c.name, c.old) for c in backward.removed]
    assert [(c.name, c.old) for c in forward.removed] == [(c.name, c.new) for c in backward.added]
    assert [(c.name, c.old, c.new) for c in forward.changed] == [(c.name, c.new, c.old) for c in backward.changed]

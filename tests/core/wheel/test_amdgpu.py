import pytest

from bot.core.wheel.amdgpu import GENERIC_FAMILIES, TargetId, sorted_processors


@pytest.mark.parametrize(
    ("text", "processor", "features"),
    [
        ("gfx942", "gfx942", ()),
        ("gfx90a:xnack-", "gfx90a", ("xnack-",)),
        ("gfx90a:sramecc+:xnack-", "gfx90a", ("sramecc+", "xnack-")),
        ("gfx1201", "gfx1201", ()),
        ("gfx9-4-generic", "gfx9-4-generic", ()),
        ("gfx11-generic:xnack+", "gfx11-generic", ("xnack+",)),
    ],
)
def test_parse_target_ids(text: str, processor: str, features: tuple[str, ...]) -> None:
    target = TargetId.parse(text)
    assert (target.processor, target.features) == (processor, features)
    assert str(target) == text


@pytest.mark.parametrize("text", ["", "sm_90", "gfx", "gfx94", "gfx942:xnack", "gfx942:+", "GFX942"])
def test_reject_malformed_target_ids(text: str) -> None:
    with pytest.raises(ValueError):
        TargetId.parse(text)


@pytest.mark.parametrize(
    ("have", "want", "covers"),
    [
        ("gfx942", "gfx942", True),
        ("gfx942", "gfx950", False),
        ("gfx90a", "gfx90a:xnack+", True),  # no setting: runs in either mode
        ("gfx90a:xnack-", "gfx90a", True),  # an unqualified requirement takes any setting
        ("gfx90a:xnack-", "gfx90a:xnack+", False),
        ("gfx90a:xnack-", "gfx90a:xnack-", True),
        ("gfx90a:xnack-:sramecc+", "gfx90a:sramecc-", False),
        ("gfx9-4-generic", "gfx942", True),
        ("gfx9-4-generic", "gfx950", True),
        ("gfx9-4-generic", "gfx90a", False),
        ("gfx11-generic", "gfx1151", True),
        ("gfx11-generic", "gfx1201", False),
        ("gfx12-generic", "gfx1201", True),
        ("gfx10-3-generic", "gfx1030", True),
        ("gfx9-generic", "gfx908", False),  # gfx908 is not in the gfx9 generic family
        ("gfx942", "gfx9-4-generic", False),  # a specific object does not serve a family
    ],
)
def test_covers(have: str, want: str, covers: bool) -> None:
    assert TargetId.parse(have).covers(TargetId.parse(want)) is covers


def test_generic_families_are_consistent() -> None:
    for generic, family in GENERIC_FAMILIES.items():
        TargetId.parse(generic)
        for processor in family:
            assert not TargetId.parse(processor).is_generic
            assert TargetId.parse(generic).covers(TargetId.parse(processor))


def test_sort_follows_generations() -> None:
    shuffled = [
        "gfx1201",
        "gfx90a",
        "gfx1030",
        "gfx942",
        "gfx9-4-generic",
        "gfx908",
        "gfx950",
        "gfx1100",
        "gfx1200",
        "gfx1101",
    ]
    assert sorted_processors(shuffled) == [
        "gfx908",
        "gfx90a",
        "gfx942",
        "gfx950",
        "gfx9-4-generic",
        "gfx1030",
        "gfx1100",
        "gfx1101",
        "gfx1200",
        "gfx1201",
    ]

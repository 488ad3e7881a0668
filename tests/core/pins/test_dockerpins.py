"""Pin location and bumps over generated Dockerfile shapes (hypothesis) and tables."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.config.model import Component
from bot.core.pins.bump import PinError, plan_bump
from bot.core.pins.locate import DockerfileError, escape_character, parse

OLD_IMAGE = "rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:" + "1" * 64
NEW_IMAGE = "rocm/atom-dev:lmcache-v0.5.6.dev103-g3d3aa833-rocm-torch210@sha256:" + "2" * 64
OLD_SHA, NEW_SHA = "a" * 64, "b" * 64

COMPONENT = Component.model_validate(
    {
        "name": "lmcache",
        "upstream": {"repo": "https://github.com/LMCache/LMCache", "branch": "dev"},
        "wheel": {"distribution": "lmcache"},
        "build": {"command": "make"},
        "image": {"repository": "rocm/atom-dev", "tag": "lmcache-v{version_base}-g{sha8}-rocm-torch210"},
        "pins": [{"file": "Dockerfile", "image_arg": "IMG", "sha256_arg": "SHA"}],
    }
)


def arg_line(name: str, value: str, quote: str, shape: str, escape: str) -> str:
    assignment = f"{name}={quote}{value}{quote}"
    return {
        "alone": f"ARG {assignment}",
        "first": f"ARG {assignment} OTHER_{name}=1",
        "last": f"ARG PY=3.12 {assignment}",
        "continued": f"ARG PY=3.12 {escape}\n    # comment\n    {assignment}",
        "lowercase": f"arg {assignment}",
    }[shape]


FILLER = st.sampled_from(
    [
        "# a comment",
        "RUN echo hello",
        "ENV A=1 B=2",
        "RUN <<EOF\nARG IMG=fake\nEOF",
        'LABEL x="ARG IMG=not-this"',
        "",
        "COPY --from=w / /wheels/",
        "ARG UNRELATED",
    ]
)


@st.composite
def dockerfiles(draw: st.DrawFn) -> str:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    escape = draw(st.sampled_from(["\\", "`"]))
    lines = [f"# escape={escape}"] if escape == "`" else []
    lines += draw(st.lists(FILLER, max_size=3))
    lines.append(
        arg_line(
            "IMG",
            OLD_IMAGE,
            draw(st.sampled_from(['"', "'", ""])),
            draw(st.sampled_from(["alone", "first", "last", "continued", "lowercase"])),
            escape,
        )
    )
    lines.append("FROM ${IMG} AS w")
    lines += draw(st.lists(FILLER, max_size=3))
    lines.append("FROM rocm/atom:base")
    lines.append(
        arg_line(
            "SHA",
            OLD_SHA,
            draw(st.sampled_from(['"', ""])),
            draw(st.sampled_from(["alone", "first", "last", "continued"])),
            escape,
        )
    )
    lines += draw(st.lists(FILLER, max_size=3))
    text = eol.join(line.replace("\n", eol) for line in lines) + eol
    return ("\ufeff" if draw(st.booleans()) else "") + text


@settings(max_examples=150, deadline=None)
@given(dockerfiles())
def test_bump_changes_only_the_value_characters(text: str) -> None:
    plan = plan_bump(COMPONENT, {"Dockerfile": text}, NEW_IMAGE, {None: NEW_SHA})
    new = plan.new_texts["Dockerfile"]
    # exactly the two values moved; every other character (quotes, line ends, BOM) kept
    assert new == text.replace(OLD_IMAGE, NEW_IMAGE).replace(OLD_SHA, NEW_SHA)
    assert [edit.what for edit in plan.edits] == ["image", "sha256"]
    back = plan_bump(COMPONENT, {"Dockerfile": new}, OLD_IMAGE, {None: OLD_SHA})
    assert back.new_texts["Dockerfile"] == text


def test_heredoc_and_label_contents_are_never_pins() -> None:
    text = f'ARG IMG="{OLD_IMAGE}"\nARG SHA={OLD_SHA}\nFROM a\nRUN <<EOF\nARG IMG={OLD_IMAGE}\nEOF\n'
    new = plan_bump(COMPONENT, {"Dockerfile": text}, NEW_IMAGE, {None: NEW_SHA}).new_texts["Dockerfile"]
    assert new.count(OLD_IMAGE) == 1 and new.count(NEW_IMAGE) == 1


@pytest.mark.parametrize(
    ("text", "escape"),
    [
        ("# escape=`\nFROM a\n", "`"),
        ("# syntax=docker/dockerfile:1\n# escape=`\nFROM a\n", "`"),
        ("FROM a\n# escape=`\n", "\\"),
        ("\ufeff# escape=`\r\nFROM a\r\n", "`"),
    ],
)
def test_escape_directive(text: str, escape: str) -> None:
    assert escape_character(text) == escape


def test_stages_and_declarations() -> None:
    parsed = parse(
        "ARG A=1\nFROM x:1 AS One\nARG A\nFROM --platform=linux/amd64 y@sha256:" + "c" * 64 + " as two\n",
        where="Dockerfile",
    )
    assert [(d.stage, d.default.value if d.default else None) for d in parsed.declarations("A")] == [
        (None, "1"),
        (0, None),
    ]
    assert parsed.stage("one").image.value == "x:1"  # type: ignore[union-attr]
    assert parsed.stage("TWO").image.value.startswith("y@sha256:")  # type: ignore[union-attr]


def test_unparseable_dockerfile() -> None:
    with pytest.raises(DockerfileError, match="Dockerfile"):
        parse("FROM a\nRUN <<EOF\nunterminated", where="Dockerfile")


def test_unterminated_quote_is_left_alone() -> None:
    with pytest.raises(PinError):
        plan_bump(COMPONENT, {"Dockerfile": f'ARG IMG="{OLD_IMAGE}\nARG SHA={OLD_SHA}\n'}, NEW_IMAGE, {None: NEW_SHA})


def test_a_pin_with_both_args_misspelt_is_refused_for_both_each_at_its_key() -> None:
    """The pass's one sentence says both; `config validate` says each at its key."""
    text = f'ARG IMAGE="{OLD_IMAGE}"\nARG SHA256={OLD_SHA}\nFROM ${{IMAGE}} AS w\n'
    with pytest.raises(PinError) as caught:
        plan_bump(COMPONENT, {"Dockerfile": text}, NEW_IMAGE, {None: NEW_SHA})
    image = "Dockerfile: ARG IMG is not declared (ARGs here: IMAGE, SHA256; did you mean IMAGE?)"
    sha256 = "Dockerfile: ARG SHA is not declared (ARGs here: IMAGE, SHA256; did you mean SHA256?)"
    assert str(caught.value) == f"{image}; {sha256}"
    assert [(p.key, p.sentence) for p in caught.value.problems] == [(None, image), ("sha256_arg", sha256)]

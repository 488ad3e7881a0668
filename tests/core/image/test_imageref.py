"""Image references by the distribution grammar, and tag templates."""

from __future__ import annotations

import pytest

from bot.core.config.templates import TagValues, TemplateError, render_tag, tag_pattern, validate_tag_template
from bot.core.image.reference import ImageRef, ImageRefError, parse_pinned

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "registry", "path", "tag", "digest", "normalized"),
    [
        ("ubuntu", None, "ubuntu", None, None, "docker.io/library/ubuntu"),
        ("rocm/atom-dev:lmcache-v0.5.6", None, "rocm/atom-dev", "lmcache-v0.5.6", None, "docker.io/rocm/atom-dev"),
        (f"docker.io/rocm/atom-dev@{DIGEST}", "docker.io", "rocm/atom-dev", None, DIGEST, "docker.io/rocm/atom-dev"),
        (
            f"index.docker.io/rocm/atom-dev:t@{DIGEST}",
            "index.docker.io",
            "rocm/atom-dev",
            "t",
            DIGEST,
            "docker.io/rocm/atom-dev",
        ),
        (
            "localhost:5000/team/wheels/lmcache:x",
            "localhost:5000",
            "team/wheels/lmcache",
            "x",
            None,
            "localhost:5000/team/wheels/lmcache",
        ),
        ("127.0.0.1:41234/w:1", "127.0.0.1:41234", "w", "1", None, "127.0.0.1:41234/w"),
        ("ghcr.io/rocm/a__b/c-d.e:v", "ghcr.io", "rocm/a__b/c-d.e", "v", None, "ghcr.io/rocm/a__b/c-d.e"),
        ("[::1]:5000/w:1", "[::1]:5000", "w", "1", None, "[::1]:5000/w"),
        ("localhost/w", "localhost", "w", None, None, "localhost/w"),
    ],
)
def test_parse(
    text: str, registry: str | None, path: str, tag: str | None, digest: str | None, normalized: str
) -> None:
    ref = ImageRef.parse(text)
    assert (ref.registry, ref.path, ref.tag, ref.digest) == (registry, path, tag, digest)
    assert ref.normalized_repository == normalized
    assert str(ref) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        " a",
        "Rocm/atom",
        "a//b",
        "a:b:c",
        "a:-tag",
        "a@sha256:abc",
        "a@sha256:" + "A" * 64,
        "-a/b",
        "a/b:" + "t" * 129,
        "a_/b",
    ],
)
def test_invalid(text: str) -> None:
    with pytest.raises(ImageRefError):
        ImageRef.parse(text)


def test_pinned_refs_need_a_digest() -> None:
    with pytest.raises(ImageRefError, match="not pinned by digest"):
        parse_pinned("rocm/atom-dev:tag")
    assert parse_pinned(f"rocm/atom-dev:tag@{DIGEST}").pinned


def test_same_repository_across_spellings() -> None:
    refs = [ImageRef.parse(t) for t in ("rocm/atom-dev", "docker.io/rocm/atom-dev:x", "index.docker.io/rocm/atom-dev")]
    assert all(a.same_repository(b) for a in refs for b in refs)
    assert not ImageRef.parse("ghcr.io/rocm/atom-dev").same_repository(refs[0])


def test_tag_templates() -> None:
    values = TagValues(
        sha="05fc77a0" + "1" * 32,
        component="lmcache",
        version="0.5.6.dev98+g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1",
    )
    assert (
        render_tag("lmcache-v{version_base}-g{sha8}-rocm-torch210", values)
        == "lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210"
    )
    assert (
        render_tag("{component}-{version}", values)
        == "lmcache-0.5.6.dev98-g05fc77a0.rocm7.2.4.torch2.10.git3d3aa833.cxx11abi1"
    )
    pattern = tag_pattern("lmcache-v{version_base}-g{sha8}-rocm-torch210", component="lmcache")
    assert pattern.match("lmcache-v0.5.6.dev103-g3d3aa833-rocm-torch210")
    assert not pattern.match("lmcache-v0.5.6-g3d3aa83-rocm-torch210")
    for bad in ("x+{sha8}", "{sha}{sha}{sha}{sha}", "{nope}", "{sha:>10}", "{", ".{sha8}"):
        with pytest.raises(TemplateError):
            validate_tag_template(bad, component="c")


def test_public_urls_drop_credentials() -> None:
    from bot.core.redact import public_url

    assert public_url("https://x-access-token:ghs_secret@github.com/a/b") == "https://github.com/a/b"
    assert public_url("https://github.com/a/b") == "https://github.com/a/b"
    assert public_url("../upstream") == "../upstream"

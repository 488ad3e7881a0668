"""Proposal text: sections, compare links, the marker, and the 65,536-character cap."""

from __future__ import annotations

from dataclasses import replace

from bot.adapters.provenance import Attached, proposal_link
from bot.adapters.registry import RegistryClient
from bot.adapters.registrywire import reach_of
from bot.core.image.oci import WheelEntry
from bot.core.image.reach import Reach
from bot.core.proposal.marker import read_marker
from bot.core.proposal.requirements import Conflict, RequirementsDiff, diff_requirements
from bot.core.proposal.text import ProposalFacts, body, compare_link, title
from bot.core.proposal.upstreamcommit import Commit, Divergence, History
from bot.core.proposal.wheeldiff import wheel_changes
from bot.core.provenance.bundle import BUNDLE_TYPE

WHEEL = WheelEntry(
    "lmcache-0.5.6-cp312-cp312-manylinux_2_39_x86_64.whl",
    "e" * 64,
    17_000_000,
    "lmcache",
    "0.5.6.dev98+g05fc77a0",
    ("numpy<=2.2.6",),
    ("gfx942", "gfx950"),
    ("cp312-cp312-manylinux_2_39_x86_64",),
)


def facts(**kwargs: object) -> ProposalFacts:
    base = dict(
        component="lmcache",
        upstream="https://github.com/LMCache/LMCache",
        old_commit="a" * 40,
        new_commit="05fc77a0" + "b" * 32,
        version="0.5.6.dev98+g05fc77a0",
        image="rocm/atom-dev:lmcache-v0.5.6.dev98-g05fc77a0-rocm-torch210@sha256:" + "c" * 64,
        wheels=(WHEEL,),
        state={"component": "lmcache", "commit": "05fc77a0" + "b" * 32},
    )
    base.update(kwargs)
    return ProposalFacts(**base)  # type: ignore[arg-type]


def test_title_and_sections() -> None:
    diff = diff_requirements(["numpy>=2.3"], ["numpy<=2.2.6"])
    diff = RequirementsDiff(diff.added, diff.removed, diff.changed, (Conflict("numpy<=2.2.6", "numpy==2.3.5"),))
    text = body(
        facts(
            diff=diff,
            commits=(Commit("05fc77a0" + "b" * 32, "Faster lookups"),),
            verification=("HIP code for gfx942, gfx950",),
        )
    )
    assert title(facts()) == "Bump lmcache to 0.5.6.dev98+g05fc77a0 (05fc77a0)"
    assert f"https://github.com/LMCache/LMCache/compare/{'a' * 40}...05fc77a0" in text
    assert "| `lmcache-0.5.6-cp312-cp312-manylinux_2_39_x86_64.whl` | 17.0 MB |" in text  # the version is in its name
    assert "gfx942, gfx950 | cp312-cp312-manylinux_2_39_x86_64 |" in text
    assert "CONSTRAINT CONFLICTS" in text and "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5`" in text
    assert "skopeo inspect docker://rocm/atom-dev@sha256:" + "c" * 64 in text  # never repo:tag@digest
    assert read_marker(text) == facts().state


def test_check_by_hand_speaks_to_the_registry_as_wheelpin_does() -> None:
    """The registry client's own decision (reach_of) is what the commands carry: skopeo
    requires HTTPS and a trusted certificate unless given --tls-verify=false (skopeo-inspect(1)),
    loopback hosts too; wheelpin speaks plain HTTP to loopback hosts by itself, and to a host
    WHEELPIN_INSECURE_REGISTRIES names only where it is told (a reviewer's shell is not the bot's)."""
    ref = "registry.lan:5000/rocm/atom-dev@sha256:" + "c" * 64
    image = "registry.lan:5000/rocm/atom-dev:t@sha256:" + "c" * 64

    def commands(reach: Reach) -> list[str]:
        text = body(facts(image=image, check_refs=(ref,), reach=reach))
        return text.split("### Check by hand\n```sh\n", 1)[1].split("\n```", 1)[0].splitlines()

    assert commands(Reach()) == [f"skopeo inspect docker://{ref}", f"wheelpin image show {ref}"]
    listed = reach_of("registry.lan:5000", ["registry.lan:5000"], tls_verify=True)
    assert RegistryClient("registry.lan:5000", insecure=["registry.lan:5000"]).base == "http://registry.lan:5000"
    assert commands(listed) == [
        f"skopeo inspect --tls-verify=false docker://{ref}",
        f"wheelpin image show --plain-http {ref}",
    ]
    loopback = reach_of("127.0.0.1:5077", [], tls_verify=True)
    assert (loopback.skopeo_flags, loopback.wheelpin_flags) == (" --tls-verify=false", "")
    unverified = reach_of("registry.lan:5000", [], tls_verify=False)
    assert commands(unverified) == [
        f"skopeo inspect --tls-verify=false docker://{ref}",
        f"wheelpin image show --tls-verify=false {ref}",
    ]
    layout = body(facts(check_refs=("oci:/srv/images:t",), reach=Reach()))
    assert "skopeo inspect oci:/srv/images:t\nwheelpin image show oci:/srv/images:t\n" in layout
    signed = [Attached("provenance", BUNDLE_TYPE, "sha256:" + "e" * 64, True, "attached")]
    assert f"`wheelpin image verify --plain-http {image} --key YOUR-KEY.pub`" in proposal_link(
        "registry.lan:5000/rocm/atom-dev", image, signed, reach=listed
    )


def test_compare_links() -> None:
    assert compare_link("https://gitlab.com/a/b.git", "1", "2") == "https://gitlab.com/a/b/-/compare/1...2"
    assert compare_link("git@github.com:a/b.git", None, "2") == "https://github.com/a/b/commit/2"
    assert compare_link("/srv/git/lmcache", "1", "2") is None


def test_long_commit_lists_are_cut_to_fit() -> None:
    commits = tuple(Commit(f"{i:040x}", "x" * 200) for i in range(5000))
    text = body(facts(commits=commits))
    assert len(text) <= 65_536
    assert "more commits (cut to fit)" in text and read_marker(text) == facts().state


def test_even_without_commits_the_marker_survives_the_cut() -> None:
    huge = WheelEntry("w.whl", "e" * 64, 1, "w", "1", (), ("gfx942",) * 20000, ())
    text = body(facts(wheels=(huge,)), limit=10_000)
    assert len(text) <= 10_000 and read_marker(text) == facts().state


def test_the_last_marker_wins() -> None:
    sneaky = Commit("1" * 40, '<!-- wheelpin: {"commit":"evil"} -->')
    text = body(facts(commits=(sneaky,)))
    assert read_marker(text) == facts().state


def test_from_to_shows_what_changes_losses_first() -> None:
    """ATOM's LMCache moves from a ROCm 6 wheel for gfx90a and gfx942 to a ROCm 7 wheel
    for gfx942 and gfx950: the dropped arch and the ROCm major change are impossible to miss."""
    pinned = replace(
        WHEEL,
        file="lmcache-0.5.5-cp312-cp312-manylinux_2_39_x86_64.whl",
        sha256="d" * 64,
        version="0.5.5+g11111111",
        archs=("gfx90a", "gfx942"),
        needed=("libamdhip64.so.6", "libc.so.6", "libtorch.so"),
    )
    new = replace(WHEEL, needed=("libamdhip64.so.7", "libc.so.6", "libhsa-runtime64.so.1", "libtorch.so"))
    text = body(facts(changes=wheel_changes([pinned], [new]), notes=("gfx90a: no code object, skipped",)))
    section = text.split("### From → to\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section == [
        "- ⚠️ **GPU archs dropped: gfx90a**",
        "- ⚠️ **`libamdhip64.so.6` → `libamdhip64.so.7`: a ROCm major version change; the image must ship ROCm 7**",
        "- version `0.5.5+g11111111` → `0.5.6.dev98+g05fc77a0`",
        f"- `cp312` sha256 `{'d' * 16}…` → `{'e' * 16}…`",
        "- GPU archs added: gfx950",
        "- needs newly: `libhsa-runtime64.so.1`",
    ]
    assert text.index("### ⚠️ Notes\n- **gfx90a: no code object, skipped**") < text.index("### From → to")


def test_python_tags_added_and_dropped_and_images_that_record_less() -> None:
    def wheel(tag: str, needed: tuple[str, ...] | None = ()) -> WheelEntry:
        return replace(
            WHEEL,
            file=f"m-1-{tag}-{tag}-linux_x86_64.whl",
            tags=(f"{tag}-{tag}-linux_x86_64",),
            archs=(),
            needed=needed,
        )

    changes = wheel_changes([wheel("cp310"), wheel("cp312")], [wheel("cp312"), wheel("cp313")])
    assert changes.tags_dropped == ("cp310",) and changes.tags_added == ("cp313",)
    assert [row[0] for row in changes.sha256] == ["cp310", "cp312", "cp313"]
    lines = body(facts(changes=changes))
    assert "- ⚠️ **python tags dropped: cp310**" in lines and "- `cp310` sha256 `eeeeeeeeeeeeeeee…` → (none)" in lines
    foreign = wheel_changes([wheel("cp312", needed=None)], [wheel("cp312")])  # read from layers: nothing recorded
    assert foreign.libraries is None and not foreign.archs_known
    text = body(facts(changes=foreign))
    assert "GPU archs: not compared" in text and "DT_NEEDED): not compared" in text
    assert "dropped" not in text


def test_conflicts_are_marked_new_or_already_present_and_refused_commits_say_why() -> None:
    diff = RequirementsDiff(
        conflicts=(
            Conflict("numpy<=2.2.6", "numpy==2.3.5"),
            Conflict("opentelemetry-api<1.40", "opentelemetry-api==1.44.0"),
        )
    )
    refused = Commit("2" * 40, "Build with CUDA", refused="distribution is 'lmcache', expected 'lmcache-rocm'")
    text = body(
        facts(
            diff=diff,
            known_conflicts=(Conflict("numpy<=2.2.6", "numpy==2.3.5"),),
            commits=(refused, Commit("05fc77a0" + "b" * 32, "Fix")),
        )
    )
    assert "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5` (already present in the pinned wheel)" in text
    assert "**`opentelemetry-api<1.40`** vs the image's `opentelemetry-api==1.44.0` — **new**" in text
    assert "- `22222222` Build with CUDA — ⛔ refused: distribution is 'lmcache', expected 'lmcache-rocm'" in text
    assert "### Requires-Dist" not in text and "Requires-Dist: unchanged." in text
    upstream = text.split("<summary>For upstream: text for an issue</summary>", 1)[1]
    assert "lmcache 0.5.6.dev98+g05fc77a0 (commit 05fc77a0bbbb) declares requirements that exclude" in upstream
    assert "- `opentelemetry-api<1.40` excludes `opentelemetry-api==1.44.0`" in upstream


def test_a_pin_whose_commit_is_not_known_is_never_none_pinned() -> None:
    """An image that says no commit (no revision, no `g<sha>` in its tag or version): the
    base still pins it, so the proposal names the pin, not "(none pinned)"."""
    pinned = "docker.io/rocm/atom-dev:lmcache-nightly@sha256:" + "d" * 64
    text = body(facts(old_commit=None, pinned_image=pinned))
    assert "from `atom-dev:lmcache-nightly@sha256:dddd" in text and "(its upstream commit not known)" in text
    assert "(none pinned)" not in text
    assert "from `(none pinned)` to `05fc77a0`" in body(facts(old_commit=None))


def test_the_release_tags_are_named_beside_the_commits() -> None:
    text = body(facts(old_tag="v0.5.5", new_tag="v0.5.6"))
    assert "from `aaaaaaaa` (tag `v0.5.5`) to `05fc77a0` (tag `v0.5.6`) of https://github.com/LMCache/LMCache" in text


def test_each_commit_wheelpin_tried_is_marked_and_no_reference_is_cut_inside() -> None:
    """A refused commit and one whose build failed are both marked; a long refusal is cut
    at a space, so the consuming image's reference it names is whole or absent, never
    `127.0.0.1:5077/ro…` (a reader copies what is there)."""
    base = "127.0.0.1:5077/rocm/base@sha256:" + "3" * 64
    reason = (
        "libraries: mooncake_lite/_engine.cpython-311-x86_64-linux-gnu.so needs libibverbs.so.1, "
        f"which the image does not have where the loader looks ({base})"
    )
    refused = Commit("4da39be3" + "4" * 32, "add the ibverbs stub", refused=reason)
    failed = Commit("bb9f4709" + "5" * 32, "engine: RDMA", failed="build of bb9f4709 failed (exit 1): no ibv.c")
    text = body(facts(commits=(refused, failed, Commit("5a9eda73" + "6" * 32, "engine: faster path"))))
    listed = text.split("### Commits\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert listed == [
        "- `4da39be3` add the ibverbs stub — ⛔ refused: libraries: mooncake_lite/_engine.cpython-311-x86_64-"
        "linux-gnu.so needs libibverbs.so.1, which the image does not have where the loader looks …",
        "- `bb9f4709` engine: RDMA — ❌ build of bb9f4709 failed (exit 1): no ibv.c",
        "- `5a9eda73` engine: faster path",
    ]
    short = body(facts(commits=(replace(refused, refused=f"needs libibverbs.so.1 ({base})"),)))
    assert f"— ⛔ refused: needs libibverbs.so.1 ({base})\n" in short  # it fits: whole


def test_a_pinned_reference_is_named_with_its_digest_in_the_one_short_form() -> None:
    """The "from" of a pin whose commit is not known, and each moved pin, say the digest as
    `sha256:` and 12 hex digits (core/image/reference.py short_digest), whatever the
    lengths of the repository and tag before it."""
    for tag in ("v1", "mooncake-lite-v0.3.13.post1-gd1003172"):
        pinned = f"127.0.0.1:5077/wheels/mooncake-lite:{tag}@sha256:4e2f9cc2dedff3d5ed1a0" + "0" * 43
        text = body(
            facts(old_commit=None, pinned_image=pinned, pinned_problem="the pinned digest is not in the registry (404)")
        )
        assert (
            f"from `mooncake-lite:{tag}@sha256:4e2f9cc2dedf` (the pinned digest is not in the registry (404))" in text
        )


def test_a_version_goes_backwards_by_pep_440_order_of_its_public_part() -> None:
    def changes(old: str, new: str) -> bool:
        return wheel_changes([replace(WHEEL, version=old)], [replace(WHEEL, version=new)]).goes_backwards

    assert changes("0.2.0.dev3+g8be4c50d.rocm6.4.1", "0.2.0.dev2+g99778603.rocm6.4.1")
    assert changes("0.5.10", "0.5.9") and not changes("0.5.9", "0.5.10")
    assert not changes("0.3.13.post1+gffffffff", "0.3.13.post1+g00000000")  # a local segment orders nothing
    assert not changes("0.3.13", "0.3.14.dev0") and changes("0.3.14", "0.3.14rc1")
    assert not changes("nightly", "0.1")  # no PEP 440 version: nothing said


def test_a_release_on_another_line_is_said_as_such() -> None:
    """Following tags, a newer release whose history does not hold the pinned commit."""
    left = (Commit("1" * 40, "rocm 0.6.0"),)
    history = History("1" * 40, (Commit("2" * 40, "rocm 0.7.0"),), None, divergence=Divergence(None, left))
    assert history.said() == "1 commit not in the history of the pinned commit 11111111 (the two share no history)"
    assert history.warning("2" * 40) == (
        "the pinned commit 11111111 is not in the history of 22222222: the release is on another line; "
        "1 commit of the pinned history is not in it: 11111111 (rocm 0.6.0)"
    )
    assert History(None, left).warning("2" * 40) is None and History("1" * 40, ()).said() == (
        "0 commits after the pinned one"
    )


def test_a_pinned_commit_the_upstream_lacks_is_said_without_claiming_where_it_went() -> None:
    """A pinned commit not on the branch is said as what may have happened (a rewrite, or
    a build from another branch); one the upstream has not at all lists the head alone,
    with no order and no fork claimed."""
    head = (Commit("2" * 40, "rewritten"),)
    left = (Commit("1" * 40, "0.2.0 work"),)
    off = History("1" * 40, head, "dev", divergence=Divergence("3" * 40, left))
    assert off.warning("2" * 40) == (
        "the pinned commit 11111111 is not on dev: dev was rewritten (force-pushed or reset), or the image was "
        "built from another branch; 1 commit of the pinned history is not on it: 11111111 (0.2.0 work)"
    )
    assert not off.head_only
    absent = History("1" * 40, head, "dev", divergence=Divergence(None, (), upstream_has=False))
    assert absent.head_only and absent.said() == (
        "the head only (the pinned commit 11111111 is not in the upstream: where the two histories part is not known)"
    )
    assert absent.warning("2" * 40) == (
        "the pinned commit 11111111 is not in the upstream at all: its history was rewritten (force-pushed or "
        "reset), or the image was built from a branch deleted since or from another repository"
    )

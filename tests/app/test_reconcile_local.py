"""The reconciler end to end on the local platform: real git repositories, a real build
command, an OCI layout folder or the real registry; each scenario a user of the local platform meets."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.adapters.git import git
from bot.commands.demo import PEOPLE
from tests.app.worlds import BRANCH, HUMAN, NEW_VERSION, World, component, make_world, runner_build
from tests.cli import wheelpin
from tests.conftest import HipArtifacts
from tests.fixtures.hip import link_shared, tool
from tests.fixtures.servers import GitDaemon, Registry


def test_first_proposal_then_nothing(world: World) -> None:
    head = world.commit_upstream("work", NEW_VERSION)
    first = world.reconcile()
    assert first.code == 0, first.stderr
    assert [a["kind"] for a in component(first)["actions"]] == ["build", "publish", "propose"]
    branch = world.branch()
    assert branch is not None and f"g{head[:8]}@sha256:" in world.branch_file()
    assert f"demo-cache-v0.1.1-g{head[:8]}" in world.layout_tags()
    index_before = (world.root / "images" / "index.json").read_bytes()
    again = world.reconcile()
    assert again.code == 0 and component(again)["status"] == "nothing"
    assert world.branch() == branch  # a second pass writes nothing at all
    assert (world.root / "images" / "index.json").read_bytes() == index_before


def test_dry_run_changes_nothing(world: World) -> None:
    world.commit_upstream("work", NEW_VERSION)
    planned = world.reconcile("--dry-run")
    assert planned.code == 0, planned.stderr
    assert planned.json()["dry_run"] is True
    assert [a["kind"] for a in component(planned)["actions"]] == ["build", "publish", "propose"]  # the whole plan
    assert world.branch() is None and len(world.layout_tags()) == 1
    assert not (Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds").exists()
    assert not (Path(world.env["WHEELPIN_CACHE_DIR"]) / "state.sqlite").exists()  # not even created
    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert text.code == 0 and text.stdout.startswith("demo-cache: would build, publish, propose\n")
    head = component(planned)["head"]
    cache = Path(world.env["WHEELPIN_CACHE_DIR"])
    for line in (
        f"  upstream: ../upstream (branch main) at {head[:8]}",
        f"    in a clean checkout of {head[:8]} at {cache / 'checkouts' / 'demo-cache' / head[:12]}",
        f"  image: localhost/demo-cache:demo-cache-v{{version_base}}-g{head[:8]}@{{digest}}",
        f"  proposal: creates wheelpin/demo-cache: Bump demo-cache to {{version}} ({head[:8]})",
    ):
        assert line + "\n" in text.stdout, text.stdout
    assert f"build_wheel.py {cache / 'builds' / 'demo-cache' / head / 'out'}\n" in text.stdout  # {out} filled
    assert "  pins:\n    docker/Dockerfile:2 localhost/demo-cache:demo-cache-v0.1.0-g" in text.stdout
    assert "  checked after the build: each wheel against the component's rules" in text.stdout
    assert not (cache / "builds").exists() and not (cache / "checkouts").exists()


def test_the_dry_run_says_what_the_pass_would_refuse_and_exits_as_it_would(world: World) -> None:
    """A component that builds on GitHub Actions, passed on the local platform: the pass
    stops at the build. The plan says so, and exits 1 as the pass does (which
    World.reconcile checks too, as for every pass)."""
    world.set_config(
        "build = { command = [", 'build = { workflow = "wheels.yaml", inputs = { commit = "{sha}" } }\n# was: ['
    )
    head = world.commit_upstream("work", NEW_VERSION)
    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert text.code == 1, text.stdout + text.stderr
    assert "  build: workflow wheels.yaml\n    in GitHub Actions, from main\n" in text.stdout
    assert f"    input commit = {head}\n" in text.stdout
    assert "  refused: demo-cache: builds on GitHub Actions need the GitHub platform\n" in text.stdout
    assert text.stdout.rstrip().endswith("the real pass would fail (exit 1): see `refused` above")
    plan = component(world.reconcile("--dry-run"))["plan"]
    assert plan["fails_at"] == "build" and plan["error_kind"] == "failed"
    failed = world.reconcile()
    assert failed.code == 1 and [a["kind"] for a in component(failed)["actions"]] == ["build"]


def test_update_in_place_and_the_working_tree_is_untouched(world: World) -> None:
    world.commit_upstream("one", NEW_VERSION)
    (world.downstream / "README.md").write_text("a local edit\n")  # dirty tree, staged change too
    (world.downstream / "notes.txt").write_text("staged\n")
    git(["add", "notes.txt"], cwd=world.downstream)
    status = git(["status", "--porcelain"], cwd=world.downstream)
    assert world.reconcile().code == 0
    first = world.branch()
    head = world.commit_upstream("two", {"requirements.txt": "numpy<=2.2.6\nmsgspec\n"})
    result = world.reconcile()
    assert result.code == 0, result.stderr
    assert world.branch() != first
    commits = git(["log", "--format=%H", f"main..{BRANCH}"], cwd=world.downstream).split()
    assert len(commits) == 1  # the same proposal, rewritten: one bot commit on the base
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert head[:8] in message.splitlines()[0]
    assert "changed `numpy>=2.3` → `numpy<=2.2.6`" in message and "numpy==2.3.5" in message
    assert git(["status", "--porcelain"], cwd=world.downstream) == status
    assert git(["symbolic-ref", "HEAD"], cwd=world.downstream).strip() == "refs/heads/main"
    author = git(["log", "-1", "--format=%an <%ae>", BRANCH], cwd=world.downstream).strip()
    assert author == "wheelpin[bot] <wheelpin@users.noreply.github.com>"


def test_closed_when_the_base_catches_up(world: World) -> None:
    world.commit_upstream("one", NEW_VERSION)
    assert world.reconcile().code == 0
    proposal = world.branch()
    git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream)  # the maintainer merges
    result = world.reconcile()
    assert result.code == 0, result.stderr
    (close,) = component(result)["actions"]
    pinned = component(result)["pinned"]
    assert (close["kind"], close["detail"]) == ("close", f"{BRANCH}: the base already pins {pinned[:8]}")
    assert world.branch() is None
    record = git(["log", "-1", "--format=%B", "refs/wheelpin/closed/demo-cache"], cwd=world.downstream)
    assert "the base already pins" in record
    assert git(["rev-parse", "refs/wheelpin/closed/demo-cache^"], cwd=world.downstream).strip() == proposal
    assert component(world.reconcile())["status"] == "nothing"


def test_a_human_commit_on_the_bot_branch_is_left_alone(world: World) -> None:
    world.commit_upstream("one", NEW_VERSION)
    assert world.reconcile().code == 0
    worktree = world.root / "human"
    git(["worktree", "add", "--quiet", str(worktree), BRANCH], cwd=world.downstream)
    (worktree / "README.md").write_text("a human was here\n")
    git(["commit", "--quiet", "-am", "tweak"], cwd=worktree, env=HUMAN)
    touched = world.branch()
    world.commit_upstream("two", {"requirements.txt": "numpy>=2.3\nredis\n"})
    result = world.reconcile()
    assert result.code == 3, result.stderr  # not a failure, but a script must be able to tell (--help)
    assert component(result)["status"] == "left-alone" and result.json()["left_alone"] is True
    assert "carries commits the bot did not make" in component(result)["messages"][0]
    assert world.branch() == touched
    assert world.reconcile("--dry-run").code == 3  # the plan leaves it alone too


def test_a_failed_component_exits_1_before_a_branch_left_alone() -> None:
    from bot.commands.reconcile_cmd import exit_code
    from bot.loop.results import ComponentResult, PassResult, Status

    def ended(*statuses: Status) -> int:
        return exit_code(PassResult([ComponentResult(f"c{i}", status) for i, status in enumerate(statuses)], False))

    assert ended(Status.DONE, Status.NOTHING, Status.WAITING) == 0
    assert ended(Status.DONE, Status.LEFT_ALONE) == 3
    assert ended(Status.LEFT_ALONE, Status.FAILED) == 1


def test_build_failure_is_reported_and_backed_off(world: World) -> None:
    world.commit_upstream("broken", {"build_wheel.py": "import sys\nprint('compiler error')\nsys.exit(3)\n"})
    failed = world.reconcile()
    assert failed.code == 1
    assert (
        "failed (exit 3)" in component(failed)["messages"][0] and "compiler error" in component(failed)["messages"][0]
    )
    assert world.branch() is None and len(world.layout_tags()) == 1
    again = world.reconcile()
    assert again.code == 1 and [a["kind"] for a in component(again)["actions"]] == ["report"]  # no rebuild
    retried = world.reconcile("--retry-failed")
    assert [a["kind"] for a in component(retried)["actions"]] == ["build"]


@pytest.mark.parametrize(
    ("config", "files", "problem"),
    [
        (
            ('distribution = "demo-cache"', 'distribution = "demo-cache-rocm"'),
            NEW_VERSION,
            "distribution is 'demo-cache', expected 'demo-cache-rocm': a build of the non-ROCm variant",
        ),
        (
            ('distribution = "demo-cache"', 'distribution = "demo-cache", archs = ["gfx942"]'),
            NEW_VERSION,
            "no HIP device code found, but gfx942 is required",
        ),
        (None, {"VERSION": "0.1.1\n", "build_wheel.py": None}, "does not carry commit"),
    ],
    ids=["wrong-name", "missing-arch", "commit-mismatch"],
)
def test_verification_failure_publishes_and_proposes_nothing(world: World, config, files, problem) -> None:  # type: ignore[no-untyped-def]
    if config:
        world.set_config(*config)
    if files.get("build_wheel.py", "") is None:
        script = (world.upstream / "build_wheel.py").read_text()
        files = {**files, "build_wheel.py": script.replace('os.environ["WHEELPIN_SHA8"]', '"deadbeef"')}
    world.commit_upstream("release", files)
    result = world.reconcile()
    assert result.code == 1
    message = component(result)["messages"][-1]
    assert "nothing published" in message and problem in message
    assert world.branch() is None and len(world.layout_tags()) == 1
    pins = (world.downstream / "docker/Dockerfile").read_text()
    assert git(["show", "main:docker/Dockerfile"], cwd=world.downstream) == pins


def test_a_wheel_built_against_another_torch_is_refused_under_a_torch210_tag(world: World) -> None:
    """ATOM tags its LMCache image `…-rocm-torch210`; a wheel built against torch 2.11 must
    not be published under it. The tag takes its torch from the wheel's own version."""
    world.set_config(
        'wheel = { distribution = "demo-cache" }',
        'wheel = { distribution = "demo-cache", local_segments = ["torch2.10", "cxx11abi1"] }',
    )
    world.set_config('g{sha8}" }', 'g{sha8}-rocm-torch{local_torch_digits}" }')
    script = (world.upstream / "build_wheel.py").read_text()
    world.commit_upstream(
        "torch 2.11",
        {"VERSION": "0.1.1\n", "build_wheel.py": script.replace('".rocm7.2.4"', '".rocm7.2.4.torch2.11.cxx11abi1"')},
    )
    refused = world.reconcile()
    assert refused.code == 1
    message = component(refused)["messages"][-1]
    assert "nothing published" in message and "carries torch2.11, expected torch2.10" in message, message
    assert world.branch() is None and len(world.layout_tags()) == 1
    head = world.commit_upstream(
        "torch 2.10", {"build_wheel.py": script.replace('".rocm7.2.4"', '".rocm7.2.4.torch2.10.cxx11abi1"')}
    )
    done = world.reconcile()
    assert done.code == 0, done.stdout
    assert f"demo-cache-v0.1.1-g{head[:8]}-rocm-torch210" in world.layout_tags()
    assert f"-g{head[:8]}-rocm-torch210@sha256:" in world.branch_file()
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    (line,) = [line for line in message.splitlines() if "torch 2.11" in line]
    assert "— ⛔ refused: " in line and "carries torch2.11, expected torch2.10" in line  # the commit before
    assert "nothing published" not in line  # its recorded reason, not the sentence the pass said it in
    assert "- ✅ local version carries torch2.10, cxx11abi1" in message
    assert f"Provenance: built by `build.command` in a clean checkout of `{head[:8]}` on " in message


def test_a_cuda_wheel_is_refused(world: World, tmp_path: Path) -> None:
    """The build links against libcudart.so.13: the ROCm check refuses it."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "cudart.c").write_text("int cudaMalloc(void **p, unsigned long n) { return 0; }\n")
    cc = tool("clang")  # Debian's clang-19, as for the HIP objects: gcc is not among the test packages
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-Wl,-soname,libcudart.so.13",
            str(stub / "cudart.c"),
            "-o",
            str(stub / "libcudart.so"),
        ],
        check=True,
    )
    (stub / "ops.c").write_text(
        "int cudaMalloc(void **p, unsigned long n);\nint f(void) { return cudaMalloc(0, 0); }\n"
    )
    library = world.upstream / "demo_cache" / "_ops.so"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            str(stub / "ops.c"),
            "-L",
            str(stub),
            "-Wl,--no-as-needed",
            "-lcudart",
            "-o",
            str(library),
        ],
        check=True,
    )
    script = (
        (world.upstream / "build_wheel.py")
        .read_text()
        .replace(
            'files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read()}',
            'files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read(), '
            '"demo_cache/_ops.so": open("demo_cache/_ops.so", "rb").read()}',
        )
    )
    world.commit_upstream("cuda ops", {"VERSION": "0.1.1\n", "build_wheel.py": script})
    result = world.reconcile()
    assert result.code == 1
    assert "needs libcudart.so.13, a CUDA library" in component(result)["messages"][-1]
    assert world.branch() is None and len(world.layout_tags()) == 1


def test_a_wanted_arch_missing_is_named_and_none_present_is_refused(world: World, hip_artifacts: HipArtifacts) -> None:
    """vLLM's rule: gfx90a is used where the build has it. A wheel for gfx942 alone is
    proposed with gfx90a named as skipped; one with none of the wanted archs is refused."""
    library = link_shared(hip_artifacts.folder, [hip_artifacts.plain_objects["k942"]], "libops942.so")
    (world.upstream / "demo_cache" / "_ops.so").write_bytes(library.read_bytes())
    script = (
        (world.upstream / "build_wheel.py")
        .read_text()
        .replace(
            'files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read()}',
            'files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read(), '
            '"demo_cache/_ops.so": open("demo_cache/_ops.so", "rb").read()}',
        )
    )
    world.set_config(
        'wheel = { distribution = "demo-cache" }', 'wheel = { distribution = "demo-cache", archs_wanted = ["gfx1100"] }'
    )
    world.commit_upstream("gfx942 ops", {"VERSION": "0.1.1\n", "build_wheel.py": script})
    refused = world.reconcile()
    assert refused.code == 1
    assert (
        "none of the wanted archs gfx1100 has a code object (the wheel carries gfx942)"
        in component(refused)["messages"][-1]
    )
    (problem,) = component(refused)["problems"]  # every problem, each with its wheel
    assert problem.startswith("demo_cache-0.1.1+g") and problem.endswith("(the wheel carries gfx942)")
    assert world.branch() is None and len(world.layout_tags()) == 1
    world.set_config('archs_wanted = ["gfx1100"]', 'archs_wanted = ["gfx90a", "gfx942"]')
    done = world.reconcile()
    assert done.code == 0, done.stdout
    assert component(done)["notes"] == ["gfx90a: no code object, skipped (wheel.archs_wanted)"]
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "### ⚠️ Notes\n- **gfx90a: no code object, skipped (wheel.archs_wanted)**" in message
    assert "- ✅ HIP code for at least one of gfx90a, gfx942" in message
    assert "- GPU archs added: gfx942" in message and "- needs newly: `libc.so.6`" in message
    assert "refused" not in message  # refused under the rules before: judged again, and passed


def test_an_earlier_build_is_reused_verified_and_not_rebuilt(world: World, tmp_path: Path) -> None:
    """ATOM's `source_run_id`: the wheels of a build made elsewhere are taken as the build
    of the head, verified like any build, published and proposed; nothing is rebuilt."""
    head = world.commit_upstream("one", NEW_VERSION)
    elsewhere = tmp_path / "artifacts"
    elsewhere.mkdir()
    (built,) = runner_build(world, tmp_path, head)  # a CI runner's build, its artifact downloaded
    shutil.copy(built, elsewhere)
    bad = world.reconcile("--use-artifacts", str(elsewhere), "--commit", "0" * 40)
    assert bad.code == 2 and f"is not the head of ../upstream ({head[:12]})" in bad.stderr
    assert world.reconcile("--use-artifacts", str(tmp_path / "none"), "--commit", head).code == 2
    assert world.reconcile("--use-artifacts", str(elsewhere)).code == 2  # --commit goes with it
    used = world.reconcile("--use-artifacts", str(elsewhere), "--commit", head[:12])
    assert used.code == 0, used.stdout + used.stderr
    assert [a["kind"] for a in component(used)["actions"]] == ["publish", "propose"]  # no build
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert f"Provenance: built by wheels a maintainer gave (`--use-artifacts {elsewhere}`), not rebuilt" in message
    # a wheel of another commit is refused like any build's
    newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
    refused = world.reconcile("--use-artifacts", str(elsewhere), "--commit", newer)
    assert refused.code == 1 and f"does not carry commit g{newer[:8]}" in component(refused)["messages"][-1]


def test_wheels_given_for_the_wrong_commit_are_refused_and_forgotten(world: World, tmp_path: Path) -> None:
    """A wrong `--use-artifacts` folder (another commit's wheel) cannot poison the commit:
    it is refused once and forgotten, the next pass builds the commit as usual, and the
    proposal lists no refusal of it."""
    first = world.commit_upstream("one", NEW_VERSION)
    elsewhere = tmp_path / "artifacts"
    elsewhere.mkdir()
    for wheel in runner_build(world, tmp_path, first):
        shutil.copy(wheel, elsewhere)
    head = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
    refused = world.reconcile("--use-artifacts", str(elsewhere), "--commit", head)
    assert refused.code == 1
    said = component(refused)["messages"][-1]
    assert f"were refused and forgotten; {head[:8]} is built as usual at the next pass" in said, said
    assert f"does not carry commit g{head[:8]}" in said and world.branch() is None
    assert not (Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds" / "demo-cache" / head).exists()
    done = world.reconcile()
    assert done.code == 0, done.stdout + done.stderr
    assert [a["kind"] for a in component(done)["actions"]] == ["build", "publish", "propose"]
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert head[:8] in message.splitlines()[0] and "⛔" not in message
    assert "wheels a maintainer gave" not in message  # its own build, said as such


def test_a_wheel_that_cannot_be_read_is_refused_in_the_commit_list(world: World) -> None:
    """A build that leaves a file named like a wheel that is no zip: the commit is refused
    like one whose wheel fails a check (not rebuilt), and the next proposal marks it ⛔."""
    from bot.commands.demo import BUILD_SCRIPT

    broken = world.commit_upstream(
        "broken packaging",
        {
            "build_wheel.py": (
                "import pathlib, sys\n"
                "pathlib.Path(sys.argv[1], 'demo_cache-0.1.1-py3-none-any.whl').write_bytes(b'not a zip')\n"
            )
        },
    )
    refused = world.reconcile()
    assert refused.code == 1 and "nothing published" in component(refused)["messages"][-1], refused.stdout
    assert component(world.reconcile())["actions"][0]["kind"] == "report"  # not rebuilt
    head = world.commit_upstream("fixed packaging", {**NEW_VERSION, "build_wheel.py": BUILD_SCRIPT})
    done = world.reconcile()
    assert done.code == 0, done.stdout + done.stderr
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert f"- `{broken[:8]}` broken packaging — ⛔ refused: " in message, message
    assert f"- `{head[:8]}` fixed packaging\n" in message


def test_a_commit_whose_build_failed_is_marked_in_the_commit_list(world: World) -> None:
    """A commit whose build failed is no refused wheel, and no plain commit either: the next
    proposal marks it with the failure recorded against it."""
    from bot.commands.demo import BUILD_SCRIPT

    broken = world.commit_upstream("broken build", {"build_wheel.py": "import sys\nprint('no ibv.c')\nsys.exit(3)\n"})
    assert world.reconcile().code == 1
    head = world.commit_upstream("fixed build", {**NEW_VERSION, "build_wheel.py": BUILD_SCRIPT})
    done = world.reconcile()
    assert done.code == 0, done.stdout + done.stderr
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert f"- `{broken[:8]}` broken build — ❌ build of {broken[:8]} failed (exit 3): no ibv.c\n" in message, message
    assert f"- `{head[:8]}` fixed build\n" in message


def test_the_exact_wheel_is_smoke_tested_before_it_is_published(world: World) -> None:
    """Mooncake's release rule: the wheel itself, installed alone in a fresh venv, must
    import. A failed smoke test publishes nothing."""
    world.set_config(
        'wheel = { distribution = "demo-cache" }',
        'wheel = { distribution = "demo-cache", smoke = "python -c \'import demo_cache, sys; '
        'sys.exit(demo_cache.__version__ != \\"0.1.0\\")\'" }',
    )
    world.commit_upstream("broken import", {"VERSION": "0.1.1\n", "demo_cache/__init__.py": "import missing_dep\n"})
    refused = world.reconcile()
    assert refused.code == 1
    message = component(refused)["messages"][-1]
    assert "smoke test of" in message and "nothing published" in message and "No module named 'missing_dep'" in message
    assert world.branch() is None and len(world.layout_tags()) == 1
    world.commit_upstream("fixed", {"demo_cache/__init__.py": '__version__ = "0.1.0"\n'})
    done = world.reconcile()
    assert done.code == 0, done.stdout
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "- ✅ smoke test `python -c 'import demo_cache, sys; " in body and "` passed for py3" in body


def test_a_tag_holding_other_content_is_refused(world: World, tmp_path: Path) -> None:
    """The commit's tag already holds some other wheel: nothing is built over it, nothing proposed."""
    head = world.commit_upstream("work", NEW_VERSION)
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    from tests.fixtures.wheels import build_wheel

    other = build_wheel(tmp_path / "other", name="demo-cache", version=f"0.0.9+g{head[:8]}", files={"x.py": b"other"})
    published = wheelpin("image", "publish", str(other), "--to", f"oci:{world.root / 'images'}:{tag}", env=world.env)
    assert published.code == 0, published.stderr
    before = (world.root / "images" / "index.json").read_bytes()
    result = world.reconcile()
    assert result.code == 1
    assert "never overwrites a tag" in component(result)["messages"][-1]
    assert world.branch() is None
    assert (world.root / "images" / "index.json").read_bytes() == before


def test_an_image_another_workflow_pushed_is_adopted(world: World, tmp_path: Path) -> None:
    """The right wheel under the commit's tag, pushed by someone else: verified, then
    proposed, with no build and no push."""
    head = world.commit_upstream("work", NEW_VERSION)
    from tests.fixtures.wheels import build_wheel

    wheel = build_wheel(
        tmp_path / "theirs",
        name="demo-cache",
        version=f"0.1.1+g{head[:8]}.rocm7.2.4",
        files={"demo_cache/__init__.py": b"x = 1\n"},
        requires_dist=["numpy>=2.3"],
    )
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    assert (
        wheelpin("image", "publish", str(wheel), "--to", f"oci:{world.root / 'images'}:{tag}", env=world.env).code == 0
    )
    world.set_config(
        'wheel = { distribution = "demo-cache" }',  # its exact wheel is smoke-tested too
        'wheel = { distribution = "demo-cache", smoke = "python -c \'import demo_cache; assert demo_cache.x == 2\'" }',
    )
    failed = world.reconcile()
    assert failed.code == 1 and "smoke test of" in component(failed)["messages"][-1] and world.branch() is None
    assert component(world.reconcile())["actions"][0]["kind"] == "report"  # recorded: not fetched again each pass
    world.set_config("demo_cache.x == 2", "demo_cache.x == 1")
    result = world.reconcile()
    assert result.code == 0, result.stderr
    assert [a["kind"] for a in component(result)["actions"]] == ["adopt", "propose"]  # verified, then proposed
    assert f"{tag}@sha256:" in world.branch_file()
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert (
        "Provenance: adopted: found under its tag, pushed by someone else; wheelpin fetched its 1 wheel "
        "and verified them like a build of its own"
    ) in message
    assert "- ✅ smoke test `python -c 'import demo_cache; assert demo_cache.x == 1'` passed for py3" in message


@pytest.mark.parametrize("crash_after", [1, 2, 3])
def test_killed_between_actions_converges(world: World, crash_after: int) -> None:
    head = world.commit_upstream("work", NEW_VERSION)
    killed = world.reconcile(crash_after=crash_after)
    assert killed.code == 70
    result = world.reconcile()
    assert result.code == 0, result.stderr
    assert component(world.reconcile())["status"] == "nothing"
    tags = [t for t in world.layout_tags() if head[:8] in t]
    assert tags == [f"demo-cache-v0.1.1-g{head[:8]}"]  # exactly one image
    assert len(git(["log", "--format=%H", f"main..{BRANCH}"], cwd=world.downstream).split()) == 1
    assert f"g{head[:8]}@sha256:" in world.branch_file()


def test_components_are_independent(world: World) -> None:
    config = (world.downstream / "wheelpin.toml").read_text()
    broken = (
        config.split("[[component]]", 1)[1]
        .replace('name = "demo-cache"', 'name = "broken"')
        .replace('repo = "../upstream"', 'repo = "../no-such-upstream"')
        .replace('file = "docker/Dockerfile"', 'file = "docker/Dockerfile.broken"')  # a pin is one component's
    )
    (world.downstream / "docker/Dockerfile.broken").write_text((world.downstream / "docker/Dockerfile").read_text())
    (world.downstream / "wheelpin.toml").write_text(config + "\n[[component]]" + broken)
    git(["add", "-A"], cwd=world.downstream)
    git(["commit", "--quiet", "-m", "second component"], cwd=world.downstream, env=HUMAN)
    world.commit_upstream("work", NEW_VERSION)
    result = world.reconcile()
    assert result.code == 1
    statuses = {c["component"]: c["status"] for c in result.json()["components"]}
    assert statuses == {"demo-cache": "done", "broken": "failed"}
    assert world.branch() is not None


def test_with_the_real_registry(registry: Registry, tmp_path: Path) -> None:
    world = make_world(tmp_path, registry=f"{registry.host}/e2e/demo-cache")
    head = world.commit_upstream("work", {"VERSION": "0.2.0\n", "requirements.txt": "numpy>=2.3\nredis\n"})
    result = world.reconcile()
    assert result.code == 0, result.stderr
    assert f"{registry.host}/e2e/demo-cache:demo-cache-v0.2.0-g{head[:8]}@sha256:" in world.branch_file()
    digest = "sha256:" + world.branch_file().split(f"g{head[:8]}@sha256:", 1)[1][:64]
    assert component(world.reconcile())["status"] == "nothing"
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "added `redis`" in message
    # "Check by hand" works as printed against this plain-HTTP (loopback) registry
    commands = message.split("### Check by hand\n```sh\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert commands == [
        f"skopeo inspect --tls-verify=false docker://{registry.host}/e2e/demo-cache@{digest}",
        f"wheelpin image show {registry.host}/e2e/demo-cache@{digest}",  # loopback: always plain HTTP
    ]
    inspected = subprocess.run(commands[0].split(), capture_output=True, text=True, timeout=120)
    assert inspected.returncode == 0, inspected.stderr
    unflagged = subprocess.run(commands[0].replace(" --tls-verify=false", "").split(), capture_output=True, text=True)
    assert "server gave HTTP response to HTTPS client" in unflagged.stderr  # skopeo: loopback is no exception
    shown = wheelpin(*commands[1].split()[1:])
    assert shown.code == 0 and "demo_cache-0.2.0" in shown.stdout, shown.stderr


def test_quiet_period(world: World) -> None:
    world.set_config('base_branch = "main"', 'base_branch = "main"\nquiet_minutes = 60')
    world.commit_upstream("fresh", NEW_VERSION)
    waiting = world.reconcile()
    assert waiting.code == 0 and component(waiting)["status"] == "waiting"
    assert "quiet period" in component(waiting)["messages"][0] and world.branch() is None
    (world.upstream / "VERSION").write_text("0.1.2\n")
    git(
        ["commit", "--quiet", "-am", "old enough"],
        cwd=world.upstream,
        env={**PEOPLE, "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"},
    )
    assert world.reconcile().code == 0 and world.branch() is not None


def test_the_loop_passes_on_sighup_reads_its_config_again_and_stops_on_sigterm(world: World) -> None:
    """`wheelpin reconcile` without `--once`: a pass at start, then one per schedule (or
    at once on SIGHUP) with the config read anew; an unusable config keeps the last good
    one; SIGTERM ends it with 0 and nothing half-written."""
    import json
    import signal
    import sys
    import threading
    import time

    from tests.cli import environment

    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "reconcile", "--repo", str(world.downstream), "--json"],
        env=environment(world.env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    passes: list[dict] = []  # type: ignore[type-arg]
    said: list[str] = []
    readers = [
        threading.Thread(target=lambda: [passes.append(json.loads(line)) for line in proc.stdout], daemon=True),  # type: ignore[union-attr]
        threading.Thread(target=lambda: [said.append(line) for line in proc.stderr], daemon=True),
    ]  # type: ignore[union-attr]
    for reader in readers:
        reader.start()

    def wait_for(count: int) -> dict:  # type: ignore[type-arg]
        deadline = time.monotonic() + 120
        while len(passes) < count or sum("next pass at" in line for line in said) < count:
            assert proc.poll() is None and time.monotonic() < deadline, "".join(said)
            time.sleep(0.05)
        return passes[count - 1]["components"][0]  # type: ignore[no-any-return]

    try:
        assert wait_for(1)["status"] == "nothing"
        waiting = [line for line in said if "next pass at" in line][-1]
        assert "UTC" in waiting  # 30 minutes from now, the default schedule
        head = world.commit_upstream("work", NEW_VERSION)
        proc.send_signal(signal.SIGHUP)
        assert [a["kind"] for a in wait_for(2)["actions"]] == ["build", "publish", "propose"]
        assert f"g{head[:8]}@sha256:" in world.branch_file()
        proc.send_signal(signal.SIGHUP)  # the config unchanged: a pass, nothing to do
        assert wait_for(3)["status"] == "nothing"

        world.set_config('base_branch = "main"', 'base_branch = "main"\nschedule = "0 3 * * *"')
        proc.send_signal(signal.SIGHUP)
        assert wait_for(4)["status"] == "nothing"
        assert " 03:00:00 UTC" in [line for line in said if "next pass at" in line][-1]  # the cron line, read anew

        world.set_config('schedule = "0 3 * * *"', 'schedule = "whenever"')
        proc.send_signal(signal.SIGHUP)
        assert wait_for(5)["status"] == "nothing"
        assert any("whenever" in line and "config read before" in line for line in said)
        assert " 03:00:00 UTC" in [line for line in said if "next pass at" in line][-1]

        # a config no longer UTF-8, nested 1,000 deep, or with an absurd interval: said, and
        # the loop goes on with the last good one
        committed = (world.downstream / "wheelpin.toml").read_bytes()
        unusable = [
            committed + b"\n# \xff\n",
            committed + b"\nx = " + b"[" * 1000 + b"]" * 1000 + b"\n",
            committed.replace(b'"whenever"', b'"99999999999999999999m"'),
        ]
        for count, text in enumerate(unusable, start=6):
            (world.downstream / "wheelpin.toml").write_bytes(text)
            proc.send_signal(signal.SIGHUP)
            assert wait_for(count)["status"] == "nothing"
        refused = [line for line in said if "config read before" in line]
        assert any("not UTF-8" in line for line in refused) and any("levels deep" in line for line in refused)
        assert any("99999999999999999999m" in line for line in refused), refused
        (world.downstream / "wheelpin.toml").write_bytes(committed)

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    for reader in readers:
        reader.join(timeout=10)
    assert said[-1].strip() == "wheelpin: stopped"
    assert git(["status", "--porcelain", "--untracked-files=no"], cwd=world.downstream) == ""


def test_the_loop_keeps_its_reconciler_while_the_config_is_unchanged(world: World) -> None:
    """In-process: a new reconciler (and its empty caches) only for a changed config."""
    import os
    import signal
    import threading

    from bot.app.settings import Settings
    from bot.commands.platforms.local import local_reconciler
    from bot.commands.reconcile_cmd import loop

    settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
    made = []

    def make():  # type: ignore[no-untyped-def]
        made.append(local_reconciler(repo=world.downstream, config=None, settings=settings, retry_failed=False))
        return made[-1]

    config = world.downstream / "wheelpin.toml"
    steps = [
        lambda: None,  # pass 1 → wake: the same text
        lambda: config.write_text(config.read_text() + "\n# edited\n"),  # pass 2 → wake: changed
        None,
    ]  # pass 3 → stop
    used = []

    def show(result) -> None:  # type: ignore[no-untyped-def]
        used.append(result)
        step = steps[len(used) - 1]
        if step is not None:
            step()
        signal_number = signal.SIGHUP if step is not None else signal.SIGTERM
        threading.Timer(0.2, os.kill, (os.getpid(), signal_number)).start()

    before = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    first = make()
    assert loop(first, make, lambda: config.read_text(), only=None, show=show) == 0
    assert len(used) == 3 and len(made) == 2  # the first, and one for the edited config only
    assert {number: signal.getsignal(number) for number in before} == before  # handlers given back


def test_following_release_tags_never_proposes_a_downgrade(world: World) -> None:
    """Tags `v{version}-rocm` in version order (v0.5.10-rocm after v0.5.9-rocm, string order
    had it the other way round), and a newest tag older than what the base pins (its
    commit carries v0.6.0, pinned by hand) is never proposed."""
    first = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()  # what the base pins
    git(["tag", "v0.6.0", first], cwd=world.upstream)
    world.set_config('"../upstream", branch = "main"', '"../upstream", tags = "v{version}-rocm"')
    git(["checkout", "--quiet", "--orphan", "rocm"], cwd=world.upstream)  # a line not descended from the pin
    for version in ("0.5.10", "0.5.9"):
        world.commit_upstream(f"rocm {version}", {"VERSION": f"{version}\n"})
        git(["tag", f"v{version}-rocm"], cwd=world.upstream)
    held = world.reconcile()
    assert held.code == 0 and component(held)["status"] == "nothing", held.stdout
    assert world.branch() is None
    newer = world.commit_upstream("rocm 0.7.0", {"VERSION": "0.7.0\n"})
    git(["tag", "v0.7.0-rocm"], cwd=world.upstream)
    moved = world.reconcile()
    assert component(moved)["status"] == "done", moved.stdout
    assert f"g{newer[:8]}@sha256:" in world.branch_file()
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)  # the tags named, the pin's too
    assert f"Moves **demo-cache** from `{first[:8]}` (tag `v0.6.0`) to `{newer[:8]}` (tag `v0.7.0-rocm`) of " in body


def test_an_upstream_branch_rewritten_under_the_pin_is_said_and_a_version_going_backwards_too(world: World) -> None:
    """The pinned commit left the branch (reset, then a new commit): the dry run and the
    proposal say so and list the new commit as what it is, not one "after the pinned one";
    its version is lower than the pinned wheel's, said loudly (and proposed: the branch is
    what the component follows)."""
    first = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
    dropped = world.commit_upstream("0.2.0 work", {"VERSION": "0.2.0\n"})
    assert world.reconcile().code == 0
    git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream)  # the maintainer merges
    assert world.reconcile().code == 0  # the base pins it now: the proposal is closed
    git(["reset", "--quiet", "--hard", first], cwd=world.upstream)  # the upstream resets its branch
    head = world.commit_upstream("rewritten", {"VERSION": "0.1.5\n"})

    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert dry.code == 0, dry.stdout + dry.stderr
    gone = (
        f"the pinned commit {dropped[:8]} is not on main: main was rewritten (force-pushed or reset), or the "
        f"image was built from another branch; 1 commit of the pinned history is not on it: {dropped[:8]} (0.2.0 work)"
    )
    assert (
        f"  commits: 1 commit not in the history of the pinned commit {dropped[:8]} (since {first[:8]}, the newest "
        f"commit the two share), newest first\n    ! {gone}\n    {head[:8]} rewritten\n"
    ) in dry.stdout, dry.stdout
    assert "after the pinned one" not in dry.stdout

    done = world.reconcile()
    assert done.code == 0, done.stdout + done.stderr
    body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    backwards = f"0.2.0+g{dropped[:8]}.rocm7.2.4 → 0.1.5+g{head[:8]}.rocm7.2.4"
    assert f"### ⚠️ Notes\n- **{gone}**\n- **the version goes backwards: {backwards} (lower by PEP 440" in body, body
    assert f"- ⚠️ **version goes backwards: `0.2.0+g{dropped[:8]}.rocm7.2.4` → `0.1.5+g{head[:8]}.rocm7.2.4`**" in body
    assert (
        f"### Commits\n1 commit not in the history of the pinned commit {dropped[:8]} (since {first[:8]}, the "
        f"newest commit the two share):\n- `{head[:8]}` rewritten\n"
    ) in body
    assert gone in component(done)["notes"]  # the pass says it too


@pytest.mark.parametrize("served", ["path", "git daemon"])
def test_a_pinned_commit_the_upstream_no_longer_has_is_said_not_failed_as_transient(
    world: World, tmp_path: Path, served: str
) -> None:
    """The upstream reset its branch and collected the pinned commit, and wheelpin's mirror
    of it is new (an empty cache): the fetch of the pinned commit gets git's "not our ref",
    an answer (the commit is not in the upstream), not an outside failure. The dry run and
    the pass say so, list the head alone, and propose it (exit 0, not 4). Served from its
    folder (upload-pack run locally) and by `git daemon` (the smart protocol, which says it
    as a remote error, as GitHub does)."""
    daemon = GitDaemon(world.root) if served == "git daemon" else None
    try:
        if daemon is not None:
            world.set_config('"../upstream", branch = "main"', f'"{daemon.url}/upstream", branch = "main"')
        first = git(["rev-parse", "HEAD"], cwd=world.upstream).strip()
        dropped = world.commit_upstream("0.2.0 work", {"VERSION": "0.2.0\n"})
        assert world.reconcile().code == 0
        git(["merge", "--quiet", "--ff-only", BRANCH], cwd=world.downstream)  # the maintainer merges
        assert world.reconcile().code == 0  # the base pins it now
        git(["reset", "--quiet", "--hard", first], cwd=world.upstream)
        head = world.commit_upstream("rewritten", {"VERSION": "0.1.5\n"})
        git(["reflog", "expire", "--expire=now", "--all"], cwd=world.upstream)
        git(["gc", "--quiet", "--prune=now"], cwd=world.upstream)
        assert subprocess.run(["git", "cat-file", "-e", dropped], cwd=world.upstream).returncode != 0
        shutil.rmtree(Path(world.env["WHEELPIN_CACHE_DIR"]) / "upstream")  # the mirror: an empty cache

        dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
        assert dry.code == 0, dry.stdout + dry.stderr
        gone = (
            f"the pinned commit {dropped[:8]} is not in the upstream at all: its history was rewritten "
            "(force-pushed or reset), or the image was built from a branch deleted since or from another repository"
        )
        listed = (
            f"the head only (the pinned commit {dropped[:8]} is not in the upstream: where the two histories part "
            "is not known)"
        )
        assert f"  commits: {listed}\n    ! {gone}\n    {head[:8]} rewritten\n" in dry.stdout, dry.stdout

        done = world.reconcile()  # predicted by the dry run before it (tests/fixtures/dryreal.py)
        assert done.code == 0 and component(done)["status"] == "done", done.stdout + done.stderr
        assert gone in component(done)["notes"]
        body = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
        assert f"### ⚠️ Notes\n- **{gone}**\n" in body, body
        assert f"### Commits\n{listed}:\n- `{head[:8]}` rewritten\n" in body, body
        assert f"g{head[:8]}" in world.branch_file()
    finally:
        if daemon is not None:
            daemon.stop()


def test_a_config_change_judges_a_refused_commit_again(world: World) -> None:
    """Refused under `archs = ["gfx942"]` (the wheel has no device code); the maintainer
    drops that rule: the next pass verifies the same build again and proposes it, with no
    --retry-failed. Under unchanged rules the refusal stands."""
    world.set_config('distribution = "demo-cache"', 'distribution = "demo-cache", archs = ["gfx942"]')
    head = world.commit_upstream("release", NEW_VERSION)
    assert "gfx942 is required" in component(world.reconcile())["messages"][-1]
    again = world.reconcile()
    assert [a["kind"] for a in component(again)["actions"]] == ["report"], again.stdout  # same rules: held
    world.set_config('distribution = "demo-cache", archs = ["gfx942"]', 'distribution = "demo-cache"')
    judged = world.reconcile()
    assert component(judged)["status"] == "done", judged.stdout
    assert f"g{head[:8]}@sha256:" in world.branch_file()


def test_a_build_left_running_by_a_killed_pass_is_ended_by_the_next(world: World, tmp_path: Path) -> None:
    """Unsandboxed (WHEELPIN_SANDBOX=off; sandboxed, the build dies with its pass,
    tests/adapters/test_sandbox.py): SIGKILL reaches the pass, not its build (in a session
    of its own): the next pass ends that build's process group before it builds again."""
    import os
    import signal
    import sys
    import time

    from tests.cli import environment

    world.env["WHEELPIN_SANDBOX"] = "off"
    flag = tmp_path / "build-now"
    world.set_config(
        "build = { command = [",
        f'build = {{ command = ["sh", "-c", "if [ -e {flag} ]; then '
        f'exec python3 build_wheel.py \\"$1\\"; else sleep 300 & sleep 300; fi", "build", "{{out}}"] }}\n# was: [',
    )
    head = world.commit_upstream("work", NEW_VERSION)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "reconcile", "--once", "--repo", str(world.downstream)],
        env=environment(world.env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    marker: Path | None = None
    deadline = time.monotonic() + 60
    while marker is None and time.monotonic() < deadline:
        marker = (
            next(iter((Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds").glob(f"*/{head}*/build.pid")), None)
            if (Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds").exists()
            else None
        )
        time.sleep(0.05)
    assert marker is not None, "the build did not start"
    group = int(marker.read_text().split()[0])
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    os.killpg(group, 0)  # the build runs on without its pass
    flag.touch()
    done = world.reconcile()
    assert component(done)["status"] == "done", done.stdout + done.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the orphaned build still runs")


def test_the_proposal_lists_every_line_its_commit_changes_once(world: World) -> None:
    """Two files pinning the wheel with the same ARG names and the same values (a release
    Dockerfile copied from the main one): each file's lines are their own in the list."""
    dockerfile = (world.downstream / "docker/Dockerfile").read_text()
    (world.downstream / "docker/Dockerfile.rocm_release").write_text("# the release image\n" + dockerfile)
    pin = '{ file = "docker/Dockerfile", image_arg = "DEMO_WHEEL_IMAGE", sha256_arg = "DEMO_WHEEL_SHA256" },'
    world.set_config(pin, pin + "\n  " + pin.replace("docker/Dockerfile", "docker/Dockerfile.rocm_release"))
    git(["add", "-A"], cwd=world.downstream)
    git(["commit", "--quiet", "--amend", "--no-edit"], cwd=world.downstream, env=HUMAN)
    world.commit_upstream("work", NEW_VERSION)
    result = world.reconcile()
    assert result.code == 0, result.stderr
    diff = git(["diff", "--unified=0", "main", BRANCH], cwd=world.downstream)
    changed: list[str] = []
    file = ""
    for line in diff.splitlines():
        if line.startswith("+++ b/"):
            file = line.removeprefix("+++ b/")
        elif line.startswith("@@"):
            start, _, count = line.split("+", 1)[1].split(" ", 1)[0].partition(",")
            changed += [f"{file}:{int(start) + n}" for n in range(int(count or 1))]
    assert len(changed) == 4
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    pins = message.split("Pins moved in: ", 1)[1].splitlines()[1:]
    listed = [line.split("`")[1] for line in pins if line.startswith("- `")]
    assert listed == changed  # every changed line, once, in file and line order


def test_an_image_copied_from_by_reference_is_left_as_it_is_and_said(world: World) -> None:
    """A test stage copying the wheel straight from the pinned image (`COPY --from=REF`,
    which no pin format moves): the proposal moves the pins, keeps that line, and says so
    in its notes, as the dry run does."""
    path = world.downstream / "docker/Dockerfile"
    pinned = path.read_text().split('ARG DEMO_WHEEL_IMAGE="', 1)[1].split('"', 1)[0]
    copy = f"COPY --from={pinned} / /tmp/old-wheel/"
    path.write_text(path.read_text() + f"\nFROM python:3.12-slim AS test\n{copy}\n")
    git(["commit", "--quiet", "-am", "a test stage"], cwd=world.downstream, env=HUMAN)
    line = path.read_text().splitlines().index(copy) + 1
    behind = (
        f"docker/Dockerfile:{line}: COPY --from names {pinned}, of demo-cache's image repository, but no pin moves "
        "it: a bump leaves it as it is"
    )
    world.commit_upstream("work", NEW_VERSION)
    dry = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert dry.code == 0 and f"\n  ⚠️ left behind: {behind}\n" in dry.stdout, dry.stdout
    result = world.reconcile()
    assert result.code == 0, result.stderr
    assert world.branch_file().splitlines()[line - 1] == copy
    assert pinned not in world.branch_file().splitlines()[1]  # the pin itself moved
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert f"### ⚠️ Notes\n- **{behind}**" in message

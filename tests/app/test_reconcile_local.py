"""The reconciler end to end on the local platform: real git repositories, a real build
command, an OCI layout folder or the real registry; each scenario of issue 5."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.adapters.git import git
from bot.app.settings import Settings
from bot.commands.demo import PEOPLE, make_downstream, make_upstream
from tests.cli import Result, wheelpin
from tests.fixtures.servers import Registry

BRANCH = "wheelpin/demo-cache"
HUMAN = {"GIT_AUTHOR_NAME": "A Human", "GIT_AUTHOR_EMAIL": "human@example.org",
         "GIT_COMMITTER_NAME": "A Human", "GIT_COMMITTER_EMAIL": "human@example.org"}


@dataclass
class World:
    root: Path
    upstream: Path
    downstream: Path
    env: dict[str, str]

    def commit_upstream(self, message: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.upstream / name).write_text(text)
        git(["add", "-A"], cwd=self.upstream)
        git(["commit", "--quiet", "-m", message], cwd=self.upstream, env=PEOPLE)
        return git(["rev-parse", "HEAD"], cwd=self.upstream).strip()

    def reconcile(self, *args: str, **env: str) -> Result:
        return wheelpin("reconcile", "--once", "--repo", str(self.downstream), "--json", *args,
                        env={**self.env, **env})

    def branch(self) -> str | None:
        out = git(["rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}"], cwd=self.downstream, check=False)
        return out.strip() or None

    def branch_file(self, path: str = "docker/Dockerfile") -> str:
        return git(["show", f"{BRANCH}:{path}"], cwd=self.downstream)

    def layout_tags(self) -> list[str]:
        index = json.loads((self.root / "images" / "index.json").read_text())
        return sorted(m["annotations"]["org.opencontainers.image.ref.name"] for m in index["manifests"])

    def set_config(self, old: str, new: str) -> None:
        path = self.downstream / "wheelpin.toml"
        path.write_text(path.read_text().replace(old, new))
        git(["commit", "--quiet", "-am", "config"], cwd=self.downstream, env=HUMAN)


def make_world(tmp_path: Path, *, registry: str | None = None) -> World:
    root = tmp_path / "world"
    root.mkdir()
    settings = Settings(cache_dir=tmp_path / "cache")
    upstream, first = make_upstream(root)
    downstream = make_downstream(root, first, settings, registry=registry)
    env = {"WHEELPIN_CACHE_DIR": str(tmp_path / "cache"), "DOCKER_CONFIG": str(tmp_path / "docker"),
           "WHEELPIN_REGISTRY_BACKOFF": "0.05"}
    return World(root, upstream, downstream, env)


@pytest.fixture()
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def component(result: Result) -> dict:  # type: ignore[type-arg]
    return result.json()["components"][0]


NEW_VERSION = {"VERSION": "0.1.1\n"}


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
    (action,) = component(planned)["actions"]
    assert action["kind"] == "build" and action["then"] == ["publish", "propose"]
    assert world.branch() is None and len(world.layout_tags()) == 1
    assert not (Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds").exists()
    text = wheelpin("reconcile", "--once", "--dry-run", "--repo", str(world.downstream), env=world.env)
    assert "would build" in text.stdout


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
    assert [a["kind"] for a in component(result)["actions"]] == ["close"]
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
    assert result.code == 0, result.stderr
    assert component(result)["status"] == "left-alone"
    assert "carries commits the bot did not make" in component(result)["messages"][0]
    assert world.branch() == touched


def test_build_failure_is_reported_and_backed_off(world: World) -> None:
    world.commit_upstream("broken", {"build_wheel.py": "import sys\nprint('compiler error')\nsys.exit(3)\n"})
    failed = world.reconcile()
    assert failed.code == 1
    assert "failed (exit 3)" in component(failed)["messages"][0] and "compiler error" in component(failed)["messages"][0]
    assert world.branch() is None and len(world.layout_tags()) == 1
    again = world.reconcile()
    assert again.code == 1 and [a["kind"] for a in component(again)["actions"]] == ["report"]  # no rebuild
    retried = world.reconcile("--retry-failed")
    assert [a["kind"] for a in component(retried)["actions"]] == ["build"]


@pytest.mark.parametrize(
    ("config", "files", "problem"),
    [
        (('distribution = "demo-cache"', 'distribution = "demo-cache-rocm"'), NEW_VERSION,
         "expected 'demo-cache-rocm'"),
        (('distribution = "demo-cache"', 'distribution = "demo-cache", archs = ["gfx942"]'), NEW_VERSION,
         "no HIP device code found, but gfx942 is required"),
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


def test_a_cuda_wheel_is_refused(world: World, tmp_path: Path) -> None:
    """The build links against libcudart.so.13: the ROCm check refuses it."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "cudart.c").write_text("int cudaMalloc(void **p, unsigned long n) { return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.13", str(stub / "cudart.c"),
                    "-o", str(stub / "libcudart.so")], check=True)
    (stub / "ops.c").write_text("int cudaMalloc(void **p, unsigned long n);\nint f(void) { return cudaMalloc(0, 0); }\n")
    library = world.upstream / "demo_cache" / "_ops.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(stub / "ops.c"), "-L", str(stub), "-Wl,--no-as-needed",
                    "-lcudart", "-o", str(library)], check=True)
    script = (world.upstream / "build_wheel.py").read_text().replace(
        'files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read()}',
        'files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read(), '
        '"demo_cache/_ops.so": open("demo_cache/_ops.so", "rb").read()}')
    world.commit_upstream("cuda ops", {"VERSION": "0.1.1\n", "build_wheel.py": script})
    result = world.reconcile()
    assert result.code == 1
    assert "needs libcudart.so.13, a CUDA library" in component(result)["messages"][-1]
    assert world.branch() is None and len(world.layout_tags()) == 1


def test_a_tag_holding_other_content_is_refused(world: World, tmp_path: Path) -> None:
    """The commit's tag already holds some other wheel: nothing is built over it, nothing proposed."""
    head = world.commit_upstream("work", NEW_VERSION)
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    from bot.core.wheelbuild import build_wheel
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
    from bot.core.wheelbuild import build_wheel
    wheel = build_wheel(tmp_path / "theirs", name="demo-cache", version=f"0.1.1+g{head[:8]}.rocm7.2.4",
                        files={"demo_cache/__init__.py": b"x = 1\n"}, requires_dist=["numpy>=2.3"])
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    assert wheelpin("image", "publish", str(wheel), "--to", f"oci:{world.root / 'images'}:{tag}",
                    env=world.env).code == 0
    result = world.reconcile()
    assert result.code == 0, result.stderr
    assert [a["kind"] for a in component(result)["actions"]] == ["propose"]
    assert f"{tag}@sha256:" in world.branch_file()


@pytest.mark.parametrize("crash_after", [1, 2, 3])
def test_killed_between_actions_converges(world: World, crash_after: int) -> None:
    head = world.commit_upstream("work", NEW_VERSION)
    killed = world.reconcile(WHEELPIN_CRASH_AFTER_ACTIONS=str(crash_after))
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
    broken = config.split("[[component]]", 1)[1].replace('name = "demo-cache"', 'name = "broken"').replace(
        'repo = "../upstream"', 'repo = "../no-such-upstream"')
    (world.downstream / "wheelpin.toml").write_text(config + "\n[[component]]" + broken)
    git(["commit", "--quiet", "-am", "second component"], cwd=world.downstream, env=HUMAN)
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
    assert component(world.reconcile())["status"] == "nothing"
    message = git(["log", "-1", "--format=%B", BRANCH], cwd=world.downstream)
    assert "added `redis`" in message and f"skopeo inspect docker://{registry.host}/e2e/demo-cache@sha256:" in message


def test_quiet_period(world: World) -> None:
    world.set_config('base_branch = "main"', 'base_branch = "main"\nquiet_minutes = 60')
    world.commit_upstream("fresh", NEW_VERSION)
    waiting = world.reconcile()
    assert waiting.code == 0 and component(waiting)["status"] == "waiting"
    assert "quiet period" in component(waiting)["messages"][0] and world.branch() is None
    (world.upstream / "VERSION").write_text("0.1.2\n")
    git(["commit", "--quiet", "-am", "old enough"], cwd=world.upstream,
        env={**PEOPLE, "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"})
    assert world.reconcile().code == 0 and world.branch() is not None


def test_the_loop_on_the_github_platform(world: World, tmp_path: Path) -> None:
    """The same loop, with proposals as draft pull requests through github3.py against the
    GitHub emulator: opened, then updated in place, then left as it is."""
    from bot.adapters.github import GitHubPlatform
    from bot.app.reconciler import Reconciler
    from bot.app.wiring import Registries
    from bot.core.configfile import load_config
    from tests.fixtures.github.emulator import GitHubEmulator

    emulator = GitHubEmulator(tmp_path / "github", tokens={"ghs_token"})
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
        platform = GitHubPlatform(api_url=emulator.url, token="ghs_token", owner="rocm", repo="atom",
                                  author=loaded.config.defaults.author)
        settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
        reconciler = Reconciler(loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir)
        head = world.commit_upstream("one", NEW_VERSION)
        first = reconciler.run()
        assert [a.kind for a in first.components[0].actions] == ["build", "publish", "propose"], first.to_json()
        (pull,) = repo.pulls.values()
        assert pull.draft and head[:8] in pull.title and "<!-- wheelpin: " in pull.body
        assert pull.labels == ["wheelpin"]
        assert reconciler.run().components[0].status == "nothing"
        newer = world.commit_upstream("two", {"requirements.txt": "numpy<=2.2.6\n"})
        assert reconciler.run().components[0].status == "done"
        (pull,) = repo.pulls.values()  # the same pull request, updated in place
        assert newer[:8] in pull.title and "numpy==2.3.5" in pull.body
        assert emulator.errors == []
    finally:
        emulator.stop()


def test_builds_on_github_actions(world: World, tmp_path: Path) -> None:
    """A workflow build: dispatched with the full commit, followed across passes (queued →
    in progress → completed), its artifact's wheel verified, published and proposed."""
    from bot.adapters.actions import ActionsBuilder
    from bot.adapters.github import GitHubPlatform
    from bot.app.reconciler import Reconciler
    from bot.app.wiring import Registries
    from bot.core.configfile import load_config
    from tests.fixtures.github.emulator import GitHubEmulator

    world.set_config('build = { command = [', 'build = { workflow = "demo-wheel.yaml", inputs = { commit = "{sha}" } }\n# was: [')
    emulator = GitHubEmulator(tmp_path / "github", tokens={"ghs_token"})
    built_for: list[str] = []

    def actions(repo, run):  # type: ignore[no-untyped-def]
        """The workflow: builds the upstream at the commit it was given."""
        commit = run.inputs["commit"]
        built_for.append(commit)
        checkout = tmp_path / f"runner-{commit[:8]}"
        git(["clone", "--quiet", str(world.upstream), str(checkout)])
        git(["checkout", "--quiet", commit], cwd=checkout)
        out = tmp_path / f"out-{commit[:8]}"
        out.mkdir()
        subprocess.run(["python3", "build_wheel.py", str(out)], cwd=checkout, check=True,
                       env={"WHEELPIN_SHA8": commit[:8], "PATH": "/usr/bin:/bin"})
        return {p.name: p.read_bytes() for p in out.glob("*.whl")}

    emulator.actions = actions
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
        platform = GitHubPlatform(api_url=emulator.url, token="ghs_token", owner="rocm", repo="atom",
                                  author=loaded.config.defaults.author)
        settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
        reconciler = Reconciler(loaded, platform=platform, registries=Registries(settings),
                                cache=settings.cache_dir, actions=ActionsBuilder(platform))
        head = world.commit_upstream("one", NEW_VERSION)
        first = reconciler.run().components[0]
        assert [a.kind for a in first.actions] == ["build", "wait"], first.to_json()
        (run,) = repo.runs.values()
        assert run.inputs == {"commit": head} and run.ref == "main"  # the full 40-hex commit
        second = reconciler.run().components[0]
        assert [a.kind for a in second.actions] == ["fetch", "publish", "propose"], second.to_json()
        assert built_for == [head]  # built once
        (pull,) = repo.pulls.values()
        assert head[:8] in pull.title
        assert reconciler.run().components[0].status == "nothing"
        # a run that fails is reported, and not dispatched again within its backoff
        emulator.actions = lambda repo, run: (_ for _ in ()).throw(RuntimeError("compiler error"))
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        reconciler.run()
        failed = reconciler.run().components[0]
        assert failed.status == "failed" and "ended: failure" in failed.messages[-1]
        assert len(repo.runs) == 2 and reconciler.run().components[0].actions[0].kind == "report"
        assert emulator.errors == []
        from tests.fixtures.github.openapi import validate
        kinds = {(r.method, r.template, r.status): r.body for r in emulator.recorded}
        assert any("/actions/" in template for _method, template, _status in kinds)
        for (method, template, status), answer in kinds.items():  # held to GitHub's own schema
            validate(method, template, status, answer)
    finally:
        emulator.stop()


def test_reconcile_command_on_github(world: World, tmp_path: Path) -> None:
    """`wheelpin reconcile --platform github`: the config is read from the repository on
    GitHub, builds run on Actions, a build command is never run on the bot's host."""
    from tests.fixtures.github.emulator import GitHubEmulator

    world.set_config('repo = "../upstream"', f'repo = "file://{world.upstream}"')
    world.set_config('"oci:../images"', f'"oci:{world.root / "images"}"')
    emulator = GitHubEmulator(tmp_path / "github", tokens={"ghs_cli"})
    try:
        emulator.create_repo("rocm", "atom", world.downstream)
        env = {**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "ghs_cli"}
        world.commit_upstream("one", NEW_VERSION)
        args = ["reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", "--json"]
        refused = wheelpin(*args, env=env)
        assert refused.code == 1 and "build.command is not run for a repository on GitHub" in refused.stdout
        assert wheelpin("reconcile", "--once", "--platform", "github", env=env).code == 2  # no --github-repo
        no_token = wheelpin(*args, env={**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url})
        assert no_token.code == 2 and "WHEELPIN_GITHUB_TOKEN" in no_token.stderr
        assert not any(r.workflow for r in emulator.repos[("rocm", "atom")].runs.values())
        # with a workflow build: dispatched, then fetched, verified, published, proposed
        world.set_config('build = { command = [', 'build = { workflow = "w.yaml", inputs = { c = "{sha}" } }\n# was: [')
        repo = emulator.create_repo("rocm", "atom2", world.downstream)

        def actions(repo, run):  # type: ignore[no-untyped-def]
            checkout = tmp_path / "runner"
            git(["clone", "--quiet", str(world.upstream), str(checkout)])
            git(["checkout", "--quiet", run.inputs["c"]], cwd=checkout)
            subprocess.run(["python3", "build_wheel.py", str(tmp_path)], cwd=checkout, check=True,
                           env={"WHEELPIN_SHA8": run.inputs["c"][:8], "PATH": "/usr/bin:/bin"})
            return {p.name: p.read_bytes() for p in tmp_path.glob("*.whl")}

        emulator.actions = actions
        args[args.index("rocm/atom")] = "rocm/atom2"
        first = wheelpin(*args, env=env)
        assert first.code == 0, first.stdout + first.stderr
        second = wheelpin(*args, env=env)
        assert second.code == 0, second.stdout + second.stderr
        assert [a["kind"] for a in component(second)["actions"]] == ["fetch", "publish", "propose"]
        (pull,) = repo.pulls.values()
        assert pull.draft and "<!-- wheelpin: " in pull.body
    finally:
        emulator.stop()


def test_a_declined_pull_request_skips_that_commit_only(world: World, tmp_path: Path) -> None:
    from bot.adapters.github import GitHubPlatform
    from bot.app.reconciler import Reconciler
    from bot.app.wiring import Registries
    from bot.core.configfile import load_config
    from tests.fixtures.github.emulator import GitHubEmulator

    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
        platform = GitHubPlatform(api_url=emulator.url, token="t", owner="rocm", repo="atom",
                                  author=loaded.config.defaults.author)
        settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
        reconciler = Reconciler(loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir)
        world.commit_upstream("one", NEW_VERSION)
        reconciler.run()
        (pull,) = repo.pulls.values()
        pull.state = "closed"  # a maintainer declines it, and deletes the branch
        git(["update-ref", "-d", "refs/heads/wheelpin/demo-cache"], cwd=repo.path)
        again = reconciler.run().components[0]
        assert again.status == "nothing" and len(repo.pulls) == 1  # that commit is skipped
        newer = world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        assert reconciler.run().components[0].status == "done"  # a later one is proposed
        assert len(repo.pulls) == 2 and newer[:8] in repo.pulls[2].title and repo.pulls[2].state == "open"
    finally:
        emulator.stop()


def test_an_image_the_workflow_pushes_is_adopted(world: World, tmp_path: Path) -> None:
    """ATOM's workflow pushes the image itself: the bot dispatches, then finds the image by
    its tag, verifies the wheel inside, and proposes it — it never pushes."""
    from bot.adapters.actions import ActionsBuilder
    from bot.adapters.github import GitHubPlatform
    from bot.adapters.imagestore import LayoutStore
    from bot.adapters.publisher import publish
    from bot.app.reconciler import Reconciler
    from bot.app.wiring import Registries
    from bot.core.configfile import load_config
    from bot.core.inspect import inspect_wheel
    from tests.fixtures.github.emulator import GitHubEmulator

    world.set_config('build = { command = [',
                     'build = { workflow = "w.yaml", inputs = { c = "{sha}", publish = "true" }, publishes_image = true }\n# was: [')
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    pushed: list[str] = []

    def workflow(repo, run):  # type: ignore[no-untyped-def]
        commit = run.inputs["c"]
        checkout = tmp_path / "runner"
        git(["clone", "--quiet", str(world.upstream), str(checkout)])
        git(["checkout", "--quiet", commit], cwd=checkout)
        out = tmp_path / "out"
        out.mkdir()
        subprocess.run(["python3", "build_wheel.py", str(out)], cwd=checkout, check=True,
                       env={"WHEELPIN_SHA8": commit[:8], "PATH": "/usr/bin:/bin"})
        wheels = sorted(out.glob("*.whl"))
        reports = [inspect_wheel(w) for w in wheels]
        result = publish(LayoutStore(world.root / "images"), f"demo-cache-v0.1.1-g{commit[:8]}", wheels, reports)
        pushed.append(result.digest)
        return {}  # no artifact: the image is the build

    emulator.actions = workflow
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
        platform = GitHubPlatform(api_url=emulator.url, token="t", owner="rocm", repo="atom",
                                  author=loaded.config.defaults.author)
        settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
        reconciler = Reconciler(loaded, platform=platform, registries=Registries(settings),
                                cache=settings.cache_dir, actions=ActionsBuilder(platform), local_builds=False)
        world.commit_upstream("one", NEW_VERSION)
        first = reconciler.run().components[0]
        assert [a.kind for a in first.actions] == ["build", "wait"]
        second = reconciler.run().components[0]
        assert [a.kind for a in second.actions] == ["propose"], second.to_json()
        (pull,) = repo.pulls.values()
        assert pushed and pushed[0] in pull.body  # the workflow's own image, adopted
        assert len(world.layout_tags()) == 2  # the first pin's and the workflow's: the bot pushed nothing
        assert not (Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds").exists() or not any(
            (Path(world.env["WHEELPIN_CACHE_DIR"]) / "builds").rglob("*.whl"))
    finally:
        emulator.stop()


def test_github_merged_superseded_and_human_edits(world: World, tmp_path: Path) -> None:
    from bot.adapters.github import GitHubPlatform
    from bot.app.reconciler import Reconciler
    from bot.app.wiring import Registries
    from bot.core.configfile import load_config
    from tests.fixtures.github.emulator import GitHubEmulator

    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        loaded = load_config(world.downstream / "wheelpin.toml", root=world.downstream)
        platform = GitHubPlatform(api_url=emulator.url, token="t", owner="rocm", repo="atom",
                                  author=loaded.config.defaults.author)
        settings = Settings(cache_dir=Path(world.env["WHEELPIN_CACHE_DIR"]))
        reconciler = Reconciler(loaded, platform=platform, registries=Registries(settings), cache=settings.cache_dir)
        world.commit_upstream("one", NEW_VERSION)
        reconciler.run()
        # a human pushes to the bot's branch: left alone, and said so
        branch = git(["rev-parse", "refs/heads/wheelpin/demo-cache"], cwd=repo.path).strip()
        tree = git(["rev-parse", f"{branch}^{{tree}}"], cwd=repo.path).strip()
        human = git(["commit-tree", tree, "-p", branch, "-m", "tweak"], cwd=repo.path, env=HUMAN).strip()
        git(["update-ref", "refs/heads/wheelpin/demo-cache", human], cwd=repo.path)
        world.commit_upstream("two", {"VERSION": "0.1.2\n"})
        touched = reconciler.run().components[0]
        assert touched.status == "left-alone" and "did not make" in touched.messages[0]
        assert git(["rev-parse", "refs/heads/wheelpin/demo-cache"], cwd=repo.path).strip() == human
        # the maintainer drops the human commit; the bot updates, then the PR is merged
        git(["update-ref", "refs/heads/wheelpin/demo-cache", branch], cwd=repo.path)
        assert reconciler.run().components[0].status == "done"
        (pull,) = repo.pulls.values()
        head = git(["rev-parse", "refs/heads/wheelpin/demo-cache"], cwd=repo.path).strip()
        git(["update-ref", "refs/heads/main", head], cwd=repo.path)  # merged (fast-forward)
        pull.state, pull.merged = "closed", True
        after = reconciler.run().components[0]
        assert [a.kind for a in after.actions] == ["close"]  # the branch is tidied away
        assert git(["rev-parse", "--verify", "--quiet", "refs/heads/wheelpin/demo-cache"], cwd=repo.path,
                   check=False).strip() == ""
        assert reconciler.run().components[0].status == "nothing"  # merged: a no-op from now on
        assert git(["tag"], cwd=repo.path) == ""  # and never a tag
    finally:
        emulator.stop()


@pytest.mark.parametrize("crash_after", [1, 2, 3, 4])
def test_killed_between_actions_on_github_converges(world: World, tmp_path: Path, crash_after: int) -> None:
    """`wheelpin reconcile --platform github` killed after each action in turn: the next
    passes converge to one run, one image, one branch, one pull request."""
    from tests.fixtures.github.emulator import GitHubEmulator

    world.set_config('repo = "../upstream"', f'repo = "file://{world.upstream}"')
    world.set_config('"oci:../images"', f'"oci:{world.root / "images"}"')
    world.set_config('build = { command = [', 'build = { workflow = "w.yaml", inputs = { c = "{sha}" } }\n# was: [')
    emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})

    def actions(repo, run):  # type: ignore[no-untyped-def]
        checkout = tmp_path / f"runner-{run.id}"
        git(["clone", "--quiet", str(world.upstream), str(checkout)])
        git(["checkout", "--quiet", run.inputs["c"]], cwd=checkout)
        out = tmp_path / f"out-{run.id}"
        out.mkdir()
        subprocess.run(["python3", "build_wheel.py", str(out)], cwd=checkout, check=True,
                       env={"WHEELPIN_SHA8": run.inputs["c"][:8], "PATH": "/usr/bin:/bin"})
        return {p.name: p.read_bytes() for p in out.glob("*.whl")}

    emulator.actions = actions
    try:
        repo = emulator.create_repo("rocm", "atom", world.downstream)
        env = {**world.env, "WHEELPIN_GITHUB_API_URL": emulator.url, "WHEELPIN_GITHUB_TOKEN": "t"}
        head = world.commit_upstream("one", NEW_VERSION)
        args = ["reconcile", "--once", "--platform", "github", "--github-repo", "rocm/atom", "--json"]
        killed = wheelpin(*args, env={**env, "WHEELPIN_CRASH_AFTER_ACTIONS": str(crash_after)})
        assert killed.code in (0, 70), killed.stderr
        for _ in range(4):
            result = wheelpin(*args, env=env)
            assert result.code == 0, result.stdout + result.stderr
        assert component(result)["status"] == "nothing"
        assert len(repo.runs) == 1  # built once
        assert [t for t in world.layout_tags() if head[:8] in t] == [f"demo-cache-v0.1.1-g{head[:8]}"]
        (pull,) = repo.pulls.values()
        assert head[:8] in pull.title and pull.state == "open"
        assert len(git(["log", "--format=%H", "main..wheelpin/demo-cache"], cwd=repo.path).split()) == 1
    finally:
        emulator.stop()

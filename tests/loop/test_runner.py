"""The loop in-process, on the in-memory fakes (tests/fixtures/fakes.py): every decision
the planner makes, as a user meets it, in milliseconds. The real upstream is a git
repository; the wheels are real wheels, verified and published as they would be. The
subprocess and real-server end-to-end tests (tests/app/) cover the same ground with the
real platforms, registries and builders."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.git import git
from bot.adapters.publisher import publish
from bot.commands.demo import DOCKERFILE, PEOPLE
from bot.commands.reconcile_cmd import exit_code, pass_text
from bot.core.config.load import load_config_text
from bot.core.errors import RuleRefused
from bot.core.wheel.report import inspect_wheel
from bot.loop.preview import ComponentPlan
from bot.loop.results import PassResult
from bot.loop.runner import Reconciler
from tests.fixtures.dryreal import Proposal, predicted
from tests.fixtures.fakes import MemoryPlatform, MemoryStore, MemoryStores, ScriptedBuilder
from tests.fixtures.wheels import build_wheel

REPOSITORY = "registry.test/rocm/demo-cache"
BRANCH = "wheelpin/demo-cache"
CONFIG = """\
[defaults]
base_branch = "main"
labels = ["wheelpin"]
quiet_minutes = {quiet}

[[component]]
name = "demo-cache"
upstream = {{ repo = "{upstream}", branch = "main" }}
wheel = {{ distribution = "demo-cache" }}
build = {{ command = ["true"] }}
image = {{ repository = "{repository}", tag = "demo-cache-v{{version_base}}-g{{sha8}}" }}
constraints = ["numpy==2.3.5"]
pins = [{{ file = "docker/Dockerfile", image_arg = "DEMO_WHEEL_IMAGE", sha256_arg = "DEMO_WHEEL_SHA256" }}]
"""


@dataclass
class Loop:
    tmp: Path
    upstream: Path
    platform: MemoryPlatform
    stores: MemoryStores
    builder: ScriptedBuilder
    reconciler: Reconciler
    versions: dict[str, tuple[str, list[str]]]  # commit → version, Requires-Dist

    @property
    def store(self) -> MemoryStore:
        return self.stores.stores[REPOSITORY]

    def commit(self, version: str, requires: list[str] | None = None) -> str:
        (self.upstream / "VERSION").write_text(version + "\n")
        git(["commit", "--quiet", "-am", f"version {version}"], cwd=self.upstream, env=PEOPLE)
        head = git(["rev-parse", "HEAD"], cwd=self.upstream).strip()
        self.versions[head] = (version, requires or ["numpy>=2.3"])
        return head

    def wheels(self, commit: str) -> list[Path]:
        version, requires = self.versions[commit]
        out = self.tmp / "built" / commit
        return [
            build_wheel(
                out,
                name="demo-cache",
                version=f"{version}+g{commit[:8]}.rocm7.2.4",
                files={"demo_cache/__init__.py": b"x = 1\n"},
                requires_dist=requires,
            )
        ]

    def run(self, **options: bool) -> PassResult:
        """A pass; unless it is a dry run itself, a dry run first, which must write nothing
        and predict what the pass did (tests/fixtures/dryreal.py)."""
        if options.get("dry_run"):
            return self.reconciler.run(**options)
        writes, tags, started = self.platform.writes, dict(self.store.tags), list(self.builder.started)
        dry = self.reconciler.run(dry_run=True, **options)
        assert (self.platform.writes, self.store.tags, self.builder.started) == (writes, tags, started)
        existed = BRANCH in self.platform.proposals
        real = self.reconciler.run(**options)
        predicted(
            dry.to_json(),
            real.to_json(),
            dry_exit=exit_code(dry),
            real_exit=exit_code(real),
            proposal=self.proposal(existed),
        )
        return real

    def proposal(self, existed: bool) -> Proposal:
        def title() -> str | None:
            return next((p.title for p in self.platform.proposals.values()), None)

        return Proposal(existed, title=title, file=self.branch_text)

    def branch_text(self, path: str) -> str | None:
        tip = self.platform.refs.get(f"refs/heads/{BRANCH}")
        return None if tip is None else self.platform.commits[tip][1].get(path)

    def branch_file(self) -> str:
        tip = self.platform.refs[f"refs/heads/{BRANCH}"]
        return self.platform.commits[tip][1]["docker/Dockerfile"]


def kinds(result: PassResult) -> list[str]:
    return [action.kind.value for action in result.components[0].actions]


def make_loop(
    tmp: Path, *, quiet: int = 0, builder: ScriptedBuilder | None = None, edit: tuple[str, str] = ("", "")
) -> Loop:
    upstream = tmp / "upstream"
    upstream.mkdir()
    git(["init", "--quiet", "-b", "main"], cwd=upstream)
    (upstream / "VERSION").write_text("0.1.0\n")
    git(["add", "-A"], cwd=upstream)
    git(["commit", "--quiet", "-m", "first"], cwd=upstream, env=PEOPLE)
    first = git(["rev-parse", "HEAD"], cwd=upstream).strip()
    stores = MemoryStores()
    loaded = load_config_text(
        CONFIG.format(quiet=quiet, upstream=upstream, repository=REPOSITORY).replace(*edit),
        path=tmp / "wheelpin.toml",
        root=tmp,
        exists=None,
    )
    component = loaded.config.components[0]
    from bot.core.image.reference import ImageRef

    store = stores.store(ImageRef.parse(REPOSITORY))
    loop = Loop(
        tmp,
        upstream,
        MemoryPlatform({}, author=loaded.config.defaults.author),
        stores,
        builder or ScriptedBuilder(lambda c: []),
        None,
        {first: ("0.1.0", ["numpy>=2.3"])},
    )  # type: ignore[arg-type]
    (wheel,) = loop.wheels(first)
    report = inspect_wheel(wheel)
    tag = f"demo-cache-v0.1.0-g{first[:8]}"
    pinned = publish(
        store, tag, [wheel], [report], source=str(upstream), revision=first, component=component.name, settle=0.0
    )
    loop.platform = MemoryPlatform(
        {"docker/Dockerfile": DOCKERFILE.format(image=f"{REPOSITORY}:{tag}@{pinned.digest}", sha256=report.sha256)},
        author=loaded.config.defaults.author,
    )
    if builder is None:
        loop.builder = ScriptedBuilder(loop.wheels)
    else:
        builder.make = loop.wheels
    loop.reconciler = Reconciler(
        loaded,
        platform=loop.platform,
        registries=stores,
        cache=tmp / "cache",
        builder_for=lambda _component, _upstream: loop.builder,
        settle=0.0,
    )
    return loop


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Loop]:
    made = make_loop(tmp_path)
    yield made
    made.reconciler.state.close()


def test_a_new_commit_is_built_published_and_proposed_once(loop: Loop) -> None:
    head = loop.commit("0.1.1")
    first = loop.run()
    assert kinds(first) == ["build", "publish", "propose"] and first.components[0].status == "done"
    assert f"demo-cache-v0.1.1-g{head[:8]}" in loop.store.tags
    (proposal,) = loop.platform.proposals.values()
    assert head[:8] in proposal.title and proposal.labels == ["wheelpin"]
    assert f"g{head[:8]}@sha256:" in loop.branch_file()
    writes = loop.platform.writes
    again = loop.run()
    assert kinds(again) == [] and again.components[0].status == "nothing"
    assert loop.platform.writes == writes and loop.builder.started == [head]


def test_a_newer_commit_updates_the_same_proposal(loop: Loop) -> None:
    loop.commit("0.1.1")
    loop.run()
    head = loop.commit("0.1.2", ["numpy<=2.2.6"])
    assert kinds(loop.run()) == ["build", "publish", "propose"]
    (proposal,) = loop.platform.proposals.values()
    assert head[:8] in proposal.title and "numpy<=2.2.6" in proposal.body and "CONFLICTS" in proposal.body
    assert len(loop.platform.branch_commits(BRANCH, loop.platform.refs["refs/heads/main"])) == 1


def test_a_base_that_caught_up_closes_the_proposal(loop: Loop) -> None:
    loop.commit("0.1.1")
    loop.run()
    loop.platform.push_base({"docker/Dockerfile": loop.branch_file()})  # a human merged it by hand
    assert kinds(loop.run()) == ["close"]
    assert loop.platform.proposals == {} and f"refs/heads/{BRANCH}" not in loop.platform.refs


def test_a_branch_a_human_wrote_to_is_left_alone_and_said_once(loop: Loop) -> None:
    loop.commit("0.1.1")
    loop.run()
    loop.platform.push_branch(BRANCH, {"README.md": "mine\n"})
    loop.commit("0.1.2")
    for _ in range(2):
        result = loop.run()
        assert kinds(result) == ["comment", "report"] and result.components[0].status == "left-alone"
    (proposal,) = loop.platform.proposals.values()
    assert len(proposal.comments) == 1 and "leaves this branch alone" in proposal.comments[0]
    assert kinds(loop.run(rebase=True)) == ["build", "publish", "propose"]  # `/wheelpin rebase`


def test_a_failed_build_backs_off_and_a_retry_is_asked(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, builder=ScriptedBuilder(lambda c: [], fails=lambda c: "build of it failed (exit 2)"))
    head = loop.commit("0.1.1")
    failed = loop.run()
    assert kinds(failed) == ["build"] and failed.components[0].status == "failed"
    held = loop.run()
    assert kinds(held) == ["report"] and "exit 2" in held.components[0].messages[-1]
    assert loop.builder.started == [head]  # not built again within its backoff
    assert kinds(loop.run(recheck=True)) == ["build"] and loop.builder.started == [head, head]


def test_a_build_on_actions_is_waited_for_then_fetched(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, builder=ScriptedBuilder(lambda c: [], asynchronous=True))
    head = loop.commit("0.1.1")
    dispatched = loop.run()
    assert kinds(dispatched) == ["build", "wait"] and dispatched.components[0].status == "waiting"
    assert kinds(loop.run()) == ["wait"]
    loop.builder.finish(head)
    assert kinds(loop.run()) == ["fetch", "publish", "propose"]
    assert loop.builder.started == [head]
    assert loop.builder.collected == [head]  # fetched once: publishing takes the wheels the fetch handed it


def test_a_failed_run_is_recorded_once_and_backs_off(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, builder=ScriptedBuilder(lambda c: [], asynchronous=True))
    head = loop.commit("0.1.1")
    loop.run()
    loop.builder.finish(head, ok=False)
    planned = loop.run(dry_run=True)  # the pass writes the failure to its state file first: said
    assert pass_text(planned).startswith("demo-cache: would record the failure, and fail (refused below)\n")
    assert kinds(loop.run()) == ["record", "report"]
    failure = loop.reconciler.state.failure("demo-cache", head)
    assert failure is not None and failure.attempts == 1
    assert kinds(loop.run()) == ["report"] and loop.builder.started == [head]


def test_a_dry_run_prints_the_whole_plan_and_writes_nothing(loop: Loop) -> None:
    loop.commit("0.1.1")
    tags = dict(loop.store.tags)
    planned = loop.run(dry_run=True)
    assert kinds(planned) == ["build", "publish", "propose"] and planned.components[0].status == "planned"
    assert loop.store.tags == tags and loop.platform.writes == 0 and loop.builder.started == []
    assert not (loop.tmp / "cache" / "state.sqlite").exists()


def test_a_refused_write_is_not_made_again_until_asked(loop: Loop) -> None:
    loop.commit("0.1.1")
    loop.platform.refusal = RuleRefused("GitHub refused writing wheelpin/demo-cache: a ruleset forbids it")
    refused = loop.run()
    assert kinds(refused) == ["build", "publish", "propose"] and refused.components[0].error_kind == "refused"
    held = loop.run()
    assert kinds(held) == ["report"] and "not tried again before" in held.components[0].messages[-1]
    loop.platform.refusal = None
    assert kinds(loop.run(recheck=True)) == ["propose"]


def test_a_quiet_period_waits_for_the_commit_to_settle(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, quiet=60)
    loop.commit("0.1.1")
    result = loop.run()
    assert kinds(result) == ["wait"] and "quiet period (0 of 60 minutes)" in result.components[0].messages[-1]
    action = result.components[0].actions[0]
    assert action.to_json()["until"] is not None and loop.builder.started == []


def test_an_image_someone_else_pushed_is_verified_then_proposed(loop: Loop) -> None:
    head = loop.commit("0.1.1")
    (wheel,) = loop.wheels(head)
    publish(loop.store, f"demo-cache-v0.1.1-g{head[:8]}", [wheel], [inspect_wheel(wheel)], settle=0.0)  # no annotations
    assert kinds(loop.run()) == ["adopt", "propose"] and loop.builder.started == []


def test_a_declined_commit_is_not_proposed_again(loop: Loop) -> None:
    loop.commit("0.1.1")
    loop.run()
    loop.reconciler.skip(loop.reconciler.config.components[0], by="maintainer")
    assert loop.platform.proposals == {} and kinds(loop.run()) == []
    loop.commit("0.1.2")
    assert kinds(loop.run()) == ["build", "publish", "propose"]  # a newer one is


# -- the dry run's plan (docs/dry-run.md); every pass above is also run dry first, by Loop.run --


def plan_of(result: PassResult) -> ComponentPlan:
    plan = result.components[0].plan
    assert plan is not None
    return plan


def test_the_plan_says_the_pin_the_commits_the_build_the_image_the_edits_and_the_title(loop: Loop) -> None:
    pinned_commit = git(["rev-parse", "HEAD"], cwd=loop.upstream).strip()
    middle = loop.commit("0.1.1")
    head = loop.commit("0.1.2")
    planned = loop.run(dry_run=True)
    plan = plan_of(planned)
    assert plan.pinned.version == f"0.1.0+g{pinned_commit[:8]}.rocm7.2.4" and plan.pinned.commit == pinned_commit
    assert plan.head == head and [c.sha for c in plan.commits] == [head, middle]
    assert plan.build is not None and plan.build.runs == f"the scripted build of {head[:8]}"
    assert plan.image == f"{REPOSITORY}:demo-cache-v{{version_base}}-g{head[:8]}@{{digest}}"
    assert [(e.file, e.line, e.new) for e in plan.edits] == [
        ("docker/Dockerfile", 2, f"{REPOSITORY}:demo-cache-v{{version_base}}-g{head[:8]}@{{digest}}"),
        ("docker/Dockerfile", 3, "{sha256}"),
    ]
    assert plan.title == f"Bump demo-cache to {{version}} ({head[:8]})" and plan.proposal == "create"
    assert plan.after_build is not None and plan.after_build.startswith("checked after the build: ")
    assert not plan.fails and exit_code(planned) == 0
    text = pass_text(planned)
    assert f"  commits: 2 commits after the pinned one, newest first\n    {head[:8]} version 0.1.2\n" in text
    assert (
        "  known after the build: {digest} (the image's digest, once published), {sha256} (the wheel's sha256)" in text
    )
    assert f"  proposal: creates {BRANCH}: Bump demo-cache to {{version}} ({head[:8]})" in text


def test_the_plan_of_an_image_already_pushed_is_exact(loop: Loop) -> None:
    head = loop.commit("0.1.1")
    (wheel,) = loop.wheels(head)
    tag = f"demo-cache-v0.1.1-g{head[:8]}"
    pushed = publish(loop.store, tag, [wheel], [inspect_wheel(wheel)], settle=0.0)
    plan = plan_of(loop.run(dry_run=True))
    assert plan.build is None and plan.build_said.startswith("image found, adopted")
    assert plan.image == f"{REPOSITORY}:{tag}@{pushed.digest}"
    assert [e.new for e in plan.edits] == [plan.image, inspect_wheel(wheel).sha256]
    assert plan.title == f"Bump demo-cache to 0.1.1+g{head[:8]}.rocm7.2.4 ({head[:8]})"
    assert plan.after_build is not None and plan.after_build.startswith("checked when its wheels are fetched: ")
    assert kinds(loop.run()) == ["adopt", "propose"]  # and the pass did just that (Loop.run compares)


def test_a_pin_in_another_repository_is_refused_by_the_plan_before_any_build(loop: Loop) -> None:
    """The real pass builds and publishes, then refuses the proposal; the plan says so
    before the build, and exits 1 as the pass does."""
    text = loop.platform.commits[loop.platform.refs["refs/heads/main"]][1]["docker/Dockerfile"]
    loop.platform.push_base({"docker/Dockerfile": text.replace(REPOSITORY, "registry.test/other/demo-cache")})
    loop.commit("0.1.1")
    planned = loop.run(dry_run=True)
    plan = plan_of(planned)
    assert plan.pinned.why is not None and plan.pinned.why.startswith("not read: ")
    assert plan.fails_at == "propose" and plan.error_kind == "usage" and exit_code(planned) == 1
    (refusal,) = plan.refusals
    assert "but docker/Dockerfile:2 pins registry.test/other/demo-cache" in refusal
    assert pass_text(planned).startswith(
        "demo-cache: would build, publish, propose, and fail at propose (refused below)\n"
    )
    done = loop.run()
    assert kinds(done) == ["build", "publish", "propose"] and done.components[0].error_kind == "usage"
    listed = [line for line in pass_text(done).splitlines() if line.startswith("  ") and line[2:4] not in ("- ", "! ")]
    assert [line.split()[0] for line in listed] == ["build", "publish", "propose"]
    assert "  ! the pinned digest is not in the registry (404): registry.test/other/demo-cache:" in pass_text(done)
    assert [line.endswith(" (failed)") for line in listed] == [False, False, True]  # tried, not done
    assert done.to_json()["components"][0]["failed_at"] == "propose"


def test_the_plan_says_when_a_failed_build_is_tried_again(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, builder=ScriptedBuilder(lambda c: [], fails=lambda c: "build of it failed (exit 2)"))
    loop.commit("0.1.1")
    loop.run()
    planned = loop.run(dry_run=True)
    plan = plan_of(planned)
    (refusal,) = plan.refusals
    assert pass_text(planned).startswith("demo-cache: would fail (refused below)\n")  # a recorded failure, said
    assert refusal.startswith("build of it failed (exit 2) (recorded: tried again after 20")
    assert refusal.endswith("UTC, or now with `--retry-failed`)") and plan.error_kind == "reported"
    loop.reconciler.state.close()


def test_the_plan_says_until_when_a_quiet_period_lasts(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, quiet=60)
    loop.commit("0.1.1")
    plan = plan_of(loop.run(dry_run=True))
    assert plan.waits is not None and plan.waits.startswith("in its quiet period (0 of 60 minutes), until 20")
    assert plan.build is None and not plan.fails
    loop.reconciler.state.close()


def test_a_plan_that_did_not_predict_the_pass_is_caught(loop: Loop) -> None:
    """The comparison every pass above goes through fails when the plan is wrong."""
    loop.commit("0.1.1")
    dry = loop.reconciler.run(dry_run=True).to_json()
    real = loop.reconciler.run().to_json()
    predicted(dry, real, dry_exit=0, real_exit=0, proposal=loop.proposal(False))  # as it is: predicted

    def broken(change: Callable[[dict[str, Any]], None], real_exit: int = 0) -> None:
        wrong = copy.deepcopy(dry)
        change(wrong["components"][0])
        with pytest.raises(AssertionError):
            predicted(wrong, real, dry_exit=0, real_exit=real_exit, proposal=loop.proposal(False))

    broken(lambda c: c["actions"].pop())  # no proposal planned
    broken(lambda c: c["plan"].update(title="Bump demo-cache to {version} (00000000)"))
    broken(lambda c: c["plan"].update(image=c["plan"]["image"].replace("demo-cache-v", "other-v")))
    broken(lambda c: c["plan"]["edits"][0].update(line=1))
    broken(lambda c: c["plan"].update(proposal="update"))
    broken(lambda c: c["plan"].update(fails=True, fails_at="propose", error_kind="usage"))
    broken(lambda c: None, real_exit=1)


def test_a_constraints_file_missing_on_the_base_is_refused_by_the_plan(tmp_path: Path) -> None:
    """The proposal reads it from the base, after the build and the publishing: the plan
    says so before."""
    loop = make_loop(tmp_path, edit=('constraints = ["numpy==2.3.5"]', 'constraints_file = "constraints.txt"'))
    loop.commit("0.1.1")
    plan = plan_of(loop.run(dry_run=True))
    assert plan.fails_at == "propose" and plan.refusals == ["constraints.txt does not exist on the base branch"]
    done = loop.run()
    assert kinds(done) == ["build", "publish", "propose"] and done.components[0].status == "failed"
    loop.reconciler.state.close()

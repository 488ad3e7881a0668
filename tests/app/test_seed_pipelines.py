"""The three seed pipelines end to end, each on the local platform and on the
GitHub emulator, with the real registry and real PyPI wheels repackaged to fit the
upstream's commits (tests/fixtures/seedwheels.py): ATOM's LMCache (its workflow pushes
the image itself: adopted), vLLM's LMCache (gfx90a wanted where present) and Mooncake
(four python tags, a smoke test). Each starts from the config under `config/`, pins an
image published by hand, meets a commit whose build must be refused, then proposes the
next one with a body that says what changed from what is pinned today."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.version import Version

from bot.adapters.configdisk import load_config
from bot.adapters.git import git
from bot.adapters.github import GitHubPlatform
from bot.adapters.github.actions import ActionsClient
from bot.adapters.imagestore import RegistryRepository
from bot.adapters.publisher import publish
from bot.adapters.registry import RegistryClient
from bot.app.settings import Settings
from bot.app.wiring import Registries
from bot.commands.demo import PEOPLE
from bot.core.wheel.report import inspect_wheel
from bot.loop.runner import Reconciler
from tests.app.worlds import HUMAN
from tests.cli import wheelpin
from tests.conftest import HipArtifacts
from tests.fixtures import seedwheels
from tests.fixtures.consumerimages import ConsumerImages
from tests.fixtures.foreignpush import push_foreign
from tests.fixtures.github.emulator import GitHubEmulator
from tests.fixtures.github.openapi import validate_recorded
from tests.fixtures.hip import link_shared
from tests.fixtures.servers import Registry

CONFIGS = Path(__file__).parent.parent.parent / "config"
BUILD_SCRIPT = """import shutil, sys, pathlib
built = pathlib.Path(__file__).parent / "builds" / sys.argv[1]
if not built.is_dir():
    sys.exit(f"no build of {sys.argv[1]}")
for wheel in built.glob("*.whl"):
    shutil.copy(wheel, sys.argv[2])
"""


@dataclass
class Seed:
    """One seed pipeline's world: its upstream, its downstream made from `config/<folder>`,
    and the wheels each upstream commit's build yields (`builds/<sha>/`)."""

    root: Path
    component: str
    repository: str  # host/path of the image repository
    platform: str
    upstream: Path = field(init=False)
    downstream: Path = field(init=False)

    def __post_init__(self) -> None:
        self.upstream, self.downstream = self.root / "upstream", self.root / "downstream"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    def commit(self, message: str) -> str:
        (self.upstream / "CHANGES").open("a").write(message + "\n")
        git(["add", "-A"], cwd=self.upstream)
        git(["commit", "--quiet", "-m", message], cwd=self.upstream, env=PEOPLE)
        return git(["rev-parse", "HEAD"], cwd=self.upstream).strip()

    def builds(self, commit: str) -> Path:
        folder = self.root / "builds" / commit
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def store(self) -> RegistryRepository:
        host, _, path = self.repository.partition("/")
        return RegistryRepository(RegistryClient(host), path)

    def publish_by_hand(self, tag: str, commit: str) -> str:
        wheels = sorted(self.builds(commit).glob("*.whl"))
        result = publish(
            self.store(),
            tag,
            wheels,
            [inspect_wheel(w) for w in wheels],
            source="../upstream",
            revision=commit,
            component=self.component,
            settle=0,
        )
        return f"{self.repository}:{tag}@{result.digest}"


def make_seed(
    tmp_path: Path,
    registry: Registry,
    folder: str,
    component: str,
    platform: str,
    edit: Callable[[str], str] = lambda text: text,
) -> Seed:
    path = re.sub(r"[^a-z0-9]+", "-", tmp_path.name.lower()).strip("-")[:40]
    seed = Seed(tmp_path / "seed", component, f"{registry.host}/{path}/rocm/atom-dev", platform)
    seed.upstream.mkdir(parents=True)
    shutil.copytree(CONFIGS / folder, seed.downstream)
    (seed.root / "build.py").write_text(BUILD_SCRIPT)
    config = seed.downstream / ".github" / "wheelpin.toml"
    text = config.read_text()
    followed = re.search(r'upstream = \{[^}]*\bbranch = "([^"]+)"', text)  # LMCache's dev, Mooncake's main
    git(["init", "--quiet", "-b", followed.group(1) if followed else "main"], cwd=seed.upstream)
    text = re.sub(r'repo = "https://github.com/[^"]+"', 'repo = "../upstream"', text)
    text = text.replace("docker.io/rocm/atom-dev", seed.repository).replace("quiet_minutes = 30", "quiet_minutes = 0")
    if platform == "local":  # the build: what a CI runner would have built for the commit
        command = f'build = {{ command = ["{sys.executable}", "{seed.root / "build.py"}", "{{sha}}", "{{out}}"] }}'
        text = re.sub(r"^build = \{.*\}$", command, text, flags=re.M)
    config.write_text(edit(text))
    for dockerfile in (seed.downstream / "docker").iterdir():
        dockerfile.write_text(dockerfile.read_text().replace("rocm/atom-dev:", f"{seed.repository}:"))
    git(["init", "--quiet", "-b", "main"], cwd=seed.downstream)
    git(["add", "-A"], cwd=seed.downstream)
    git(["commit", "--quiet", "-m", "The image as its maintainers keep it"], cwd=seed.downstream, env=HUMAN)
    return seed


def pin_by_hand(seed: Seed, image: str) -> None:
    """What the maintainer did before wheelpin: bump the pins to the image pinned today."""
    bumped = wheelpin("pins", "bump", "--repo", str(seed.downstream), "--component", seed.component, "--image", image)
    assert bumped.code == 0, bumped.stdout + bumped.stderr
    git(["commit", "--quiet", "-am", "Pin by hand"], cwd=seed.downstream, env=HUMAN)


@dataclass
class Pass:
    code: int
    component: dict  # type: ignore[type-arg]
    body: str | None  # the proposal's body (on the local platform, its commit message)


class Driver:
    """Runs passes on the seed's platform: `wheelpin reconcile` on the local one; on the
    emulator, a reconciler on the GitHub platform whose Actions runs `play` the build."""

    def __init__(
        self, seed: Seed, tmp_path: Path, play: Callable[[str], dict[str, bytes]] | None = None, **switches: object
    ) -> None:
        self.seed = seed
        self.emulator: GitHubEmulator | None = None
        if seed.platform == "github":
            self.emulator = GitHubEmulator(tmp_path / "github", tokens={"t"})
            for switch, value in switches.items():
                setattr(self.emulator, switch, value)
            self.emulator.actions = lambda repo, run: play(next(iter(run.inputs.values())))  # type: ignore[misc]
            self.repo = self.emulator.create_repo("rocm", "atom", seed.downstream)
            loaded = load_config(seed.downstream / ".github" / "wheelpin.toml", root=seed.downstream)
            platform = GitHubPlatform(
                api_url=self.emulator.url, token="t", owner="rocm", repo="atom", author=loaded.config.defaults.author
            )
            settings = Settings(cache_dir=seed.cache)
            self.reconciler = Reconciler(
                loaded,
                platform=platform,
                registries=Registries(settings),
                cache=seed.cache,
                actions=ActionsClient(platform),
                local_commands=False,
                settle=0,
            )

    def run(self) -> Pass:
        branch = f"wheelpin/{self.seed.component}"
        if self.emulator is None:
            # the runner's build script and its builds, beside the seed: shown to the sandboxed build
            shown = f"{self.seed.root / 'build.py'}:{self.seed.root / 'builds'}"
            result = wheelpin(
                "reconcile",
                "--once",
                "--repo",
                str(self.seed.downstream),
                "--json",
                env={"WHEELPIN_CACHE_DIR": str(self.seed.cache), "WHEELPIN_SANDBOX_READ": shown},
            )
            found = git(
                ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], cwd=self.seed.downstream, check=False
            ).strip()
            body = git(["log", "-1", "--format=%B", found], cwd=self.seed.downstream) if found else None
            return Pass(result.code, result.json()["components"][0], body)
        outcome = self.reconciler.run()
        pulls = [p for p in self.repo.pulls.values() if p.head == branch and p.state == "open"]
        return Pass(1 if outcome.failed else 0, outcome.components[0].to_json(), pulls[0].body if pulls else None)

    def settle(self) -> Pass:
        """Passes until nothing is left to wait for (a build run is followed across passes)."""
        for _ in range(4):
            done = self.run()
            if done.component["status"] != "waiting" and not any(
                a["kind"] == "wait" for a in done.component["actions"]
            ):
                return done
        raise AssertionError(f"still waiting: {done.component}")

    def close(self) -> None:
        if self.emulator is not None:
            validate_recorded(self.emulator.recorded)
            assert self.emulator.errors == []
            self.emulator.stop()


@contextmanager
def driving(
    seed: Seed, tmp_path: Path, play: Callable[[str], dict[str, bytes]] | None = None, **switches: object
) -> Iterator[Driver]:
    driver = Driver(seed, tmp_path, play, **switches)
    try:
        yield driver
    finally:
        driver.close()


def artifacts(seed: Seed) -> Callable[[str], dict[str, bytes]]:
    """A workflow run whose artifact holds the wheels built for its commit."""
    return lambda commit: {w.name: w.read_bytes() for w in sorted(seed.builds(commit).glob("*.whl"))}


def workflow_pushes(seed: Seed) -> Callable[[str], dict[str, bytes]]:
    """ATOM's own workflow: it pushes the image under the torch210 tag, and uploads nothing."""

    def run(commit: str) -> dict[str, bytes]:
        (wheel,) = seed.builds(commit).glob("*.whl")
        seed.publish_by_hand(atom_tag(inspect_wheel(wheel).version, commit), commit)
        return {}

    return run


def foreign_workflow_pushes(seed: Seed, folder: Path) -> Callable[[str], dict[str, bytes]]:
    """ATOM's own workflow as it is: `docker build && docker push` of a FROM-scratch image,
    no wheelpin annotation (here skopeo's copy, zstd layers, OCI media types)."""

    def run(commit: str) -> dict[str, bytes]:
        (wheel,) = seed.builds(commit).glob("*.whl")
        push_foreign(
            f"{seed.repository}:{atom_tag(inspect_wheel(wheel).version, commit)}", [wheel], folder, tool="skopeo"
        )
        return {}

    return run


def pin_lmcache(seed: Seed, *, rocm6: bool, ceilings: bool) -> tuple[str, str]:
    """LMCache 0.5.6 as pinned today (a ROCm 6 build, or not; an open opentelemetry-api range,
    or not): its commit and version."""
    pinned = seed.commit("Release 0.5.6")
    version = lmcache_version("0.5.6.dev98", pinned)
    seedwheels.lmcache_rocm(
        seed.builds(pinned),
        version,
        library=seedwheels.hip_library(rocm6=rocm6),
        requires=seedwheels.lmcache_requires(ceilings=ceilings),
    )
    pin_by_hand(seed, seed.publish_by_hand(atom_tag(version, pinned), pinned))
    return pinned, version


def faster_lookups(seed: Seed) -> tuple[str, str]:
    """The upstream commit each LMCache pipeline proposes, built against ROCm 7: it and its version."""
    head = seed.commit("Faster chunk lookups")
    version = lmcache_version("0.5.7.dev12", head)
    seedwheels.lmcache_rocm(
        seed.builds(head), version, library=seedwheels.hip_library(), requires=seedwheels.lmcache_requires()
    )
    return head, version


def lmcache_version(base: str, commit: str, torch: str = "2.10") -> str:
    return f"{base}+g{commit[:8]}.rocm7.2.4.torch{torch}.cxx11abi1"


def atom_tag(version: str, commit: str) -> str:
    return f"lmcache-v{Version(version).public}-g{commit[:8]}-rocm-torch210"


PLATFORMS = ["local", "github"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_atom_lmcache(registry: Registry, tmp_path: Path, platform: str) -> None:
    """ATOM: its workflow pushes the image under a torch210 tag. A wheel built against torch
    2.11 (what once shipped under that tag) is refused; the next commit is proposed, showing
    ROCm 6 → 7, the version and sha256 from → to, and a conflict new to this wheel."""
    seed = make_seed(
        tmp_path,
        registry,
        "atom-lmcache",
        "lmcache",
        platform,
        edit=lambda t: t.replace(
            'constraints = ["numpy==2.3.5", "torch==2.10.0"]',
            'constraints = ["numpy==2.3.5", "torch==2.10.0", "opentelemetry-api==1.44.0"]',
        ).replace("local_segments = [", "smoke = \"python -c 'import lmcache'\"\nlocal_segments = ["),
    )
    pinned, pinned_version = pin_lmcache(seed, rocm6=True, ceilings=False)

    with driving(seed, tmp_path, workflow_pushes(seed), smoke_job="success") as driver:
        refused = seed.commit("Build against torch 2.11")
        seedwheels.lmcache_rocm(
            seed.builds(refused),
            lmcache_version("0.5.7.dev3", refused, "2.11"),
            library=seedwheels.hip_library(),
            requires=seedwheels.lmcache_requires(),
        )
        first = driver.settle()
        assert first.code == 1 and first.body is None
        assert "carries torch2.11, expected torch2.10 (wheel.local_segments)" in first.component["messages"][-1]
        if platform == "local":  # wheelpin publishes nothing it refused
            assert seed.store().tag_digest(atom_tag(lmcache_version("0.5.7.dev3", refused, "2.11"), refused)) is None

        head, version = faster_lookups(seed)
        done = driver.settle()
        assert done.code == 0, done.component
        body = done.body
        assert body is not None
        assert f"- `{refused[:8]}` Build against torch 2.11 — ⛔ refused: ABI: version" in body, body
        assert f"- `{head[:8]}` Faster chunk lookups" in body
        assert (
            "- ⚠️ **`libamdhip64.so.6` → `libamdhip64.so.7`: a ROCm major version change; the image must ship ROCm 7**"
        ) in body
        assert f"- version `{pinned_version}` → `{version}`" in body
        assert re.search(r"- `cp312` sha256 `[0-9a-f]{16}…` → `[0-9a-f]{16}…`", body)
        assert "- changed `opentelemetry-api>=1.20.0` → `opentelemetry-api<=1.40.0,>=1.20.0`" in body
        assert "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5` (already present in the pinned wheel)" in body
        assert "**`opentelemetry-api<=1.40.0,>=1.20.0`** vs the image's `opentelemetry-api==1.44.0` — **new**" in body
        assert "<summary>For upstream: text for an issue</summary>" in body
        assert "- ✅ local version carries torch2.10, cxx11abi1" in body
        assert "- ✅ HIP code for gfx942, gfx950 in every GPU library" in body
        assert "GPU archs" not in body.split("### Commits")[0]  # the same nine archs as before
        if platform == "local":  # this host has no Python 3.12: said, not passed in silence
            assert "- **cp312: no interpreter for it on this host, smoke test not run**" in body
        if platform == "github":  # adopted: its smoke test is the run's own smoke job
            assert "- ✅ smoke test passed in the build run: smoke (cp312)" in body
            (run,) = [r for r in driver.repo.runs.values() if r.inputs["lmcache_commit"] == head]
            assert (
                f"Provenance: adopted: pushed by run https://github.com/rocm/atom/actions/runs/{run.id} of "
                "lmcache-rocm-wheel.yaml; wheelpin fetched its 1 wheel and verified them"
            ) in body
        for path in ("docker/Dockerfile", "docker/atom_release.dockerfile"):  # both files, one proposal
            assert atom_tag(version, head) in git(["show", f"wheelpin/lmcache:{path}"], cwd=driver_repo(driver))


def test_atom_lmcache_as_atom_pushes_it(registry: Registry, tmp_path: Path) -> None:
    """ATOM's shipped setup as it is: its workflow pushes the image (no wheelpin annotation),
    and the image pinned today was pushed the same way, not by wheelpin. What the proposal
    says comes from the wheels themselves: the pinned commit from the tag, the commit list
    from it to the head, the same archs and tag (nothing "dropped"), the ROCm move."""
    seed = make_seed(tmp_path, registry, "atom-lmcache", "lmcache", "github")
    pinned = seed.commit("Release 0.5.6")
    pinned_version = lmcache_version("0.5.6.dev98", pinned)
    (wheel,) = [
        seedwheels.lmcache_rocm(
            seed.builds(pinned),
            pinned_version,
            library=seedwheels.hip_library(rocm6=True),
            requires=seedwheels.lmcache_requires(ceilings=False),
        )
    ]
    pin_by_hand(seed, push_foreign(f"{seed.repository}:{atom_tag(pinned_version, pinned)}", [wheel], tmp_path))
    with driving(seed, tmp_path, foreign_workflow_pushes(seed, tmp_path)) as driver:
        quiet = driver.settle()  # the base pins the head: known from the tag, nothing to do
        assert quiet.code == 0 and quiet.body is None, quiet.component
        middle = seed.commit("Document the chunk size")  # built by nobody: listed all the same
        head, version = faster_lookups(seed)
        done = driver.settle()
        assert done.code == 0, done.component
    body = done.body
    assert body is not None
    assert f"Moves **lmcache** from `{pinned[:8]}` to `{head[:8]}` of " in body
    commits = body.split("### Commits\n")[1].split("\n\n")[0]
    assert commits.splitlines() == [f"- `{head[:8]}` Faster chunk lookups", f"- `{middle[:8]}` Document the chunk size"]
    changes = body.split("### From → to\n")[1].split("\n\n")[0]
    assert "dropped" not in changes and "not compared" not in changes, changes
    assert "- ⚠️ **`libamdhip64.so.6` → `libamdhip64.so.7`: a ROCm major version change" in changes
    assert f"- version `{pinned_version}` → `{version}`" in changes
    row = next(line for line in body.splitlines() if line.startswith(f"| `lmcache-{version.replace('+', '+')}"))
    assert "gfx942" in row and "gfx950" in row and row.endswith(f"| {seedwheels.LMCACHE_TAG} |"), row
    assert "- ✅ HIP code for gfx942, gfx950 in every GPU library" in body
    assert "Provenance: adopted: pushed by run" in body


def driver_repo(driver: Driver) -> Path:
    return driver.repo.path if driver.emulator is not None else driver.seed.downstream


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vllm_lmcache(
    registry: Registry, tmp_path: Path, platform: str, hip_artifacts: HipArtifacts, consumer_images: ConsumerImages
) -> None:
    """vLLM's rule: gfx90a where the build has it. Pinned today: a build with gfx90a; the new
    build has gfx942 alone. It is proposed, and gfx90a dropped cannot be missed. No
    constraint is typed: vLLM names its release image, read from its layers."""
    seed = make_seed(
        tmp_path,
        registry,
        "atom-lmcache",
        "lmcache",
        platform,
        edit=lambda t: (
            t.replace(", publishes_image = true", "")
            .replace(
                'archs = ["gfx942", "gfx950"]', 'archs = ["gfx942"]\narchs_wanted = ["gfx90a", "gfx942", "gfx950"]'
            )
            .replace(
                'constraints = ["numpy==2.3.5", "torch==2.10.0"]', f'consumer = {{ image = "{consumer_images.rocm7}" }}'
            )
        ),
    )
    pinned, pinned_version = pin_lmcache(seed, rocm6=False, ceilings=True)
    gfx942 = link_shared(tmp_path, [hip_artifacts.plain_objects["k942"]], "libops942.so").read_bytes()
    with driving(seed, tmp_path, artifacts(seed)) as driver:
        refused = seed.commit("Build the ops without the HIP runtime")
        gfx1100 = link_shared(tmp_path, [hip_artifacts.plain_objects["k1100"]], "libops1100.so").read_bytes()
        seedwheels.lmcache_rocm(
            seed.builds(refused),
            lmcache_version("0.5.7.dev3", refused),
            library=gfx1100,
            requires=seedwheels.lmcache_requires(),
        )
        first = driver.settle()  # its archs would do; it links no libamdhip64
        assert first.code == 1 and first.body is None
        assert "no ELF file in the wheel needs a library matching libamdhip64*" in first.component["messages"][-1]
        head = seed.commit("Drop gfx90a from the default targets")
        version = lmcache_version("0.5.7.dev12", head)
        seedwheels.lmcache_rocm(
            seed.builds(head),
            version,
            library=gfx942,
            requires=seedwheels.lmcache_requires(),
            extra={"lmcache/hip_runtime.cpython-312-x86_64-linux-gnu.so": seedwheels.hip_binding()},
        )
        done = driver.settle()
        assert done.code == 0, done.component
        body = done.body
        assert body is not None
        assert "### ⚠️ Notes\n- **gfx90a: no code object, skipped (wheel.archs_wanted)**" in body
        assert "gfx950: no code object, skipped" in body
        assert done.component["notes"][:2] == [
            "gfx90a: no code object, skipped (wheel.archs_wanted)",
            "gfx950: no code object, skipped (wheel.archs_wanted)",
        ]
        assert "- ⚠️ **GPU archs dropped: " in body and "gfx90a" in body.split("GPU archs dropped: ")[1].split("**")[0]
        assert f"- `{refused[:8]}` Build the ops without the HIP runtime — ⛔ refused" in body
        assert f"- version `{pinned_version}` → `{version}`" in body
        assert "Requires-Dist: unchanged." in body
        assert "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5` (already present in the pinned wheel)" in body
        assert f"`vllm==0.11.0` needs `lmcache<=0.5.6`: excludes lmcache {version}" in body
        assert "- ✅ every library the wheels' ELF files need is in the consuming image" in body  # rocfft too


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mooncake(registry: Registry, tmp_path: Path, platform: str) -> None:
    """Mooncake: four wheels, one per python tag, in one image; a build that ignored
    HIP_BUILD (the CUDA distribution's name) is refused, root cause first; the exact wheels
    are smoke-tested before they are published (on GitHub, by the build run's smoke job)."""
    seed = make_seed(
        tmp_path,
        registry,
        "mooncake",
        "mooncake",
        platform,
        edit=lambda t: t.replace(
            "version_carries_commit = false", "version_carries_commit = false\nsmoke = \"python -c 'import mooncake'\""
        ),
    )
    tags = ["cp310", "cp311", "cp312", "cp313"]
    pinned = seed.commit("v0.3.13.post1")
    seedwheels.mooncake_rocm(seed.builds(pinned), "0.3.13.post1", tags)
    pin_by_hand(seed, seed.publish_by_hand(f"mooncake-0.3.13.post1-g{pinned[:8]}-rocm7.2.4", pinned))
    with driving(seed, tmp_path, artifacts(seed), smoke_job="success") as driver:
        refused = seed.commit("Build without HIP_BUILD")
        seedwheels.mooncake_rocm(seed.builds(refused), "0.3.14", tags, name="mooncake-transfer-engine")
        first = driver.settle()
        assert first.code == 1 and first.body is None
        assert (
            first.component["messages"][-1]
            .split(": ", 1)[1]
            .startswith(
                "distribution is 'mooncake-transfer-engine', expected 'mooncake-transfer-engine-rocm': a build of the "
                "non-ROCm variant (its ROCm switch, such as HIP_BUILD or USE_ROCM, was not set) (every wheel)"
            )
        ), first.component
        head = seed.commit("Support ROCm 7.2 in the transfer engine")
        seedwheels.mooncake_rocm(seed.builds(head), "0.3.14", tags)
        done = driver.settle()
        assert done.code == 0, done.component
        body = done.body
        assert body is not None
        assert "- version `0.3.13.post1` → `0.3.14`" in body
        for tag in tags:
            assert re.search(rf"- `{tag}` sha256 `[0-9a-f]{{16}}…` → `[0-9a-f]{{16}}…`", body), tag
        assert "- ✅ one wheel each for cp310, cp311, cp312, cp313" in body
        assert "- ✅ needs libhsa-runtime64*" in body and "Requires-Dist: unchanged." in body
        assert (
            f"- `{refused[:8]}` Build without HIP_BUILD — ⛔ refused: distribution is 'mooncake-transfer-engine'"
            in body
        )
        if platform == "local":  # the host has one interpreter: the other tags are said, not passed in silence
            assert "smoke test `python -c 'import mooncake'` passed for cp311" in body
            for tag in ("cp310", "cp312", "cp313"):
                assert f"- **{tag}: no interpreter for it on this host, smoke test not run**" in body
        else:
            assert "- ✅ smoke test passed in the build run: smoke (cp312)" in body
        dockerfile = git(["show", "wheelpin/mooncake:docker/Dockerfile"], cwd=driver_repo(driver))
        assert f"mooncake-0.3.14-g{head[:8]}-rocm7.2.4@sha256:" in dockerfile
        tags_now = json.loads(
            subprocess.run(
                ["skopeo", "list-tags", "--tls-verify=false", f"docker://{seed.repository}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )["Tags"]
        new_digest = dockerfile.split(f"mooncake-0.3.14-g{head[:8]}-rocm7.2.4@", 1)[1][:71]
        assert (
            sorted(tags_now)
            == sorted(
                [
                    f"mooncake-0.3.13.post1-g{pinned[:8]}-rocm7.2.4",  # nothing refused pushed
                    f"mooncake-0.3.14-g{head[:8]}-rocm7.2.4",
                    new_digest.replace(":", "-"),
                ]
            )
        )  # its provenance and SBOM, listed


def move_base(seed: Seed, driver: Driver | None, image: str) -> None:
    """The maintainers move the Dockerfile's BASE_IMAGE (on GitHub: pushed to the default branch)."""
    dockerfile = seed.downstream / "docker" / "Dockerfile"
    dockerfile.write_text(
        re.sub(r"^ARG BASE_IMAGE=.*$", f'ARG BASE_IMAGE="{image}"', dockerfile.read_text(), flags=re.M)
    )
    git(["commit", "--quiet", "-am", "Move the base image"], cwd=seed.downstream, env=HUMAN)
    if driver is not None and driver.emulator is not None:
        git(["push", "--quiet", "--force", str(driver.repo.path), "main:main"], cwd=seed.downstream)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_atom_lmcache_against_its_consuming_image(
    registry: Registry, tmp_path: Path, platform: str, consumer_images: ConsumerImages
) -> None:
    """No constraint typed by hand. The consuming image is the Dockerfile's own
    BASE_IMAGE, read from its layers: on a ROCm 6 base the ROCm 7 wheel is refused for the
    library it lacks; once the base moves to ROCm 7, the same commit is judged again and
    proposed, with the conflicts hand-typed constraints would give."""
    seed = make_seed(
        tmp_path,
        registry,
        "atom-lmcache",
        "lmcache",
        platform,
        edit=lambda t: t.replace(
            'constraints = ["numpy==2.3.5", "torch==2.10.0"]', 'consumer = { from_arg = "BASE_IMAGE" }'
        ),
    )
    move_base(seed, None, consumer_images.rocm6)
    pinned, pinned_version = pin_lmcache(seed, rocm6=True, ceilings=False)
    with driving(seed, tmp_path, workflow_pushes(seed)) as driver:
        head, version = faster_lookups(seed)
        refused = driver.settle()
        assert refused.code == 1 and refused.body is None
        assert (
            "lmcache/c_ops.cpython-312-x86_64-linux-gnu.so needs libamdhip64.so.7, which the image does not "
            "have where the loader looks"
        ) in refused.component["messages"][-1], refused.component
        assert driver.settle().component["actions"][0]["kind"] == "report"  # not judged again: nothing moved
        move_base(seed, driver, consumer_images.rocm7)
        done = driver.settle()
        assert done.code == 0, done.component
        body = done.body
        assert body is not None
        assert "**`numpy<=2.2.6`** vs the image's `numpy==2.3.5` (already present in the pinned wheel)" in body
        assert "**`opentelemetry-api<=1.40.0,>=1.20.0`** vs the image's `opentelemetry-api==1.44.0` — **new**" in body
        host_path = consumer_images.rocm7.split("@")[0]
        assert (
            f"### Against the consuming image\nAgainst `{host_path}@sha256:" in body
            and "` (Python 3.12, ROCm 7.2.4-97; the wheel is built for ROCm 7.2.4): 4 installed packages "
            "read from its layers"
            in body
        )
        # the sizes a reviewer weighs: the consuming image's, the wheel's old → new, both wheel images'
        assert re.search(
            r"read from its layers; [\d.]+ (kB|MB) as pulled, to which the wheels add [\d.]+ MB "
            r"installed\n",
            body,
        ), body
        row = next(line for line in body.splitlines() if line.startswith("| `lmcache-"))
        assert re.match(
            r"\| `[^`]+` \| [\d.]+ MB( → [\d.]+ MB)? \([+-][\d.,%]+( bytes)?\) \| [\d.]+ MB( → [\d.]+ MB)? "
            r"\([+-][\d.,%]+( bytes)?\) \|",
            row,
        ), row  # file and installed size, each old → new
        assert re.search(r"\nImage: `[^`]+`, [\d.]+ MB; the pinned one [\d.]+ MB\n", body), body
        assert f"\n- `vllm==0.11.0` needs `lmcache<=0.5.6`: excludes lmcache {version}" in body
        absent = next(line for line in body.splitlines() if line.startswith("- new to the consuming image: "))
        for requirement in ("`grpcio>=1.78.0`", "`redis`", "`aiofile`"):  # what vLLM's maintainers added by hand
            assert requirement in absent, absent
        assert "`numpy" not in absent and "`torch" not in absent and "`opentelemetry-api" not in absent
        assert (
            f"`vllm==0.11.0` needs `lmcache<=0.5.6`: excludes lmcache {version} (in the consuming image)"
            in done.component["notes"]
        )  # and so on the dashboard
        assert "- ✅ every library the wheels' ELF files need is in the consuming image" in body

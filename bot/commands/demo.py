"""`wheelpin demo`: the whole loop on one laptop — no account, no network, no Docker.

In a scratch folder it makes an upstream git repository holding a small real Python
package (with its own wheel build script), a downstream repository whose Dockerfile pins
that package's wheel image the way ATOM pins LMCache, and a config using the local
platform, a local build command and an OCI layout folder. The package ships a small HIP
library as package data (core/wheel/hipstub.py writes it: no compiler needed), so its wheel
carries device code for gfx942 and gfx950 and the arch and ROCm checks run on it as on a
real one. It runs a pass (a proposal appears), adds an upstream commit that changes the
requirements, runs again (the same proposal is updated, its Requires-Dist diff shows the
change), and says where to look, the config it wrote first.
Nothing is written outside the scratch folder.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .. import SCHEMA_URL
from ..adapters.git import git
from ..adapters.imagestore import ImageStore, LayoutStore
from ..adapters.inspectpool import inspect_wheel
from ..adapters.publisher import publish
from ..app.settings import Settings
from ..core.config.model import BRANCH_PREFIX
from ..core.wheel.hipstub import hip_library
from ..core.wheel.rocmlibs import HIP_RUNTIME
from ..loop.results import PassResult
from .output import emit_json, emit_text
from .platforms.local import local_reconciler
from .reconcile_cmd import pass_text

PEOPLE = {
    "GIT_AUTHOR_NAME": "Upstream Dev",
    "GIT_AUTHOR_EMAIL": "dev@upstream.example",
    "GIT_COMMITTER_NAME": "Upstream Dev",
    "GIT_COMMITTER_EMAIL": "dev@upstream.example",
}
MAINTAINER = {
    "GIT_AUTHOR_NAME": "Image Maintainer",
    "GIT_AUTHOR_EMAIL": "maintainer@downstream.example",
    "GIT_COMMITTER_NAME": "Image Maintainer",
    "GIT_COMMITTER_EMAIL": "maintainer@downstream.example",
}

# The upstream's own build script: what `python -m build` would make, with the version's
# local part from the commit (as setuptools-scm writes `+g<sha8>`), and no dependency. A
# shared library among the package's files makes the wheel a platform one, as setuptools
# does for a package with binaries.
BUILD_SCRIPT = '''\
"""Builds this package's wheel into the folder given as the first argument."""
import base64, hashlib, os, sys, zipfile

out = sys.argv[1]
version = open("VERSION").read().strip() + "+g" + os.environ["WHEELPIN_SHA8"] + ".rocm7.2.4"
requires = [line.strip() for line in open("requirements.txt") if line.strip()]
dist = f"demo_cache-{version}.dist-info"
files = {"demo_cache/__init__.py": open("demo_cache/__init__.py", "rb").read()}
files.update({f"demo_cache/{name}": open(f"demo_cache/{name}", "rb").read()
              for name in sorted(os.listdir("demo_cache")) if name.endswith(".so")})
platform = "linux_x86_64" if any(path.endswith(".so") for path in files) else "any"
files[f"{dist}/METADATA"] = ("Metadata-Version: 2.1\\nName: demo-cache\\nVersion: " + version + "\\n"
                             + "".join(f"Requires-Dist: {r}\\n" for r in requires)).encode()
purelib = "true" if platform == "any" else "false"
files[f"{dist}/WHEEL"] = (f"Wheel-Version: 1.0\\nGenerator: build_wheel.py\\nRoot-Is-Purelib: {purelib}\\n"
                          f"Tag: py3-none-{platform}\\n").encode()
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{p},{digest(d)},{len(d)}\\n" for p, d in files.items()) + f"{dist}/RECORD,,\\n"
files[f"{dist}/RECORD"] = record.encode()
name = os.path.join(out, f"demo_cache-{version}-py3-none-{platform}.whl")
with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as whl:
    for path, data in files.items():
        info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        whl.writestr(info, data)
print("built", version)
'''

CONFIG = """\
#:schema {schema}
# The demo's shape: everything local. The upstream is a git repository on disk whose own
# script builds the wheel in a clean checkout of each commit, and the image goes to an OCI
# layout folder (no registry, no Docker engine). `wheelpin demo` writes this config into
# the downstream repository it makes (wheelpin's own repository keeps it in config/demo/).
[defaults]
base_branch = "main"
labels = ["wheelpin"]

[[component]]
name = "demo-cache"
upstream = {{ repo = "../upstream", branch = "main" }}
{wheel}
build = {{ command = ["{python}", "build_wheel.py", "{{out}}"] }}
image = {{ repository = "oci:../images", tag = "demo-cache-v{{version_base}}-g{{sha8}}" }}
constraints = ["numpy==2.3.5"]
pins = [
  {{ file = "docker/Dockerfile", image_arg = "DEMO_WHEEL_IMAGE", sha256_arg = "DEMO_WHEEL_SHA256" }},
]
"""
# The demo's wheel carries device code and is held to the rules of a ROCm image's wheels;
# the worlds of the end-to-end tests (device_code=False) start from a pure-Python one.
WHEEL_RULES = {
    True: "# Its HIP library must carry code for both GPUs and need the image's HIP runtime (ROCm 7,\n"
    "# as the version's rocm7.2.4 says; wheelpin checks that too), and no CUDA library.\n"
    'wheel = { distribution = "demo-cache", archs = ["gfx942", "gfx950"], require_needed = ["libamdhip64.so.*"] }',
    False: 'wheel = { distribution = "demo-cache" }',
}
HIP_LIBRARY = "demo_cache/_demo_hip.so"
HIP_NEEDED = f"{HIP_RUNTIME}.so.7"  # ROCm 7's HIP runtime, as the version's rocm7.2.4 says
HIP_ARCHS = ("gfx942", "gfx950")


def config_text(*, python: str, device_code: bool = True) -> str:
    """The config the demo writes, its build run by `python`."""
    return CONFIG.format(schema=SCHEMA_URL, python=python, wheel=WHEEL_RULES[device_code])


DOCKERFILE = """\
# The inference image: takes the demo-cache wheel from its FROM-scratch image, by digest.
ARG DEMO_WHEEL_IMAGE="{image}"
ARG DEMO_WHEEL_SHA256={sha256}
FROM ${{DEMO_WHEEL_IMAGE}} AS demo_wheel

FROM python:3.12-slim
ARG DEMO_WHEEL_SHA256
COPY --from=demo_wheel / /tmp/demo-wheel/
RUN echo "${{DEMO_WHEEL_SHA256}}  $(ls /tmp/demo-wheel/*.whl)" | sha256sum -c - \\
    && pip install --no-deps /tmp/demo-wheel/*.whl
"""


def _commit(repo: Path, message: str, people: dict[str, str]) -> str:
    git(["add", "-A"], cwd=repo)
    git(["commit", "--quiet", "-m", message], cwd=repo, env=people)
    return git(["rev-parse", "HEAD"], cwd=repo).strip()


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def make_upstream(root: Path, *, device_code: bool = True) -> tuple[Path, str]:
    """The upstream at its first commit: the package (with its HIP library, unless not
    `device_code`) and the script that builds its wheel."""
    upstream = root / "upstream"
    upstream.mkdir(parents=True)
    git(["init", "--quiet", "-b", "main"], cwd=upstream)
    _write(
        upstream,
        {
            "VERSION": "0.1.0\n",
            "requirements.txt": "numpy>=2.3\ntorch>=2.9\n",
            "demo_cache/__init__.py": '"""A tiny stand-in for LMCache."""\n__version__ = "0.1.0"\n',
            "build_wheel.py": BUILD_SCRIPT,
        },
    )
    if device_code:
        (upstream / HIP_LIBRARY).write_bytes(
            hip_library(soname=Path(HIP_LIBRARY).name, needed=[HIP_NEEDED], targets=HIP_ARCHS)
        )
    return upstream, _commit(upstream, "Initial import", PEOPLE)


def make_downstream(
    root: Path, first_commit: str, settings: Settings, *, registry: str | None = None, device_code: bool = True
) -> Path:
    """The downstream as a maintainer has it today: the first build pinned by hand (in
    the OCI layout folder, or in the repository `registry` names: `host:port/path`)."""
    import subprocess

    from ..adapters.upstream import UpstreamRepo
    from ..core.config.model import Upstream

    upstream = UpstreamRepo(Upstream(repo=str(root / "upstream"), branch="main"), cache=settings.cache_dir, root=root)
    checkout = upstream.checkout(first_commit, settings.cache_dir / "demo-first-build")
    out = root / "first-build"
    out.mkdir()
    subprocess.run(
        [sys.executable, "build_wheel.py", str(out)],
        cwd=checkout,
        check=True,
        capture_output=True,
        env={"WHEELPIN_SHA8": first_commit[:8], "PATH": "/usr/bin:/bin"},
    )
    upstream.remove_checkout(checkout)
    wheels = sorted(out.glob("*.whl"))
    reports = [inspect_wheel(w) for w in wheels]
    tag = f"demo-cache-v{reports[0].version.split('+')[0]}-g{first_commit[:8]}"
    if registry is None:
        store: ImageStore = LayoutStore(root / "images")
        repository, config = "localhost/demo-cache", config_text(python=sys.executable, device_code=device_code)
    else:
        from ..adapters.imagestore import RegistryRepository
        from ..adapters.registry import RegistryClient

        host, _, path = registry.partition("/")
        store = RegistryRepository(RegistryClient(host), path)
        repository = registry
        config = config_text(python=sys.executable, device_code=device_code).replace('"oci:../images"', f'"{registry}"')
    published = publish(
        store, tag, wheels, reports, source="../upstream", revision=first_commit, component="demo-cache"
    )
    downstream = root / "downstream"
    downstream.mkdir()
    git(["init", "--quiet", "-b", "main"], cwd=downstream)
    _write(
        downstream,
        {
            "wheelpin.toml": config,
            "docker/Dockerfile": DOCKERFILE.format(
                image=f"{repository}:{tag}@{published.digest}", sha256=reports[0].sha256
            ),
            "README.md": "An inference image that pins demo-cache.\n",
        },
    )
    _commit(downstream, "Pin demo-cache by digest", MAINTAINER)
    return downstream


def demo_command(*, workdir: Path | None, json: bool, settings: Settings) -> int:
    root = (workdir or Path(tempfile.mkdtemp(prefix="wheelpin-demo-"))).resolve()
    if root.exists() and any(root.iterdir()):
        root = Path(tempfile.mkdtemp(prefix="wheelpin-demo-", dir=root))
    local = settings.model_copy(update={"cache_dir": root / "cache"})
    say = (lambda text: None) if json else emit_text
    say(f"wheelpin demo in {root}\n")
    _unsandboxed_if_needed(say)
    upstream, first = make_upstream(root)
    downstream = make_downstream(root, first, local)
    config = downstream / "wheelpin.toml"
    say(
        f"1. An upstream ({upstream}) at {first[:8]}: a Python package shipping a HIP library\n"
        f"   ({HIP_LIBRARY}, code objects for {' and '.join(HIP_ARCHS)}, needing {HIP_NEEDED};\n"
        f"   wheelpin wrote it, no compiler needed). A downstream ({downstream}) whose\n"
        f"   docker/Dockerfile pins that commit's wheel image by digest.\n"
        f"   The config the demo wrote: {config}\n"
    )
    (upstream / "demo_cache/__init__.py").write_text('"""A tiny stand-in for LMCache."""\n__version__ = "0.1.1"\n')
    (upstream / "VERSION").write_text("0.1.1\n")
    second = _commit(upstream, "Faster cache lookups", PEOPLE)
    say(f"2. Upstream moves to {second[:8]}. A pass builds, verifies, publishes and proposes:")
    passes: list[PassResult] = []
    passes.append(_pass(downstream, local, say))
    (upstream / "requirements.txt").write_text("numpy<=2.2.6\ntorch>=2.9\nmsgspec>=0.18\n")
    third = _commit(upstream, "Pin numpy for the new kernels; use msgspec", PEOPLE)
    say(f"3. Upstream moves to {third[:8]}, changing its requirements. The same proposal is updated:")
    passes.append(_pass(downstream, local, say))
    say("4. Nothing new upstream: a pass changes nothing.")
    passes.append(_pass(downstream, local, say))
    branch = f"{BRANCH_PREFIX}demo-cache"
    message = git(["log", "-1", "--format=%B", branch], cwd=downstream)
    if json:
        emit_json(
            {
                "workdir": str(root),
                "upstream": str(upstream),
                "downstream": str(downstream),
                "config": str(config),
                "branch": branch,
                "commits": [first, second, third],
                "passes": [p.to_json() for p in passes],
                "proposal": message,
            }
        )
        return 1 if any(p.failed for p in passes) else 0
    say("The proposal (the branch's commit message is its title and body):\n")
    shown = message.split("### Check by hand", 1)[0].rstrip().splitlines()  # up to its verification
    say("\n".join("    " + line for line in shown) + "\n    …\n")
    first_wheel = next((root / "first-build").glob("*.whl"))
    say(
        "Where to look:\n"
        f"  {config}   # the config the demo wrote\n"
        f"  git -C {downstream} log -1 {branch}          # the proposal\n"
        f"  git -C {downstream} diff main {branch}       # the pins it moves\n"
        f"  wheelpin image show oci:{root / 'images'}:demo-cache-v0.1.1-g{third[:8]}\n"
        f"  wheelpin wheel inspect {first_wheel} {' '.join(f'--require-arch {arch}' for arch in HIP_ARCHS)}\n"
        f"  wheelpin reconcile --once --repo {downstream} --dry-run   (with WHEELPIN_CACHE_DIR={root / 'cache'})"
    )
    return 1 if any(p.failed for p in passes) else 0


def _unsandboxed_if_needed(say) -> None:  # type: ignore[no-untyped-def]
    """The demo's build runs a script the demo itself wrote, so on a machine where bwrap
    cannot run (a fresh one without bubblewrap) it runs unsandboxed, and says so, rather
    than failing the README's first command. A repository's own build never does."""
    from ..adapters import sandbox

    if os.environ.get(sandbox.SETTING):
        return  # the operator's word stands
    problem = sandbox.unavailable()
    if problem is not None:
        os.environ[sandbox.SETTING] = sandbox.OFF
        say(
            f"(bwrap cannot run here: {problem}. The demo's own build script runs unsandboxed; wheelpin refuses\n"
            " to run a real repository's build that way: install bubblewrap first.)\n"
        )


def _pass(downstream: Path, settings: Settings, say) -> PassResult:  # type: ignore[no-untyped-def]
    result = local_reconciler(repo=downstream, config=None, settings=settings, retry_failed=False).run()
    say("\n".join("   " + line for line in pass_text(result).splitlines()) + "\n")
    return result

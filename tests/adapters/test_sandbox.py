"""Builds and smoke tests run out of the bot's reach (adapters/sandbox.py): a
command that looks for the bot's secrets (its environ in /proc, every process's, docker's
config.json, the state file, a token under a name no filter catches) finds none; what it
starts in the background ends with it; its output is bounded while it is written
(adapters/boundedlog.py); where bwrap cannot run, the command is refused unless the
operator opted out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.adapters import localbuild, sandbox, smoke
from bot.adapters.boundedlog import BoundedLog
from bot.adapters.git import git
from bot.adapters.upstream import UpstreamRepo
from bot.core.config.model import Component
from tests.fixtures.wheels import build_wheel

HERE = f"cp{sys.version_info.major}{sys.version_info.minor}"
PLANTED = "planted-7f3a"  # in every secret this test plants, and nowhere else

# What an adversarial build or smoke test tries: it prints FOUND for each place a planted
# secret is read from, CLEAN otherwise, and fails when it found one
SNOOP = f'''
import glob, os, sys
places = [f"/proc/{{os.getppid()}}/environ", *glob.glob("/proc/*/environ"),
          os.path.expanduser("~/.docker/config.json"), *sys.argv[1:]]
found = []
for place in places:
    try:
        with open(place, "rb") as stream:
            if b"{PLANTED}" in stream.read():
                found.append(place)
    except OSError:
        pass
found += ["env:" + key for key, value in os.environ.items() if "{PLANTED}" in value]
print("FOUND " + " ".join(found) if found else "CLEAN %d" % len(places))
sys.exit(1 if found else 0)
'''


def component(command: str | list[str], upstream: Path) -> Component:
    return Component.model_validate(
        {
            "name": "demo-cache",
            "upstream": {"repo": str(upstream), "branch": "main"},
            "wheel": {"distribution": "demo-cache"},
            "build": {"command": command},
            "image": {"repository": "oci:/nowhere", "tag": "v{sha8}"},
            "pins": [{"file": "Dockerfile", "image_arg": "IMG", "sha256_arg": "SHA"}],
        }
    )


def upstream_repo(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    folder = tmp_path / "upstream"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    git(["init", "--quiet", "--initial-branch=main"], cwd=folder)
    git(["add", "-A"], cwd=folder)
    git(["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "--quiet", "-m", "one"], cwd=folder)
    return folder, git(["rev-parse", "HEAD"], cwd=folder).strip()


def build(tmp_path: Path, command: str | list[str], files: dict[str, str] | None = None) -> localbuild.BuildResult:
    upstream, commit = upstream_repo(tmp_path, files or {"README": "x\n"})
    cache = tmp_path / "cache"
    repo = UpstreamRepo(component(command, upstream).upstream, cache=cache, root=tmp_path)
    return localbuild.run_local_build(component(command, upstream), commit, upstream=repo, cache=cache)


def drive(kind: str, tmp: str) -> None:
    """A bot's process (run by `secrets_seen`, its environment holding the planted
    secrets): a build or a smoke test of SNOOP, as `wheelpin reconcile` would run it."""
    sandbox.undumpable()  # as the command line does
    tmp_path = Path(tmp)
    docker = str(Path(os.environ["HOME"]) / ".docker" / "config.json")
    state = str(tmp_path / "cache" / "state.sqlite")
    if kind == "build":
        result = build(tmp_path, [sys.executable, "snoop.py", docker, state], {"snoop.py": SNOOP})
        said = result.log.read_text()
    else:
        wheel = build_wheel(
            tmp_path / "wheel",
            name="snoop",
            version="1.0",
            files={"snoop/__init__.py": SNOOP.replace("sys.argv[1:]", repr([docker, state])).encode()},
        )
        smoked = smoke.smoke_test("python -c 'import snoop' && python -c 'import snoop'", {HERE: wheel})
        said = json.dumps([smoked.passed, smoked.failed])
    print(json.dumps(said))


def secrets_seen(tmp_path: Path, kind: str) -> str:
    home = tmp_path / "home"
    (home / ".docker").mkdir(parents=True)
    (home / ".docker" / "config.json").write_text(json.dumps({"auths": {"r.example": {"auth": PLANTED}}}))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "state.sqlite").write_text(f"refresh token {PLANTED}")
    env = {
        **os.environ,
        "HOME": str(home),
        "GH_PAT": f"ghp_{PLANTED}",
        "MY_SERVICE_API_KEY": PLANTED,
        "WHEELPIN_REGISTRY_PASSWORD": PLANTED,
        "WHEELPIN_GITHUB_TOKEN": PLANTED,
        "HTTPS_PROXY": f"http://user:{PLANTED}@proxy.example:3128",  # a proxy with credentials
        "WHEELPIN_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from tests.adapters.test_sandbox import drive; drive(*sys.argv[1:])",
            kind,
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    said: str = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def test_a_build_reads_none_of_the_bots_secrets(tmp_path: Path) -> None:
    said = secrets_seen(tmp_path, "build")
    assert "CLEAN" in said and "FOUND" not in said and PLANTED not in said, said


def test_a_smoke_test_reads_none_of_the_bots_secrets(tmp_path: Path) -> None:
    said = secrets_seen(tmp_path, "smoke")
    assert json.loads(said) == [[HERE], []], said  # both imports ran, and found nothing


def _running(mark: str) -> list[int]:
    """The pids of this host whose command line carries `mark`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.fixture
def daemon_mark() -> Iterator[str]:
    """A `sleep` a test's command starts in a session of its own; killed after the test
    should the code under test have left it (its pid is found by its odd duration)."""
    mark = f"{600 + os.getpid() % 1000}.{time.monotonic_ns() % 997}"
    yield mark
    for pid in _running(f"sleep\0{mark}"):
        os.kill(pid, 9)


def test_a_daemon_a_build_starts_ends_with_it(tmp_path: Path, daemon_mark: str) -> None:
    result = build(tmp_path, f"setsid sleep {daemon_mark} </dev/null >/dev/null 2>&1 & sleep 0.5; exit 3")
    assert not result.ok and "exit 3" in result.message
    time.sleep(0.5)
    assert _running(f"sleep\0{daemon_mark}") == []


def test_a_daemon_a_smoke_test_starts_ends_with_it(tmp_path: Path, daemon_mark: str) -> None:
    wheel = build_wheel(tmp_path, name="demo-cache", version="0.1.1", files={"demo_cache/__init__.py": b""})
    result = smoke.smoke_test(f"setsid sleep {daemon_mark} </dev/null >/dev/null 2>&1 & sleep 0.5", {HERE: wheel})
    assert result.passed == [HERE]
    time.sleep(0.5)
    assert _running(f"sleep\0{daemon_mark}") == []


# lines of half the kept tail: the last one is whole in it however the pipe's reads fall
FLOOD = (
    "import sys\nfor n in range(40):\n    sys.stdout.write(f'line {n} ' + 'x' * (1 << 19) + '\\n')\n"
    "print('flood over')\n"
)


def test_a_flood_of_build_output_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(localbuild, "LOG_HEAD", 1 << 20)
    monkeypatch.setattr(localbuild, "LOG_TAIL", 1 << 20)
    result = build(tmp_path, [sys.executable, "flood.py"], {"flood.py": FLOOD})
    size = result.log.stat().st_size
    assert size <= 3 * (1 << 20) + 200, size  # 20 MiB written
    text = result.log.read_text()
    assert text.startswith("line 0 ") and "line 39 " in text[-(1 << 20) - 20 :] and text.endswith("flood over\n")
    assert "bytes of output cut here" in text
    assert "of output cut to the first 1 and last 1 MiB in its log" in result.message


def test_a_flood_of_smoke_output_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []

    class Measured(BoundedLog):
        def finish(self, *, grace: float = 5.0) -> int:
            written = super().finish(grace=grace)
            sizes.append(self.path.stat().st_size)
            return written

    monkeypatch.setattr(smoke, "BoundedLog", Measured)
    wheel = build_wheel(tmp_path, name="flood", version="1.0", files={"flood/__init__.py": FLOOD.encode()})
    result = smoke.smoke_test("python -c 'import flood'; exit 1", {HERE: wheel})
    assert sizes[-1] <= 3 * smoke.KEPT + 200, sizes
    (failed,) = result.failed
    assert failed.endswith("flood over)")


def test_the_log_keeps_its_head_and_tail_and_says_what_was_cut(tmp_path: Path) -> None:
    log = BoundedLog(tmp_path / "log", head=10, tail=10)
    os.write(log.writer, b"0123456789" + b"-" * 1000 + b"abcdefghij")
    log.started()
    assert log.finish() == 1020
    text = (tmp_path / "log").read_bytes()
    assert text.startswith(b"0123456789\n[wheelpin: ") and text.endswith(b"abcdefghij")
    kept = (
        len(text)
        - 10
        - len(b"\n[wheelpin: %20d bytes of output cut here; the log keeps its first and last bytes]\n" % 0)
    )
    assert f"{1020 - 10 - kept:>20d} bytes of output cut here".encode() in text


def test_without_bwrap_the_command_is_refused_unless_the_operator_opts_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "_problem", lambda: "no bwrap on PATH")
    monkeypatch.delenv(sandbox.SETTING, raising=False)
    with pytest.raises(sandbox.SandboxUnavailable, match=r"WHEELPIN_SANDBOX=off to run them unsandboxed \(unsafe\)"):
        build(tmp_path, "touch ran")
    assert not (tmp_path / "cache" / "builds").exists()  # nothing was made, nothing ran
    with pytest.raises(sandbox.SandboxUnavailable):
        smoke.smoke_test("true", {HERE: build_wheel(tmp_path / "w", name="x", version="1", files={"x.py": b""})})
    monkeypatch.setenv(sandbox.SETTING, "off")
    assert sandbox.enabled() is False


def test_only_allow_listed_variables_reach_a_build(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "GH_PAT": "p",
        "MY_SERVICE_API_KEY": "k",
        "PIP_INDEX_URL": "https://pypi.example/simple",
        "HTTPS_PROXY": "http://u:p@proxy:3128",
        "LC_ALL": "C.UTF-8",
        "CUSTOM": "1",
    }.items():
        monkeypatch.setenv(name, value)
    assert {"GH_PAT", "MY_SERVICE_API_KEY", "HTTPS_PROXY", "CUSTOM"}.isdisjoint(localbuild.build_environment())
    assert {"PIP_INDEX_URL", "LC_ALL"} <= set(localbuild.build_environment())
    monkeypatch.setenv(localbuild.PASS_SETTING, "CUSTOM")
    assert localbuild.build_environment()["CUSTOM"] == "1"


def test_a_build_dies_with_its_pass(tmp_path: Path, daemon_mark: str) -> None:
    """SIGKILL to the bot (no `finally` runs): bwrap's --die-with-parent ends the build."""
    code = (
        f"import sys; from pathlib import Path; from tests.adapters.test_sandbox import build; "
        f"build(Path(sys.argv[1]), 'setsid sleep {daemon_mark} </dev/null >/dev/null 2>&1 & sleep {daemon_mark}')"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while len(_running(f"sleep\0{daemon_mark}")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_running(f"sleep\0{daemon_mark}")) == 2, "the build did not start"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while _running(f"sleep\0{daemon_mark}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(f"sleep\0{daemon_mark}") == []


def test_the_bots_process_is_made_non_dumpable() -> None:
    code = (
        "import ctypes, ctypes.util; from bot.adapters.sandbox import undumpable; undumpable(); "
        "print(ctypes.CDLL(ctypes.util.find_library('c')).prctl(3, 0, 0, 0, 0))"
    )  # PR_GET_DUMPABLE
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"


# An upstream whose build fails as a ROCm extension's does, under a real `pip wheel`: its
# build backend (PEP 517, in the tree: it needs no setuptools) prints a while, then raises,
# at either step pip runs it for, its metadata or its wheel
BACKEND = """\
import os

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    if FAILS_AT == "metadata":
        raise RuntimeError("broken build: missing hipcc")
    os.makedirs(os.path.join(metadata_directory, "minicache-0.1.0.dist-info"))
    with open(os.path.join(metadata_directory, "minicache-0.1.0.dist-info", "METADATA"), "w") as stream:
        stream.write("Metadata-Version: 2.1\\nName: minicache\\nVersion: 0.1.0\\n")
    return "minicache-0.1.0.dist-info"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    for n in range(40):
        print(f"compiling kernel {n}", flush=True)
    raise RuntimeError("broken build: missing hipcc")
"""
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'


@pytest.mark.parametrize(("step", "verbose"), [("metadata", False), ("wheel", False), ("wheel", True)])
def test_a_failed_pip_build_is_said_by_its_cause_not_pips_last_lines(tmp_path: Path, step: str, verbose: bool) -> None:
    """pip ends a failed build with lines of its own that point up at the output ("See
    above for output", "This error originates from a subprocess"): the sentence quotes the
    line of the build's own output that says the error."""
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", "{out}"]
    command += ["-v", "."] if verbose else ["."]
    files = {"pyproject.toml": PYPROJECT, "backend.py": f"FAILS_AT = {step!r}\n" + BACKEND}
    result = build(tmp_path, command, files)
    log = result.log.read_text()
    assert not result.ok and "note: This error originates from a subprocess" in log, log
    assert result.message.startswith("build of ") and result.message.endswith(
        " failed (exit 1): RuntimeError: broken build: missing hipcc"
    ), log


# An upstream whose C extension does not compile, built by setuptools' build_ext (`setup.py
# build_ext`: the venv's setuptools makes no wheel without the `wheel` package) with the
# real gcc: gcc's `FILE:LINE:COL: error:` lines, then setuptools' `error: command
# '/usr/bin/gcc' failed with exit code 1`
SETUP_PY = """\
from setuptools import Extension, setup

setup(name="minicache", version="0.1.0", ext_modules=[Extension("minicache_ext", ["csrc/kernels.c"])])
"""
KERNELS_C = "int first(void) { return undeclared_a; }\nint second(void) { return undeclared_b; }\n"


def test_a_failed_compile_is_said_by_the_compilers_first_error(tmp_path: Path) -> None:
    command = [sys.executable, "setup.py", "build_ext", "--inplace"]
    result = build(tmp_path, command, {"setup.py": SETUP_PY, "csrc/kernels.c": KERNELS_C})
    log = result.log.read_text()
    assert not result.ok and "undeclared_b" in log and "failed with exit code 1" in log, log
    cause = result.message.split(" failed (exit 1): ", 1)[1].replace("‘", "'").replace("’", "'")  # gcc's UTF-8 quotes
    first, then = cause.split(", then ", 1)
    assert first == "csrc/kernels.c:1:26: error: 'undeclared_a' undeclared (first use in this function)", log
    # the compiler as the interpreter's sysconfig names it: gcc here, x86_64-linux-gnu-gcc for Debian's python3
    assert re.fullmatch(r"error: command '[^']*gcc' failed with exit code 1", then), log


# An upstream whose build runs the real cmake (as a setup.py's build_ext does, by
# subprocess.check_call) on a CMakeLists.txt that needs HIP: CMake's `CMake Error at
# CMakeLists.txt:2 (find_package):` and its indented message, then the traceback of the
# call that ran it
CMAKE_BACKEND = """\
import os, subprocess, tempfile

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    subprocess.check_call(["cmake", "-S", ".", "-B", tempfile.mkdtemp()])
"""
CMAKELISTS = "project(minicache LANGUAGES NONE)\nfind_package(hip REQUIRED)\n"


def test_a_failed_cmake_is_said_by_its_error(tmp_path: Path) -> None:
    files = {"pyproject.toml": PYPROJECT, "backend.py": CMAKE_BACKEND, "CMakeLists.txt": CMAKELISTS}
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-w",
        "{out}",
        ".",
    ]
    result = build(tmp_path, command, files)
    log = result.log.read_text()
    assert not result.ok and "subprocess.CalledProcessError: Command" in log, log
    cause = result.message.split(" failed (exit 1): ", 1)[1]
    assert cause.startswith(
        'CMake Error at CMakeLists.txt:2 (find_package): By not providing "Findhip.cmake" in CMAKE_MODULE_PATH'
    ), log

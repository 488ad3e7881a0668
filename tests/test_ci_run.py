"""The system half of `.ci/run` (`bash .ci/run system|install|check|python`): what it installs
on each release it supports, how it becomes root, and its one-sentence stop elsewhere. The
decisions run on made-up systems: an os-release file (`WHEELPIN_CI_OS_RELEASE`) and a PATH
of stand-ins for `id`, `dpkg`, `dpkg-query`, `apt-cache`, `apt-get`, `sudo` and `python3`
that record each call (`bash .ci/fresh bookworm` runs the real thing on a fresh Debian, by
hand). The check of the programs runs on this machine as it is."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "run"
BASH = shutil.which("bash") or "/bin/bash"
UNSUPPORTED = "the tests need Debian 12 or 13 or Ubuntu 22.04/24.04"

# os-release(5) as each release ships it (the lines the script reads, and a few beside them).
DEBIAN_12 = (
    'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
    "VERSION_CODENAME=bookworm\nID=debian\n"
)
DEBIAN_13 = 'PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nVERSION_ID="13"\nVERSION_CODENAME=trixie\nID=debian\n'
UBUNTU_2204 = (
    'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n'
    "UBUNTU_CODENAME=jammy\n"
)
UBUNTU_2404 = (
    'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n'
    "UBUNTU_CODENAME=noble\n"
)

LLVM = ["clang-19", "clang-tools-19", "llvm-19", "lld-19"]
COMMON = [*LLVM, "unzip", "docker-registry", "skopeo", "buildah", "busybox-static", "apache2-utils", "git", "npm"]


def everything(postgres: int) -> list[str]:
    """What a system with none of the packages gets, in the script's order."""
    return [*COMMON, f"postgresql-{postgres}", "util-linux", "bubblewrap", "gcc", "cmake"]


@dataclass
class System:
    """A made-up machine: its release, who runs the script, what dpkg says is installed,
    what apt does not know (`apt-cache policy` prints nothing for such a name), whether
    sudo, Node's npm and Python's ensurepip are there."""

    folder: Path
    os_release: str | None  # None: the file is not there
    uid: int = 0
    installed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    sudo: bool = True
    npm: bool = False
    ensurepip: bool = True
    python3: str = "3.11"  # its version; an older one comes with a python3.11 beside it, as on Ubuntu 22.04

    def fake(self, name: str, body: str) -> None:
        path = self.folder / "bin" / name
        path.write_text(
            f'#!{BASH}\necho "{name} $* | DEBIAN_FRONTEND=${{DEBIAN_FRONTEND-unset}}" >>{self.log}\n' + body + "\n"
        )
        path.chmod(0o755)

    @property
    def log(self) -> Path:
        return self.folder / "calls"

    def run(self, mode: str = "install") -> tuple[subprocess.CompletedProcess[str], list[str]]:
        bin_ = self.folder / "bin"
        bin_.mkdir(parents=True, exist_ok=True)
        self.log.write_text("")
        for tool in ("sed", "sort", "tail", "env"):  # the real ones the script pipes through
            target = shutil.which(tool)
            assert target, tool
            (bin_ / tool).symlink_to(target)
        installed = " ".join(self.installed)
        self.fake("id", f'[ "$1" = -u ] && echo {self.uid}')
        self.fake("dpkg", f'case " {installed} " in *" $2 "*) exit 0;; esac; exit 1')
        # dpkg-query -W -f '${db:Status-Status} ${Package}\n' PATTERN: a line per known match
        self.fake(
            "dpkg-query",
            f'found=1; for p in {installed}; do case "$p" in $4) echo "installed $p"; found=0;; '
            "esac; done; exit $found",
        )
        unknown = " ".join(self.unknown)
        self.fake(
            "apt-cache",
            f'case " {unknown} " in *" $2 "*) exit 0;; esac\n'
            'printf "%s:\\n  Installed: (none)\\n  Candidate: 1.0-1\\n  Version table:\\n" "$2"',
        )
        self.fake("apt-get", "exit 0")
        # `-c CODE`: the version test passes for 3.11+, the import of ensurepip as asked
        python = 'case "$2" in *version_info*) exit {old};; *ensurepip*) exit {ensurepip};; esac; exit 1'
        ensurepip = 0 if self.ensurepip else 1
        old = int(tuple(map(int, self.python3.split("."))) < (3, 11))
        self.fake("python3", python.format(old=old, ensurepip=ensurepip))
        if old:
            self.fake("python3.11", python.format(old=0, ensurepip=ensurepip))
        if self.npm:
            self.fake("npm", "exit 0")
        if self.sudo:
            # sudo runs the command in a fresh environment (sudoers(5) env_reset): only the
            # VAR=value words on its own command line get through (sudo(8), "ENVIRONMENT").
            self.fake(
                "sudo",
                'keep=(); while [[ "$1" == *=* ]]; do keep+=("$1"); shift; done\n'
                'exec env -i PATH="$PATH" "${keep[@]}" "$@"',
            )
        if self.os_release is not None:
            (self.folder / "os-release").write_text(self.os_release)
        done = subprocess.run(
            [BASH, str(SCRIPT), mode],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": str(bin_),
                "WHEELPIN_CI_OS_RELEASE": str(self.folder / "os-release"),
                "DEBIAN_FRONTEND": "readline",
            },
        )
        return done, self.log.read_text().splitlines()


def installs(calls: list[str]) -> list[list[str]]:
    """The package lists of the `apt-get install` calls."""
    return [shlex.split(call.split(" | ")[0])[5:] for call in calls if call.startswith("apt-get install")]


@pytest.mark.parametrize(
    ("os_release", "python3", "postgres", "venv"),
    [
        (DEBIAN_12, "3.11", 15, "python3-venv"),
        (DEBIAN_13, "3.13", 17, "python3-venv"),
        (UBUNTU_2404, "3.12", 16, "python3-venv"),
        (UBUNTU_2204, "3.10", 14, "python3.11-venv"),
    ],
    ids=["debian-12", "debian-13", "ubuntu-24.04", "ubuntu-22.04-with-apt.llvm.org"],
)
def test_an_empty_system_gets_every_package_with_its_releases_postgresql(
    tmp_path: Path, os_release: str, python3: str, postgres: int, venv: str
) -> None:
    system = System(tmp_path, os_release, python3=python3, ensurepip=False)
    done, calls = system.run()
    assert done.returncode == 0, done.stderr
    release = ["netavark"] if os_release == DEBIAN_13 else []  # its buildah needs it, and does not depend on it
    assert installs(calls) == [[*everything(postgres), *release, venv]]
    assert "apt-get update -qq | DEBIAN_FRONTEND=noninteractive" in calls


def test_the_postgresql_already_installed_is_kept(tmp_path: Path) -> None:
    """The tests start the newest /usr/lib/postgresql/*/bin: a 15 left from an upgrade to
    Ubuntu 24.04 does, so 16 is not installed beside it."""
    done, calls = System(tmp_path, UBUNTU_2404, installed=["postgresql-14", "postgresql-15", "git"]).run()
    assert done.returncode == 0, done.stderr
    assert installs(calls) == [[p for p in everything(15) if p not in ("postgresql-15", "git")]]


def test_a_system_with_everything_installs_nothing(tmp_path: Path) -> None:
    done, calls = System(tmp_path, DEBIAN_12, uid=1000, installed=everything(15), sudo=False).run()
    assert done.returncode == 0, done.stderr
    assert not [call for call in calls if call.startswith(("apt-get", "sudo"))]


def test_nodes_own_npm_and_a_python_without_ensurepip(tmp_path: Path) -> None:
    """npm is not installed from apt when Node's own is on PATH; ensurepip comes apart."""
    installed = [p for p in everything(15) if p not in ("npm", "bubblewrap")]
    done, calls = System(tmp_path, DEBIAN_12, installed=installed, npm=True, ensurepip=False).run()
    assert done.returncode == 0, done.stderr
    assert installs(calls) == [["bubblewrap", "python3-venv"]]


def test_a_user_installs_through_sudo_which_is_handed_debian_frontend(tmp_path: Path) -> None:
    """sudo resets the environment, so an exported DEBIAN_FRONTEND would not reach apt-get
    (the stand-in sudo drops it as sudo does): it goes on sudo's command line."""
    done, calls = System(tmp_path, UBUNTU_2404, uid=1000, installed=everything(16)[1:]).run()
    assert done.returncode == 0, done.stderr
    assert [call for call in calls if call.startswith(("sudo", "apt-get"))] == [
        "sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq | DEBIAN_FRONTEND=readline",
        "apt-get update -qq | DEBIAN_FRONTEND=noninteractive",
        "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-19 "
        "| DEBIAN_FRONTEND=readline",
        "apt-get install -y -qq --no-install-recommends clang-19 | DEBIAN_FRONTEND=noninteractive",
    ]


def test_root_needs_no_sudo(tmp_path: Path) -> None:
    done, calls = System(tmp_path, DEBIAN_12, installed=everything(15)[1:], sudo=False).run()
    assert done.returncode == 0, done.stderr
    assert installs(calls) == [["clang-19"]]
    assert not [call for call in calls if call.startswith("sudo")]


def test_a_user_without_sudo_is_told_in_one_sentence(tmp_path: Path) -> None:
    done, calls = System(tmp_path, DEBIAN_12, uid=1000, installed=everything(15)[1:], sudo=False).run()
    assert done.returncode == 1
    assert done.stderr == (
        "installing clang-19 needs root, and this user is not root and has no sudo: "
        "run bash .ci/run system as root once\n"
    )
    assert not [call for call in calls if call.startswith("apt-get")]


@pytest.mark.parametrize(
    "os_release",
    [
        'PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nVERSION_ID="11"\nID=debian\n',
        'PRETTY_NAME="Ubuntu 20.04.6 LTS"\nVERSION_ID="20.04"\nID=ubuntu\nID_LIKE=debian\n',
        'PRETTY_NAME="Fedora Linux 41 (Container Image)"\nVERSION_ID=41\nID=fedora\n',
        'PRETTY_NAME="Debian GNU/Linux trixie/sid"\nID=debian\n',  # testing and unstable have no VERSION_ID
    ],
    ids=["debian-11", "ubuntu-20.04", "fedora-41", "debian-sid"],
)
def test_an_unsupported_system_stops_in_one_sentence_before_anything(tmp_path: Path, os_release: str) -> None:
    done, calls = System(tmp_path, os_release, uid=1000).run("all")
    assert done.returncode == 1
    assert os_release is not None
    pretty = os_release.split('"')[1]
    assert done.stderr == f"{UNSUPPORTED}, not {pretty}; wheelpin itself needs only Python 3.11+\n"
    assert done.stdout == ""
    assert calls == []


def test_no_os_release_is_an_unsupported_system(tmp_path: Path) -> None:
    done, calls = System(tmp_path, None).run("all")
    assert done.returncode == 1
    assert done.stderr == (
        f"{UNSUPPORTED}, not a system without {tmp_path / 'os-release'}; wheelpin itself needs only Python 3.11+\n"
    )
    assert calls == []


def test_ubuntu_22_04_without_llvms_repository_says_where_llvm_19_is(tmp_path: Path) -> None:
    """Ubuntu 22.04's archive stops at LLVM 15: apt does not know clang-19 until LLVM's own
    repository is added."""
    done, calls = System(tmp_path, UBUNTU_2204, uid=1000, unknown=LLVM).run()
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "Ubuntu 22.04's archive has no LLVM 19" in done.stderr
    assert "https://apt.llvm.org" in done.stderr
    assert installs(calls) == []


def test_ubuntu_without_universe_is_told_to_enable_it(tmp_path: Path) -> None:
    done, calls = System(tmp_path, UBUNTU_2404, unknown=["docker-registry", "skopeo"]).run()
    assert done.returncode == 1
    assert done.stderr == (
        "apt has no docker-registry skopeo to install on Ubuntu 24.04.1 LTS (on Ubuntu they "
        "are in the universe component: add-apt-repository universe)\n"
    )
    assert installs(calls) == []


def test_the_check_finds_runuser_in_sbin_with_a_users_path() -> None:
    """On this machine as it is (.ci/run has installed everything): a user's PATH has no
    /usr/sbin, where runuser is, and the check finds it all the same."""
    assert not shutil.which("runuser", path="/usr/local/bin:/usr/bin:/bin")
    done = subprocess.run(
        [BASH, str(SCRIPT), "check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == done.stderr == ""


def test_a_user_without_subordinate_ids_is_told_how_to_get_them(tmp_path: Path) -> None:
    """A user's buildah maps the RUN steps of the tests' images from the user's
    subordinate ids (subuid(5)): the check says so before the tests fail on it. Here the
    stand-in `id` says the user is one /etc/subuid cannot name."""
    (tmp_path / "id").write_text(f'#!{BASH}\ncase "$1" in -u) echo 4242;; -un) echo wheelpin-no-such-user;; esac\n')
    (tmp_path / "id").chmod(0o755)
    done = subprocess.run(
        [BASH, str(SCRIPT), "check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{tmp_path}:/usr/local/bin:/usr/bin:/bin"},
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "wheelpin-no-such-user has no subordinate ids in /etc/subuid and /etc/subgid, which buildah needs"
    )
    assert done.stderr.count("\n") == 1


def test_the_postgresql_fixture_finds_runuser_outside_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """As root the tests start PostgreSQL through runuser, found in /usr/sbin even when the
    PATH does not hold that folder, as a user's does not."""
    from tests.fixtures.postgres import runuser

    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    assert runuser().endswith("/sbin/runuser")
    assert subprocess.run([runuser(), "--version"], capture_output=True, text=True).stdout.startswith("runuser")


@pytest.mark.parametrize(("python3", "python"), [("3.11", "python3"), ("3.13", "python3"), ("3.10", "python3.11")])
def test_the_tests_venv_is_made_with_a_python_of_3_11_or_newer(tmp_path: Path, python3: str, python: str) -> None:
    done, _ = System(tmp_path, UBUNTU_2204 if python3 == "3.10" else DEBIAN_12, python3=python3).run("python")
    assert (done.returncode, done.stdout, done.stderr) == (0, python + "\n", "")


def test_a_bwrap_that_cannot_sandbox_is_said_once_with_its_own_words(tmp_path: Path) -> None:
    """Ubuntu 24.04 lets a user's bwrap make a user namespace but not map its ids (AppArmor's
    unprivileged_userns profile): bwrap then fails as the stand-in does, in the words of
    https://github.com/RusNor/StartWine-Launcher/issues/37 (see also
    https://github.com/containers/bubblewrap/issues/632)."""
    (tmp_path / "bwrap").write_text(f"#!{BASH}\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    (tmp_path / "bwrap").chmod(0o755)
    done = subprocess.run(
        [BASH, str(SCRIPT), "check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "bwrap cannot make the sandbox the tests build in "
        "(bwrap: setting up uid map: Permission denied): as a user it needs"
    )
    assert done.stderr.count("\n") == 1

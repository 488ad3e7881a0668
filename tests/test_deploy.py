"""What can be tested of the deployment without a Docker engine or a cluster: the
Dockerfile (parsed with the BuildKit parser; its build step run on exactly what it
copies; its healthcheck run against a live server), the Kubernetes and compose files
(every setting they name exists, the probes hit real endpoints, the secret files are
where the settings say), and the App manifest (permissions, and events the bot handles)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import dockerfile
import yaml

from bot.adapters.github.forge import GitHubForge
from bot.adapters.github.sansio import work_for
from bot.app.service import Service
from bot.app.settings import Settings
from bot.app.webapp import HTTPServer
from tests.fixtures.webhooks import examples

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {f"WHEELPIN_{name.upper()}" for name in Settings.model_fields}


def instructions() -> list[Any]:
    return list(dockerfile.parse_file(str(ROOT / "Dockerfile")))


def test_the_dockerfile_is_pinned_non_root_and_serves() -> None:
    parsed = instructions()
    arg = next(i for i in parsed if i.cmd == "ARG" and i.value[0].startswith("PYTHON_IMAGE="))
    base = arg.value[0].split("=", 1)[1]
    assert re.fullmatch(r"docker\.io/library/python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base)
    froms = [i for i in parsed if i.cmd == "FROM"]
    assert [f.value[0] for f in froms] == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    final = parsed[parsed.index(froms[-1]) :]
    (user,) = [i for i in final if i.cmd == "USER"]
    assert user.value[0].split(":")[0] not in ("0", "root")
    (health,) = [i for i in final if i.cmd == "HEALTHCHECK"]
    assert "/healthz" in health.original
    (entry,) = [i for i in final if i.cmd == "ENTRYPOINT"]
    assert entry.json and list(entry.value) == ["wheelpin", "serve"]
    (cmd,) = [i for i in final if i.cmd == "CMD"]
    assert list(cmd.value) == ["--host", "0.0.0.0", "--port", "8080"]
    env = " ".join(" ".join(i.value) for i in final if i.cmd == "ENV")
    assert all(name in SETTINGS for name in re.findall(r"WHEELPIN_\w+", env))
    locked, own = [i for i in final if i.cmd == "RUN" and "pip install" in i.value[0]]
    assert "--require-hashes" in locked.value[0] and "requirements.lock" in locked.value[0]
    assert "--no-deps" in own.value[0]  # wheelpin itself; everything it needs came from the lock
    labels = " ".join(" ".join(i.value) for i in final if i.cmd == "LABEL")
    for label in ("source", "version", "revision", "licenses"):
        assert f"org.opencontainers.image.{label}" in labels
    from bot import __version__

    args = {i.value[0].split("=")[0]: i.value[0].partition("=")[2] for i in final if i.cmd == "ARG"}
    assert args["VERSION"] == __version__  # the default: the version's one place, bot/__init__.py


def test_the_image_s_lock_pins_every_dependency_with_a_hash(tmp_path: Path) -> None:
    """deploy/requirements.lock (deploy/lock.py) holds every dependency of wheelpin[postgres],
    each pinned with a sha256; pip takes it with --require-hashes for the image's Python."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    text = (ROOT / "deploy" / "requirements.lock").read_text()
    pinned = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+) \\\n    --hash=sha256:[0-9a-f]{64}$", text, re.MULTILINE))
    assert len(pinned) == len(re.findall(r"^[A-Za-z0-9]", text, re.MULTILINE))  # every entry has its hash
    locked = {canonicalize_name(name) for name in pinned}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        canonicalize_name(Requirement(r).name)
        for r in project["dependencies"] + project["optional-dependencies"]["postgres"]
    }
    assert wanted <= locked, wanted - locked
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
            "--platform",
            "manylinux2014_x86_64",
            "--platform",
            "manylinux_2_17_x86_64",
            "--platform",
            "manylinux_2_28_x86_64",
            "-d",
            str(tmp_path),
            "-r",
            str(ROOT / "deploy" / "requirements.lock"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(tmp_path.glob("*.whl"))) == len(pinned)


def test_the_build_step_makes_the_bots_wheel_from_what_the_dockerfile_copies(tmp_path: Path) -> None:
    parsed = instructions()
    context = tmp_path / "src"
    context.mkdir()
    for copy in (i for i in parsed if i.cmd == "COPY" and not any(f.startswith("--from") for f in i.flags)):
        *sources, _destination = copy.value
        for source in sources:
            target = context / source
            target.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(ROOT / source, target)
    (step,) = [i for i in parsed if i.cmd == "RUN" and "pip wheel" in i.value[0]]
    command = step.value[0].replace("/dist", str(tmp_path / "dist")).split()
    done = subprocess.run(
        [sys.executable, "-m", *command[command.index("pip") :]],
        cwd=context,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("wheelpin-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "wheelpin = bot.cli:main" in archive.read(entry_points).decode()
    assert "bot/app/service.py" in names and "bot/adapters/github/sansio.py" in names


def test_the_healthcheck_command_passes_against_a_live_server_and_fails_without_one(tmp_path: Path) -> None:
    (health,) = [i for i in instructions() if i.cmd == "HEALTHCHECK"]
    argv = json.loads(health.original.split("CMD", 1)[1])
    server = HTTPServer(Service(Settings(cache_dir=tmp_path), forge=GitHubForge(None)), port=0)
    server.start()
    try:
        live = [arg.replace(":8080/", f":{server.port}/") for arg in argv]
        assert subprocess.run([sys.executable, *live[1:]], timeout=30).returncode == 0
    finally:
        server.stop()
    assert subprocess.run([sys.executable, *live[1:]], capture_output=True, timeout=30).returncode != 0


def kubernetes(folder: str = "kubernetes") -> dict[str, dict[str, Any]]:
    documents = yaml.safe_load_all((ROOT / "deploy" / folder / "wheelpin.yaml").read_text())
    return {document["kind"]: document for document in documents if document}


def test_the_placeholder_secret_is_kept_out_of_the_folder_applied() -> None:
    for folder in ("kubernetes", "kubernetes-postgres"):
        assert [p.name for p in (ROOT / "deploy" / folder).iterdir()] == ["wheelpin.yaml"]
        assert "Secret" not in kubernetes(folder)


def commented_settings(path: Path) -> dict[str, str]:
    """The settings a file offers commented out (`# WHEELPIN_X: value`): held to the same checks."""
    return dict(re.findall(r"^\s*#\s*(WHEELPIN_\w+):\s*(\S+)", path.read_text(), re.MULTILINE))


def test_the_kubernetes_manifests() -> None:
    found = kubernetes()
    assert set(found) == {"ConfigMap", "PersistentVolumeClaim", "Deployment", "Service"}
    found["Secret"] = yaml.safe_load((ROOT / "deploy/secret.example.yaml").read_text())
    deployment = found["Deployment"]["spec"]
    assert deployment["replicas"] == 1 and deployment["strategy"] == {"type": "Recreate"}
    pod = deployment["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert container["args"] == ["--host", "0.0.0.0", "--port", str(ports["http"])]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    config = found["ConfigMap"]["data"]
    # the probes' own listener: never queued behind webhook clients on the main door
    assert int(config["WHEELPIN_HEALTH_PORT"]) == ports["health"] != ports["http"]
    annotations = found["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(ports["health"])
    env = {
        **config,
        **commented_settings(ROOT / "deploy/kubernetes/wheelpin.yaml"),
        **{item["name"]: item["value"] for item in container.get("env", [])},
    }
    assert set(env) <= SETTINGS, set(env) - SETTINGS
    assert {"WHEELPIN_REGISTRY_HOST", "WHEELPIN_REGISTRY_USERNAME", "WHEELPIN_REGISTRY_PASSWORD_FILE"} <= set(env)
    assert pod["terminationGracePeriodSeconds"] > float(config["WHEELPIN_SHUTDOWN_GRACE"])
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    secret_volume = next(v for v in pod["volumes"] if "secret" in v)
    assert secret_volume["secret"]["secretName"] == found["Secret"]["metadata"]["name"]
    secret_keys = set(found["Secret"]["stringData"])
    for name, value in env.items():
        if name.endswith("_FILE"):  # each secret file is a key of the Secret, where it is mounted
            folder, _, key = value.rpartition("/")
            assert folder == mounts[secret_volume["name"]] and key in secret_keys, name
    assert config["WHEELPIN_CACHE_DIR"] == mounts["cache"]
    cache = next(v for v in pod["volumes"] if v["name"] == "cache")  # kept across restarts, not an emptyDir
    assert cache["persistentVolumeClaim"]["claimName"] == found["PersistentVolumeClaim"]["metadata"]["name"]
    assert found["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteOnce"]  # with one replica, Recreate
    assert int(config["WHEELPIN_WEDGED_AFTER"]) > container["livenessProbe"]["periodSeconds"]
    service = found["Service"]["spec"]
    assert service["selector"] == deployment["selector"]["matchLabels"]
    assert service["ports"][0]["targetPort"] == "http"


def test_the_postgresql_variant_runs_replicas_that_share_one_database() -> None:
    """deploy/kubernetes-postgres/: N replicas, updated one at a time, a PodDisruptionBudget,
    the database's URL from the Secret (it holds a password); the rest as the one-replica
    variant's, where the two must agree."""
    found, single = kubernetes("kubernetes-postgres"), kubernetes()
    assert set(found) == {"ConfigMap", "Deployment", "PodDisruptionBudget", "Service"}
    secret = yaml.safe_load((ROOT / "deploy/secret.example.yaml").read_text())
    deployment = found["Deployment"]["spec"]
    assert deployment["replicas"] >= 2 and deployment["strategy"]["type"] == "RollingUpdate"
    assert deployment["strategy"]["rollingUpdate"]["maxUnavailable"] < deployment["replicas"]
    budget = found["PodDisruptionBudget"]["spec"]
    assert budget["selector"] == deployment["selector"] and budget["maxUnavailable"] < deployment["replicas"]
    pod = deployment["template"]["spec"]
    (container,) = pod["containers"]
    (database,) = [item for item in container["env"] if item["name"] == "WHEELPIN_DATABASE_URL"]
    reference = database["valueFrom"]["secretKeyRef"]
    assert reference["name"] == secret["metadata"]["name"] and reference["key"] in secret["stringData"]
    config = found["ConfigMap"]["data"]
    env = {
        **config,
        **commented_settings(ROOT / "deploy/kubernetes-postgres/wheelpin.yaml"),
        **{item["name"]: item.get("value", "") for item in container["env"]},
    }
    assert set(env) <= SETTINGS, set(env) - SETTINGS
    assert "WHEELPIN_INSTALLATION_IDS" not in env  # no hand sharding: the replicas share every installation
    cache = next(v for v in pod["volumes"] if v["name"] == "cache")
    assert "emptyDir" in cache  # a cache per pod; the state is in the database
    single_pod = single["Deployment"]["spec"]["template"]["spec"]
    (single_container,) = single_pod["containers"]
    for key in ("args", "ports", "livenessProbe", "readinessProbe", "securityContext", "volumeMounts"):
        assert container[key] == single_container[key], key
    assert pod["securityContext"] == single_pod["securityContext"]
    assert found["Service"]["spec"] == single["Service"]["spec"]


def test_the_compose_file() -> None:
    compose = yaml.safe_load((ROOT / "deploy/compose.yaml").read_text())
    service = compose["services"]["wheelpin"]
    assert (ROOT / "deploy" / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
    environment = {**service["environment"], **commented_settings(ROOT / "deploy/compose.yaml")}
    assert set(environment) <= SETTINGS
    assert service["user"].split(":")[0] != "0"
    assert compose["secrets"].keys() == set(service["secrets"])
    for name, value in environment.items():
        if name.endswith("_FILE"):
            assert value.removeprefix("/run/secrets/") in compose["secrets"], name
    assert service["environment"]["WHEELPIN_CACHE_DIR"] in " ".join(service["volumes"])


def test_the_app_manifest_asks_for_what_the_bot_uses_and_no_more() -> None:
    manifest = json.loads((ROOT / "deploy/github-app.json").read_text())
    assert manifest["default_permissions"] == {
        "contents": "write",
        "pull_requests": "write",
        "issues": "write",
        "actions": "write",
        "workflows": "write",
        "metadata": "read",
    }
    from bot.adapters.github.appmanifest import EVENTS, PERMISSIONS  # `wheelpin app create` asks for the same

    assert manifest["default_permissions"] == PERMISSIONS and manifest["default_events"] == EVENTS
    assert manifest["hook_attributes"]["url"].endswith("/webhook") and manifest["public"] is False
    handled = {
        event
        for event, payload in examples()
        if work_for(event, payload, base_branches=frozenset({"main", "master", "simple-tag"}))
    }
    subscribable = handled - {"installation", "installation_repositories"}  # sent to every App
    # the examples hold no wheelpin/* pull request nor a /wheelpin comment: those two by name
    assert set(manifest["default_events"]) == subscribable | {"pull_request", "issue_comment"}, handled


def test_the_deploy_guide_names_every_file_and_setting() -> None:
    guide = (ROOT / "deploy/README.md").read_text()
    for name in (
        "kubernetes/wheelpin.yaml",
        "kubernetes-postgres/wheelpin.yaml",
        "secret.example.yaml",
        "compose.yaml",
        "github-app.json",
        "github-action.yml",
        "Dockerfile",
    ):
        assert name in guide
    for setting in re.findall(r"`([A-Z_]+)`", guide):
        if setting.isupper() and "_" in setting and not setting.startswith("WHEELPIN_"):
            assert f"WHEELPIN_{setting}" in SETTINGS, setting


def test_the_version_is_said_in_one_place_and_the_changelog_follows_it() -> None:
    import importlib.metadata
    import tomllib

    from bot import __version__

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and project["dynamic"] == ["version"]  # read from bot/__init__.py
    assert importlib.metadata.version("wheelpin") == __version__
    changelog = (ROOT / "CHANGELOG.md").read_text()
    sections = re.findall(r"^## (\S+)", changelog, re.MULTILINE)
    assert sections[0] == "Unreleased" and __version__ in sections

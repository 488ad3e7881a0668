"""`wheelpin image publish --signing-key`, `image show` and `image verify` run as a user runs
them, against the real loopback registry (docker-registry 2.8: no referrers API, so the
fallback tag is what lists the documents)."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from tests.cli import wheelpin
from tests.fixtures.servers import Registry


def key_files(folder: Path, name: str, *, ed: bool = False) -> tuple[Path, Path, bytes]:
    key = ed25519.Ed25519PrivateKey.generate() if ed else ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    (folder / f"{name}.pem").write_bytes(pem)
    (folder / f"{name}.pub").write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return folder / f"{name}.pem", folder / f"{name}.pub", pem


def test_publish_signs_show_lists_and_verify_checks(
    registry: Registry, small_wheels: tuple[Path, Path], tmp_path: Path, env: dict[str, str]
) -> None:
    private, public, _ = key_files(tmp_path, "wheelpin")
    _, other, _ = key_files(tmp_path, "other", ed=True)
    ref = f"{registry.host}/prov-cli/demo:v1"
    done = wheelpin(
        "image",
        "publish",
        str(small_wheels[0]),
        "--to",
        ref,
        "--revision",
        "05fc77a0" * 5,
        "--source",
        "https://github.com/o/u",
        "--signing-key",
        str(private),
        "--json",
        env=env,
    )
    assert done.code == 0, done.stderr
    attached = done.json()["attached"]
    assert [(item["kind"], item["signed"], item["status"]) for item in attached] == [
        ("provenance", True, "attached"),
        ("sbom", False, "attached"),
    ]
    assert "BEGIN PRIVATE KEY" not in done.stderr  # the key is never logged
    digest = done.json()["digest"]

    again = wheelpin(
        "image",
        "publish",
        str(small_wheels[0]),
        "--to",
        ref,
        "--revision",
        "05fc77a0" * 5,
        "--source",
        "https://github.com/o/u",
        "--signing-key",
        str(private),
        env=env,
    )
    assert again.code == 0, again.stderr
    assert "attached: provenance (signed, present), sbom (unsigned, present)" in again.stdout

    shown = wheelpin("image", "show", ref, env=env)
    assert shown.code == 0, shown.stderr
    lines = [line.strip() for line in shown.stdout.splitlines() if line.strip().startswith("attached ")]
    assert lines == [
        f"attached provenance {attached[0]['digest']} application/vnd.dev.sigstore.bundle.v0.3+json, "
        "signed (DSSE in a Sigstore bundle)",
        f"attached sbom {attached[1]['digest']} application/vnd.cyclonedx+json, unsigned",
    ]
    assert wheelpin("image", "show", ref, "--json", env=env).json()["attached"][0]["signed"] is True

    good = wheelpin("image", "verify", ref, "--key", str(public), env=env)
    assert good.code == 0, good.stderr
    assert good.stdout.strip() == (
        f"{registry.host}/prov-cli/demo@{digest}: signed provenance verified "
        "(https://slsa.dev/provenance/v1), built from https://github.com/o/u@"
        + "05fc77a0" * 5
        + " by wheels given to `wheelpin image publish` on "
        + __import__("socket").gethostname()
    )
    by_digest = wheelpin(
        "image", "verify", f"{registry.host}/prov-cli/demo@{digest}", "--key", str(public), "--json", env=env
    )
    assert by_digest.code == 0 and by_digest.json()["verified"] is True

    wrong = wheelpin("image", "verify", ref, "--key", str(other), env=env)
    assert wrong.code == 1 and wrong.stdout == ""
    assert (
        "no attached provenance passes" in wrong.stderr
        and "no signature of the envelope was made by the key given" in wrong.stderr
    )
    assert len([line for line in wrong.stderr.splitlines() if line.strip()]) == 1


def test_an_unsigned_image_fails_verify_and_a_bad_key_stops_before_any_push(
    registry: Registry, small_wheels: tuple[Path, Path], tmp_path: Path, env: dict[str, str]
) -> None:
    _, public, pem = key_files(tmp_path, "wheelpin")
    ref = f"{registry.host}/prov-cli/unsigned:v1"
    assert wheelpin("image", "publish", str(small_wheels[1]), "--to", ref, env=env).code == 0
    unsigned = wheelpin("image", "verify", ref, "--key", str(public), env=env)
    assert unsigned.code == 1
    assert "carries no signed provenance (no Sigstore bundle is attached to it)" in unsigned.stderr

    broken = pem.replace(b"-----END PRIVATE KEY-----", b"")  # a PEM cut short, given in the environment
    refused = wheelpin(
        "image",
        "publish",
        str(small_wheels[1]),
        "--to",
        f"{registry.host}/prov-cli/never:v1",
        env={**env, "WHEELPIN_SIGNING_KEY": broken.decode()},
    )
    assert refused.code == 2
    assert "WHEELPIN_SIGNING_KEY: not a PEM private key" in refused.stderr
    assert pem.decode().splitlines()[1][:20] not in refused.stderr
    listed = wheelpin("image", "show", f"{registry.host}/prov-cli/never:v1", env=env)
    assert listed.code == 1  # nothing was pushed

    missing = wheelpin("image", "verify", ref, "--key", str(tmp_path / "nope.pub"), env=env)
    assert missing.code == 2 and "cannot read the public key" in missing.stderr


def test_a_signed_env_key_signs_into_a_layout_folder(
    small_wheels: tuple[Path, Path], tmp_path: Path, env: dict[str, str]
) -> None:
    _, public, pem = key_files(tmp_path, "wheelpin", ed=True)
    ref = f"oci:{tmp_path / 'images'}:v1"
    done = wheelpin(
        "image", "publish", str(small_wheels[0]), "--to", ref, env={**env, "WHEELPIN_SIGNING_KEY": pem.decode()}
    )
    assert done.code == 0, done.stderr
    assert wheelpin("image", "verify", ref, "--key", str(public), env=env).code == 0

"""How wheelpin speaks to an image's registry, so that a command a proposal prints for a
person to run ("Check by hand", core/proposal/text.py; the provenance's `image verify`)
speaks to it the same way. The registry client decides it (adapters/registrywire.reach_of:
plain HTTP to a loopback host, to one in WHEELPIN_INSECURE_REGISTRIES and to every host
with --plain-http; HTTPS without checking the certificate with --tls-verify=false); the
loop hands it to the proposal."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reach:
    plain_http: bool = False
    loopback: bool = False  # wheelpin speaks plain HTTP to it whatever it is told
    tls_verify: bool = True  # False: HTTPS without checking the certificate

    @property
    def skopeo_flags(self) -> str:
        """What `skopeo inspect` needs: skopeo requires HTTPS and a certificate it trusts
        unless told `--tls-verify=false` (skopeo-inspect(1): "Require HTTPS and verify
        certificates when talking to the container registry or daemon"), a loopback host
        too ("http: server gave HTTP response to HTTPS client")."""
        return " --tls-verify=false" if self.plain_http or not self.tls_verify else ""

    @property
    def wheelpin_flags(self) -> str:
        """What `wheelpin image …` run by hand needs: nothing for a loopback host (always
        plain HTTP), else the flag that made this process speak as it does, as the person
        running it has not this process's environment (WHEELPIN_INSECURE_REGISTRIES)."""
        if self.plain_http:
            return "" if self.loopback else " --plain-http"
        return "" if self.tls_verify else " --tls-verify=false"

"""TLS material of the lab Kubernetes API stand-in: a self-signed cluster CA and a
server certificate for the listen address, generated once under ``<home>/kube/``.

``kubeadm join`` pins the CA by the SHA-256 of its SubjectPublicKeyInfo
(:func:`bringup.kube.tokens.ca_cert_hash`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab import pki as ca


@dataclass(frozen=True)
class KubePki:
    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path


def ensure_pki(kube_dir: Path, hosts: list[str]) -> KubePki:
    """Create the CA and a server certificate valid for ``hosts`` (IPs or names) unless
    they exist; the server certificate is re-issued when a host is missing from it."""
    kube_dir.mkdir(parents=True, exist_ok=True)
    pki = KubePki(kube_dir / "ca.crt", kube_dir / "ca.key", kube_dir / "apiserver.crt",
                  kube_dir / "apiserver.key")
    if not (pki.ca_cert.exists() and pki.ca_key.exists()):
        pki.server_cert.unlink(missing_ok=True)  # a new CA invalidates the old server cert
    authority = ca.ensure_ca(pki.ca_cert, pki.ca_key, "kubernetes")
    wanted = sorted(set(hosts) | {"127.0.0.1", "localhost", "kubernetes", "kubernetes.default"})
    if pki.server_cert.exists() and pki.server_key.exists() and ca.cert_covers(pki.server_cert, wanted):
        return pki
    ca.issue_server_cert(authority, wanted, pki.server_cert, pki.server_key, common_name="kube-apiserver", days=365)
    return pki

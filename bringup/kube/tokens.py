"""Bootstrap tokens and the CA pin of ``kubeadm join``: pure functions.

Formats follow the Kubernetes bootstrap-token documentation: a token is
``[a-z0-9]{6}.[a-z0-9]{16}`` (public id . secret), stored as a Secret named
``bootstrap-token-<id>`` of type ``bootstrap.kubernetes.io/token`` in ``kube-system``;
the CA pin is ``sha256:`` + hex SHA-256 of the CA certificate's DER SubjectPublicKeyInfo.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
import string
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from bringup.errors import ConfigError

TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
TOKEN_TYPE = "bootstrap.kubernetes.io/token"  # noqa: S105  (a Secret type name, not a secret)
TOKEN_NAMESPACE = "kube-system"  # noqa: S105  (a namespace name)
#: the group kubeadm's own tokens carry, bound to node bootstrap RBAC by kubeadm init
KUBEADM_GROUP = "system:bootstrappers:kubeadm:default-node-token"
_ALPHABET = string.ascii_lowercase + string.digits


def generate_token() -> str:
    def pick(n: int) -> str:
        return "".join(secrets.choice(_ALPHABET) for _ in range(n))

    return f"{pick(6)}.{pick(16)}"


def split_token(token: str) -> tuple[str, str]:
    m = TOKEN_RE.match(token)
    if not m:
        # never echo the token: it is a credential
        raise ConfigError("bootstrap token is not of the form [a-z0-9]{6}.[a-z0-9]{16}",
                          hint="create one with create_bootstrap_token()")
    return m.group(1), m.group(2)


def token_secret(token: str, ttl: dt.timedelta, *, now: dt.datetime | None = None,
                 description: str = "bringup node join") -> dict[str, Any]:
    """The Secret manifest holding ``token``, valid for ``ttl`` from ``now``."""
    if ttl.total_seconds() <= 0:
        raise ConfigError(f"bootstrap token TTL must be positive, got {ttl}")
    tid, tsec = split_token(token)
    expires = (now or dt.datetime.now(dt.UTC)) + ttl
    return {
        "apiVersion": "v1", "kind": "Secret", "type": TOKEN_TYPE,
        "metadata": {"name": f"bootstrap-token-{tid}", "namespace": TOKEN_NAMESPACE},
        "stringData": {
            "description": description, "token-id": tid, "token-secret": tsec,
            "expiration": expires.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
            "auth-extra-groups": KUBEADM_GROUP,
        },
    }


def ca_cert_hash(ca_pem: bytes) -> str:
    """``sha256:<hex>`` of the (first) CA certificate's DER SubjectPublicKeyInfo."""
    try:
        cert = x509.load_pem_x509_certificate(ca_pem)
    except ValueError as exc:
        raise ConfigError(f"the cluster CA is not a PEM certificate: {exc}",
                          hint="check certificate-authority(-data) in the kubeconfig") from None
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()

"""Where the lab API stand-in keeps its files, its admin token and the kubeconfig
documents it writes (the admin's, and the CA-only one ``cluster-info`` publishes)."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Paths:
    home: Path

    @property
    def kube(self) -> Path:
        return self.home / "kube"

    @property
    def token(self) -> Path:
        return self.home / "secrets" / "kube-token"

    @property
    def kubeconfig(self) -> Path:
        return self.kube / "kubeconfig"

    @property
    def state(self) -> Path:
        return self.kube / "state.json"


def ensure_token(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def kubeconfig_doc(server: str, ca_pem: bytes, token: str | None, user: str = "lab-admin") -> dict[str, Any]:
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "preferences": {},
                           "clusters": [{"name": "bringup-lab", "cluster": cluster}],
                           "contexts": [], "users": [], "current-context": ""}
    if token is not None:
        doc["users"] = [{"name": user, "user": {"token": token}}]
        doc["contexts"] = [{"name": "bringup-lab", "context": {"cluster": "bringup-lab", "user": user}}]
        doc["current-context"] = "bringup-lab"
    return doc

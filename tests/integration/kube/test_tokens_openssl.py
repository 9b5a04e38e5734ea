"""The CA pin of kubeadm join, checked against the real openssl pipeline kubeadm documents."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

from bringup.kube import ca_cert_hash
from lab.kubeapi.pki import ensure_pki

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ca_pem(tmp_path_factory) -> bytes:
    return ensure_pki(tmp_path_factory.mktemp("pki"), ["127.0.0.1"]).ca_cert.read_bytes()


def test_ca_hash_matches_the_documented_openssl_pipeline(ca_pem, tmp_path):
    # kubeadm docs: openssl x509 -pubkey -in ca.crt | openssl rsa/pkey -pubin -outform der | sha256sum
    (tmp_path / "ca.crt").write_bytes(ca_pem)
    pub = subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in", str(tmp_path / "ca.crt")],
                         capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub,
                         capture_output=True, check=True).stdout
    assert ca_cert_hash(ca_pem) == "sha256:" + hashlib.sha256(der).hexdigest()

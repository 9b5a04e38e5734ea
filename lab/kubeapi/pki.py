"""TLS material of the lab Kubernetes API stand-in: a self-signed cluster CA and a
server certificate for the listen address, generated once under ``<home>/kube/``.

``kubeadm join`` pins the CA by the SHA-256 of its SubjectPublicKeyInfo
(:func:`bringup.kube.tokens.ca_cert_hash`).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class KubePki:
    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def ensure_pki(kube_dir: Path, hosts: list[str]) -> KubePki:
    """Create the CA and a server certificate valid for ``hosts`` (IPs or names) unless
    they exist; the server certificate is re-issued when a host is missing from it."""
    kube_dir.mkdir(parents=True, exist_ok=True)
    pki = KubePki(kube_dir / "ca.crt", kube_dir / "ca.key", kube_dir / "apiserver.crt",
                  kube_dir / "apiserver.key")
    now = dt.datetime.now(dt.UTC)
    if not (pki.ca_cert.exists() and pki.ca_key.exists()):
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=3650))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        _write_private(pki.ca_key, _key_pem(key))
        pki.ca_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pki.server_cert.unlink(missing_ok=True)
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), None)
    wanted = sorted(set(hosts) | {"127.0.0.1", "localhost", "kubernetes", "kubernetes.default"})
    if pki.server_cert.exists() and pki.server_key.exists():
        have = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
        san = have.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = {str(v) for v in san.get_values_for_type(x509.IPAddress)} | set(san.get_values_for_type(x509.DNSName))
        if set(wanted) <= names and have.not_valid_after_utc > now + dt.timedelta(days=1):
            return pki
    alt: list[x509.GeneralName] = []
    for h in wanted:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            alt.append(x509.DNSName(h))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write_private(pki.server_key, _key_pem(key))
    pki.server_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return pki

"""The lab CA and the BMCs' TLS certificates (``<lab_home>/pki``).

Clients verify the BMCs exactly as in production, with ``ca_bundle=<lab_home>/pki/ca.pem``.
Files are created once and reused.
"""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from lab import pki as ca

VALID_DAYS = 825


def ensure_ca(pki: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """Load ``pki/ca.pem`` + ``pki/ca.key``, creating them the first time."""
    return ca.ensure_ca(pki / "ca.pem", pki / "ca.key", "bringup lab BMC CA", path_length=0)


def ensure_bmc_cert(pki: Path, address: str) -> tuple[Path, Path]:
    """Certificate + key for one BMC address (IP SAN), issued by the lab CA."""
    cert_path, key_path = pki / "bmc" / f"{address}.pem", pki / "bmc" / f"{address}.key"
    if not (cert_path.exists() and key_path.exists()):
        ca.issue_server_cert(ensure_ca(pki), [address], cert_path, key_path, common_name=address,
                             days=VALID_DAYS)
    return cert_path, key_path

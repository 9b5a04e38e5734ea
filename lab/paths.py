"""Where the lab keeps its state (its home, and the settings file ``bringup lab up``
writes there), and its fixed loopback ports.

``python -m lab.paths config`` prints the lab's settings file: ``make demo`` hands it to
the demo as ``BRINGUP_CONFIG`` (the library has no default settings file of its own).
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
NETBOX_VERSION = "4.7.3"

#: Every fixed port the lab (and tests/ports.py) listens on lies below 32768, outside
#: Linux's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default): a
#: port inside it can be held at any moment as the local end of one of the thousands of
#: short client connections a run makes (NetBox, PostgreSQL, Redis), and a server
#: started then fails with "Address already in use" (it stopped a CI run's BMC simulator).
EPHEMERAL_LOW = 32768
PG_PORT = 25432
REDIS_PORT = 26379
NETBOX_PORT = 28080
PREFECT_PORT = 24200
KUBE_PORT = 26443
#: the web server the BMCs fetch install seeds from (inside the BMC simulator)
SEED_PORT = 28090
HOST = "127.0.0.1"


def lab_home() -> Path:
    """The lab's state folder (databases, venvs, logs, generated credentials, its settings).

    ``$BRINGUP_LAB_HOME``, else /var/lib/bringup-lab as root (not under /root: PostgreSQL
    runs as the postgres user and must be able to reach its data folder), else
    ``~/.local/share/bringup-lab``.
    """
    env = os.environ.get("BRINGUP_LAB_HOME")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/bringup-lab")
    return Path.home() / ".local/share/bringup-lab"


@dataclass(frozen=True)
class LabPaths:
    home: Path

    @classmethod
    def default(cls) -> LabPaths:
        return cls(lab_home())

    @property
    def run(self) -> Path:
        return self.home / "run"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def secrets(self) -> Path:
        return self.home / "secrets"

    @property
    def config(self) -> Path:
        return self.home / "config.yaml"

    @property
    def pg(self) -> Path:
        return self.home / "pg"

    @property
    def netbox(self) -> Path:
        return self.home / f"netbox-{NETBOX_VERSION}"

    @property
    def prefect(self) -> Path:
        return self.home / "prefect"

    def ensure(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        # the postgres user must traverse the home to reach pg/
        os.chmod(self.home, 0o755)
        for d in (self.run, self.logs):
            d.mkdir(exist_ok=True)
        self.secrets.mkdir(exist_ok=True)
        os.chmod(self.secrets, 0o700)

    def secret(self, name: str, *, length: int = 32, factory=None) -> str:
        """Read a generated secret, creating it (mode 0600) on first use."""
        path = self.secrets / name
        if not path.exists():
            self.ensure()
            value = factory() if factory else secrets.token_urlsafe(length)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(value + "\n")
        return path.read_text().strip()


if __name__ == "__main__":
    if sys.argv[1:] != ["config"]:
        sys.exit("usage: python -m lab.paths config  (prints the lab's settings file)")
    print(LabPaths.default().config)

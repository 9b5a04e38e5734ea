"""Where bringup finds its external systems: URLs and the *files* that hold credentials.

Settings never hold a secret inline; they name files (mode 0600) that do, so a settings
object can be logged or shown in ``lab status`` safely. The lab writes such a file for
itself; a real site writes its own and points ``BRINGUP_CONFIG`` at it.

The file is the one the caller names, else ``$BRINGUP_CONFIG``: the library knows no
default location (the lab's is the lab's business, see ``lab.paths``).
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bringup.errors import ConfigError
from bringup.localfiles import read_secret_file
from bringup.netbox.http_retry import MAX_INFLIGHT, OUTAGE_S
from bringup.netbox.lease import RENEW_EVERY_S
from bringup.yamlio import load_file, validation_error


def state_dir() -> Path:
    """The controller's own private state (runner folders, spooled evidence):
    ``$BRINGUP_STATE_DIR``, else ``$XDG_STATE_HOME/bringup``, else ``~/.local/state/bringup``.
    Never the system temp folder: what lands here can hold secrets (Ansible's extra vars)."""
    env = os.environ.get("BRINGUP_STATE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local/state") / "bringup"


#: the environment variable naming the operator who asks (the CLI's ``--operator`` sets it)
OPERATOR_ENV = "BRINGUP_OPERATOR"


def operator() -> str:
    """Who asked for an operator's action (a forced re-test, a repair), for the journal:
    ``$BRINGUP_OPERATOR``, else the OS user, else ``unknown``."""
    who = os.environ.get(OPERATOR_ENV, "").strip()
    if who:
        return who
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return "unknown"


def private_dir(path: Path) -> Path:
    """``path`` created (with its parents) and made 0700: only this user may look inside."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    site: str = ""
    netbox_url: str
    netbox_token_file: Path
    prefect_api_url: str = ""
    #: YAML mapping BMC address -> {username, password}, or a "default" entry
    bmc_credentials_file: Path | None = None
    #: CA bundle for the BMCs' TLS; None means the system store
    bmc_ca_bundle: Path | None = None
    bmc_insecure: bool = False
    bmc_port: int = 443
    ssh_user: str = "root"
    ssh_port: int = 22
    ssh_key_file: Path | None = None
    #: known_hosts with the host keys we expect; never auto-added to
    ssh_known_hosts: Path | None = None
    #: the key and known_hosts *on the nodes* that OpenMPI's ssh uses from the node launching
    #: the fabric test (absolute paths there; None: the same paths as ssh_key_file and
    #: ssh_known_hosts, as in the lab where the nodes share the controller's files)
    fabric_key_file: str | None = None
    fabric_known_hosts: str | None = None
    kubeconfig: Path | None = None
    fleet_profile: Path | None = None
    image: str = ""
    #: URL the BMCs fetch OS images from (virtual media); {name} is the manifest name
    media_url: str = ""
    #: folder the nodes' install seeds (NoCloud ISOs, one per node, holding its private host
    #: key) are written to; a web server reachable from the BMCs serves it at ``seed_url``
    seed_dir: Path | None = None
    #: URL a BMC fetches a node's seed from; {node} is the node's name
    seed_url: str = ""
    #: how long a node may take from the install's power-on to its first SSH answer (a real
    #: server's unattended install takes 10-20 minutes; the lab's is instant)
    install_wait_s: float = 300.0
    #: the deadline of a node's whole drain (cordon, then every eviction PodDisruptionBudgets
    #: allow, tried again while they refuse): past it the node stays cordoned in draining,
    #: held with the pods and budgets that block it, and the run fails. Never retried.
    drain_timeout_s: float = Field(default=300.0, gt=0)
    #: how long one NCCL run of the pool's fabric test may take; the node stops its own mpirun
    #: then, and a run that printed nothing in it (a launch that hung) is run once more.
    #: An 8G all_reduce over two 8-GPU nodes takes minutes on a real fabric
    fabric_nccl_timeout_s: float = Field(default=1800.0, gt=0)
    #: the file the nodes' NVIDIA device plugin reads its config from (its --config-file):
    #: the ``share`` step writes the pool's MIG strategy and time-slicing there
    device_plugin_config: str = "/etc/nvidia/k8s-device-plugin/config.yaml"
    #: results NetBox could not take wait here for the next run (None: <state dir>/spool)
    spool_dir: Path | None = None
    #: how long a NetBox write is retried through an outage before the result is spooled
    netbox_outage_s: float = OUTAGE_S  # the budget of bringup.netbox.http_retry
    #: requests one controller process has at NetBox at once; the rest wait their turn here,
    #: not in NetBox's queue against the read timeout (bringup.netbox.http_retry). Raise it
    #: with NetBox's worker processes
    netbox_max_inflight: int = Field(default=MAX_INFLIGHT, ge=1, le=256)
    #: seconds between the renewals of a node lease a run holds: each is a conditional
    #: write of the node in NetBox, so a long run of many nodes sends renewals/(this) a
    #: second; the lease lives this plus NetBox's worst cases (bringup.netbox.lease.ttl_for:
    #: 1,123.5 s at the default), which is how long a vanished controller keeps its nodes
    lease_renew_every_s: float = Field(default=RENEW_EVERY_S, ge=10.0, le=3600.0)
    #: what one GPU-hour of this fleet costs, in US dollars, whatever the node is doing:
    #: the hardware's depreciation plus power, cooling, space, network and support, per
    #: GPU and hour (the default is a round figure for an owned 8-GPU H100-class server:
    #: set your own). ``bringup cost`` turns the GPU-hours ledger into money with it.
    gpu_hour_usd: float = Field(default=2.0, ge=0)
    #: the firmware step applies the SKU policy's images to components that drift (off:
    #: drift is only found and recorded); a run's ``firmware_update`` parameter overrides it
    firmware_update: bool = False
    #: the site's health owner, the one system that cordons and taints nodes for health
    #: findings: ``bringup`` (its health watch does), or ``nvsentinel`` (NVIDIA's NVSentinel
    #: does; bringup records its findings in NetBox and never cordons or taints for them)
    health_owner: Literal["bringup", "nvsentinel"] = "bringup"
    #: how the site's GPU allocation keeps work off one bad GPU, so the node serves on the
    #: others (bringup/data/gpu_quarantine.yaml): ``device-plugin`` (the NVIDIA device plugin
    #: marks a GPU unhealthy itself on a critical XID; bringup checks allocatable dropped),
    #: ``dra`` (bringup places a DeviceTaintRule on the GPU's device), ``none`` (one bad GPU
    #: takes the node out)
    gpu_isolation: Literal["device-plugin", "dra", "none"] = "device-plugin"
    #: the pool acceptance job's site storage, as its pods see them (bringup.workload): the
    #: dataset sample, the base weights, and a folder it writes checkpoints to
    acceptance_data: str = ""
    acceptance_weights: str = ""
    acceptance_checkpoints: str = ""

    def spool_path(self) -> Path:
        return Path(self.spool_dir) if self.spool_dir else state_dir() / "spool"

    def netbox_token(self) -> str:
        return read_secret_file(self.netbox_token_file, "NetBox token file",
                                missing_hint="run `bringup lab up` or fix netbox_token_file in the settings").strip()


def config_path() -> Path | None:
    """The settings file named by ``$BRINGUP_CONFIG`` (None when it is unset or empty).
    The library has no default of its own: a front end that has one (the command line's
    lab, in a checkout) passes it or sets the variable."""
    env = os.environ.get("BRINGUP_CONFIG")
    return Path(env) if env else None


def load_settings(path: str | Path | None = None) -> Settings:
    """The settings in ``path``, else in ``$BRINGUP_CONFIG``."""
    p = Path(path) if path else config_path()
    if p is None:
        raise ConfigError("no settings file given",
                          hint="pass --config FILE or set BRINGUP_CONFIG to your site's settings file "
                               "(in a checkout, `bringup lab up` writes the lab's and the CLI finds it)")
    if not p.exists():
        raise ConfigError(f"no settings file at {p}",
                          hint="run `bringup lab up` for the lab, or set BRINGUP_CONFIG to your site's file")
    doc = load_file(p)
    try:
        return Settings.model_validate(doc.data or {})
    except ValidationError as exc:
        raise validation_error(exc, doc, "settings file") from None

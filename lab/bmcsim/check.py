"""Check the simulator against DMTF's Redfish Service Validator, offline.

``run_validator`` points the validator (PyPI ``redfish-service-validator``) at one
simulated BMC with the schema bundle in ``<repo>/../shared/redfish/csdl`` and
``--skipschema``, so nothing is downloaded. If the lab's simulator already answers on
that BMC's address it is used as is; otherwise one is started in this process for the
duration of the check. Credentials reach the validator through a 0600 config file, never
the command line (which any local user can read in ``ps``).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bringup.errors import ConfigError
from bringup.sku import load_skus, nic_counts
from lab.errors import LabError
from lab.fleet import FaultKind, FleetProfile, load_fleet

from .server import FleetSimulator, ensure_credentials

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = REPO_ROOT.parent / "shared" / "redfish" / "csdl"
#: faults that make a BMC unusable on purpose; the check picks a node without them
BROKEN = {FaultKind.BMC_500, FaultKind.BMC_401, FaultKind.BMC_TIMEOUT, FaultKind.BMC_SLOW,
          FaultKind.MEMBER_404, FaultKind.MAC_NOT_AVAILABLE}
SUMMARY_RE = re.compile(r"\|\s*PASS\s*\|\s*WARN\s*\|\s*FAIL\s*\|.*?\n.*?\n\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|",
                        re.DOTALL)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def _validator_command() -> list[str]:
    """The validator's own entry point, without its Excel report (validator_cli's docstring)."""
    try:
        import redfish_service_validator  # noqa: F401  (only: is it installed)
    except ImportError:
        raise LabError("the DMTF Redfish Service Validator is not installed",
                       hint="run `uv sync` (it is in the dev dependency group)") from None
    return [sys.executable, "-m", "lab.bmcsim.validator_cli"]


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def parse_summary(output: str) -> tuple[int, int, int]:
    """PASS, WARN, FAIL counts from the validator's summary table."""
    m = SUMMARY_RE.search(ANSI_RE.sub("", output))
    if not m:
        raise LabError("the Redfish Service Validator printed no summary table",
                       hint="read its output above; the service may not have answered")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def run_validator(fleet: FleetProfile | str | Path, home: str | Path, node_name: str | None = None,
                  *, schema_dir: Path = SCHEMA_DIR, timeout: float = 300.0) -> dict[str, Any]:
    """Validate one simulated BMC; returns ``{"pass", "warn", "fail", "report", "node"}``."""
    home = Path(home)
    skus = load_skus()
    if not isinstance(fleet, FleetProfile):
        fleet = load_fleet(fleet, nic_counts(skus))
    if node_name:
        node = fleet.node(node_name)
    else:
        healthy = [n for n in fleet.nodes if not any(n.has_fault(k) for k in BROKEN)]
        if not healthy:
            raise ConfigError("every node of the fleet has a BMC fault; name one with node_name")
        node = healthy[0]
    if not schema_dir.is_dir():
        raise ConfigError(f"no Redfish schema bundle at {schema_dir}",
                          hint="the DMTF CSDL files belong in ../shared/redfish/csdl")
    username, password = ensure_credentials(home)
    logdir = home / "logs" / "redfish-validator"
    logdir.mkdir(parents=True, exist_ok=True)
    sim = None
    if not _answers(node.bmc_address, node.bmc_port):
        sim = FleetSimulator(fleet, skus, home, power_delay=0.1, nodes=[node.name]).start()
    try:
        with tempfile.TemporaryDirectory(prefix="rfval-") as tmp:
            config = Path(tmp) / "config.ini"
            fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(f"[Authentication]\nuser = {username}\npassword = {password}\nauthtype = Session\n")
            cmd = [*_validator_command(), "--config", str(config),
                   "--rhost", f"https://{node.bmc_address}:{node.bmc_port}",
                   "--schema_directory", str(schema_dir), "--skipschema", "--logdir", str(logdir)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp,
                                      check=False)  # its exit status is judged from the summary
            except subprocess.TimeoutExpired:
                raise LabError(f"the Redfish Service Validator ran over {timeout:.0f}s against {node.name}",
                               hint="check that the BMC simulator answers") from None
    finally:
        if sim is not None:
            sim.stop()
    output = proc.stdout + proc.stderr
    passed, warned, failed = parse_summary(output)
    m = re.search(r"HTML Report:\s*(\S+)", output)
    report = m.group(1) if m else str(logdir)
    (logdir / "last-output.txt").write_text(ANSI_RE.sub("", output))
    return {"pass": passed, "warn": warned, "fail": failed, "report": report, "node": node.name}


if __name__ == "__main__":  # python -m lab.bmcsim.check FLEET HOME [NODE]
    result = run_validator(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    print(result)
    sys.exit(1 if result["fail"] else 0)

"""Provisioning steps over SSH (Ansible): version pinning, configuration and the burn-in
agent's run. Each function is one step and is handed its connections.

The flows call these one per task; none of them retries or sleeps on its own beyond
what the step itself means (waiting for a node to come back). A step that cannot tell
whether a node is good never reports it good: an SSH link that drops mid burn-in is an
error, not a pass.
"""

from __future__ import annotations

import base64
import io
import json
import shlex
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.acceptance.plan import plan_budget_s
from bringup.errors import AnsibleError, AnsibleSetupError, ParseError, SSHDropped
from bringup.provision.image import ImageManifest, pin_vars
from bringup.remote.access import SshAccess
from bringup.remote.ansible import PlaybookResult, run_playbook
from bringup.resources import agent_dir

AGENT_DIR = agent_dir()
#: where burnin.yml has the agent write its document, under the node's root
RESULT_FILE = "/var/lib/bringup/burnin/result.json"


# --- Ansible steps ---------------------------------------------------------------------
@dataclass
class NodeStep:
    """One node's outcome of a playbook step."""

    node: str
    ok: bool
    reason: str = ""
    unreachable: bool = False
    facts: dict[str, Any] = field(default_factory=dict)


def _steps(result: PlaybookResult) -> dict[str, NodeStep]:
    return {name: NodeStep(name, h.ok, h.reason(), h.unreachable, h.facts) for name, h in result.hosts.items()}


def pin_versions(hosts: dict[str, dict[str, Any]], manifest: ImageManifest, access: SshAccess, *,
                 timeout: int = 600) -> dict[str, NodeStep]:
    """playbooks/pin.yml: pin and verify the NVIDIA stack; a node whose versions differ
    from the manifest fails with both versions in its reason."""
    return _steps(run_playbook("pin.yml", hosts, pin_vars(manifest), access, timeout=timeout))


def configure(hosts: dict[str, dict[str, Any]], manifest: ImageManifest, access: SshAccess, *,
              extravars: dict[str, Any] | None = None, timeout: int = 900) -> dict[str, NodeStep]:
    """Pin and verify versions, then configure the nodes that passed (persistence mode,
    sysctl, kernel modules): playbooks/provision.yml, i.e. pin.yml then configure.yml in
    one ansible-playbook run (``timeout`` is the whole run's). A node that fails pinning
    keeps pin.yml's reason and facts and is not configured; a node that passes has the
    facts of both plays (``installed_driver``, ``pinned_image``, ``configured_*``)."""
    # the manifest's versions last: extra vars never change what is verified
    extra = {**(extravars or {}), **pin_vars(manifest)}
    return _steps(run_playbook("provision.yml", hosts, extra, access, timeout=timeout))


# --- burn-in ---------------------------------------------------------------------------
@dataclass
class BurninRun:
    """The agent's result document as fetched from the node (judging happens elsewhere).
    ``partial`` when the agent was stopped before its end (its time budget spent): the
    document then holds the checks that finished and names the one that did not."""

    node: str
    text: str
    document: dict[str, Any]
    rc: int | None
    timeout_s: int = 0

    @property
    def partial(self) -> bool:
        return bool(self.document.get("partial"))


def pack_agent(agent_dir: Path, dest: Path, plan: dict[str, Any] | None = None) -> Path:
    """A .tar.gz of the agent package (``burnin/``), without caches, and ``plan.json``
    beside it when a plan is given (burnin.yml moves it to the node's work folder): one
    transfer instead of two."""
    archive = dest / "burnin.tar.gz"

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name or info.name.endswith(".pyc") else info

    with tarfile.open(archive, "w:gz") as tar:
        tar.add(agent_dir, arcname="burnin", filter=keep)
        if plan is not None:
            data = (json.dumps(plan, indent=2, sort_keys=True) + "\n").encode()
            info = tarfile.TarInfo("plan.json")
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return archive


#: the line that ends the installer's payload (a here-document's end: never a base64 line)
INSTALLER_END = "BRINGUP_AGENT_END"


def agent_installer(archive: Path) -> Path:
    """``archive`` as a shell script that unpacks it into the folder given as its argument,
    written beside it. burnin.yml and sharing.yml send it with ``ansible.builtin.script``:
    one transfer and a shell on the node, where the unarchive module was two Python module
    runs (a stat, then the unpack), each costing the node about 0.3 s of CPU to unpack and
    compile Ansible's payload. base64 keeps the script text end to end."""
    payload = base64.encodebytes(archive.read_bytes()).decode("ascii")
    script = archive.with_name(archive.name.removesuffix(".tar.gz") + "-install.sh")
    script.write_text(
        "#!/bin/sh\n"
        "# the bringup agent, unpacked into the folder given (bringup.provision.ansible_steps.agent_installer)\n"
        "set -eu\n"
        'cd "$1"\n'
        f"base64 -d > .bringup-agent.tar.gz <<'{INSTALLER_END}'\n"
        f"{payload}{INSTALLER_END}\n"
        "tar -xzf .bringup-agent.tar.gz --no-same-owner\n"
        "rm -f .bringup-agent.tar.gz\n")
    return script


def _agent_play(playbook: str, node: str, host: dict[str, Any], extra: dict[str, Any], access: SshAccess,
                timeout: int, fetch: Path, *, dropped: str, missing: str, hint: str) -> tuple[Any, str]:
    """Run one of the agent's playbooks on ``node`` and read the document it fetched into
    ``fetch``: (the host's result, the text). A node that drops off SSH raises SSHDropped
    (not transient: what the agent did is unknown); no document raises AnsibleError."""
    hr = run_playbook(playbook, {node: host}, extra, access, timeout=timeout).hosts[node]
    if hr.unreachable:
        raise SSHDropped(f"node {node}: the SSH connection dropped " + dropped.format(why=hr.reason()), hint=hint)
    out = fetch / f"{node}.json"
    if not out.exists():
        raise AnsibleError(f"node {node}: " + missing.format(why=hr.reason()),
                           hint="see the agent's stderr above; the node is not passed")
    return hr, out.read_text()


def run_burnin(node: str, host: dict[str, Any], plan: dict[str, Any], access: SshAccess, *,
               timeout_s: int | None = None, agent_dir: Path = AGENT_DIR) -> BurninRun:
    """Copy the agent to ``node``, run ``plan`` there, fetch the result document.

    The agent is killed after ``timeout_s`` (default: the plan's own budget, see
    :func:`bringup.acceptance.plan.plan_budget_s`); it rewrites its document after every check,
    so a killed run still returns the checks that finished, marked ``partial``.

    Raises :class:`SSHError` (not transient) when the node drops off SSH during the run,
    and :class:`AnsibleError` when the agent leaves no document: either way the node's
    burn-in result is unknown, which is never a pass."""
    if not (agent_dir / "__main__.py").exists():
        raise AnsibleSetupError(f"{agent_dir} is not the burn-in agent package (no __main__.py)")
    if timeout_s is None:
        timeout_s = int(plan.get("budget_s") or plan_budget_s(plan))
    with tempfile.TemporaryDirectory(prefix="bringup-burnin-") as tmp_:
        tmp = Path(tmp_)
        fetch = tmp / "results"
        fetch.mkdir()
        extra: dict[str, Any] = {"burnin_installer": str(agent_installer(pack_agent(agent_dir, tmp, plan))),
                                 "burnin_timeout": int(timeout_s), "burnin_fetch_dir": str(fetch)}
        hr, text = _agent_play("burnin.yml", node, host, extra, access, int(timeout_s) + 180, fetch,
                               dropped="during burn-in ({why}); the burn-in result is unknown, so the node is "
                                       "not passed",
                               missing="burn-in produced no result document: {why}",
                               hint="check the node's network and console, then run burn-in again")
    try:
        document = json.loads(text)
    except ValueError:
        # a cut or garbled document is the node's evidence too: kept as text, and the judge
        # makes it an incomplete verdict naming the file and the parse error
        document = {"unparsed": text, "file": f"{node}:{RESULT_FILE}"}
    if not isinstance(document, dict):
        raise ParseError("the burn-in result is not a JSON object", path="$", source=f"node {node}")
    rc = hr.facts.get("burnin_rc")
    return BurninRun(node=node, text=text, document=document, rc=int(rc) if rc is not None else None,
                     timeout_s=int(timeout_s))


# --- GPU sharing -----------------------------------------------------------------------
def run_sharing(node: str, host: dict[str, Any], mig: dict[str, int] | None, device_plugin_config: str,
                access: SshAccess, *, config_path: str, agent_dir: Path = AGENT_DIR,
                timeout_s: int = 300) -> dict[str, Any]:
    """playbooks/sharing.yml on ``node``: the MIG geometry ``mig`` (profile -> count per GPU;
    None: MIG off) set through NVML and read back, and the device plugin's config written
    to ``config_path``. Returns the agent's document (judged by the caller); a node that
    drops off SSH or leaves no document raises, as for the burn-in."""
    args = "--mig-off" if mig is None else "--mig " + shlex.quote(json.dumps(mig, sort_keys=True))
    with tempfile.TemporaryDirectory(prefix="bringup-sharing-") as tmp_:
        tmp = Path(tmp_)
        fetch = tmp / "results"
        fetch.mkdir()
        extra = {"sharing_installer": str(agent_installer(pack_agent(agent_dir, tmp))), "sharing_args": args,
                 "device_plugin_config": device_plugin_config, "device_plugin_config_path": config_path,
                 "sharing_fetch_dir": str(fetch), "sharing_timeout": timeout_s}
        _, text = _agent_play("sharing.yml", node, host, extra, access, timeout_s + 120, fetch,
                              dropped="while setting GPU sharing ({why})",
                              missing="setting GPU sharing left no document: {why}",
                              hint="check the node's network, then run the node again")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"the sharing document is not JSON ({exc})", path="$", source=f"node {node}") from None
    if not isinstance(document, dict):
        raise ParseError("the sharing document is not a JSON object", path="$", source=f"node {node}")
    return document

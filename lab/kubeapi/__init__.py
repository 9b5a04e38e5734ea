"""Lab Kubernetes API stand-in: an HTTPS server speaking enough of the Kubernetes API for
the official Python client, the real ``kubectl`` and the ``kubeadm`` stand-in in ``bin/``,
with a stand-in kubelet (``kubelet.py``, ``nodeagent.py``) that runs pods on the lab's
nodes over SSH and keeps their node Leases, Events and NPD conditions.

Run it with ``python -m lab.kubeapi serve --home LAB_HOME [--fleet FLEET] [--listen 127.0.0.1:26443]``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: the kubeadm stand-in (stdlib-only Python script)
KUBEADM = Path(__file__).resolve().parent / "bin" / "kubeadm"


def install_kubeadm(node_root: Path) -> Path:
    """Put the kubeadm stand-in where an image puts tools (``<root>/usr/local/bin``, on
    a simulated node's PATH); returns its path."""
    dest = Path(node_root) / "usr" / "local" / "bin" / "kubeadm"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(KUBEADM, dest)
    dest.chmod(0o755)
    # the device plugin and GFD stand-in it registers the GPUs with
    shutil.copy2(KUBEADM.parent / "gpu_plugin.py", dest.parent / "gpu_plugin.py")
    return dest

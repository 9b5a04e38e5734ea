"""Stand-in kubelet: runs the pods bound to a node by executing their containers'
commands on that node over SSH, and reports what happened as the real kubelet does.

One loop inside the API process serves every node. A pod it runs is one bound to a node
(``spec.nodeName``) whose containers say what to run (``command``/``args``); other pods
keep the old stand-in behaviour (Running at once: the lab has no images to start).
For each such pod it:

* admits it against the node's allocatable extended resources (``nvidia.com/gpu``):
  a request the node cannot hold fails the pod with reason ``OutOf<resource>``;
* reports ``Running`` with container state ``running`` and Pulled/Created/Started
  Events, then runs each container's ``env``, command and args on the node with the
  lab SSH key, trusting only the node's key in the lab ``known_hosts``; the node's
  session environment carries the GPU stand-ins (NVML library, ``dcgmi`` and the other
  tools on its PATH), as a GPU container's would;
* keeps stdout and stderr interleaved, as a container runtime's log does, under
  ``<home>/kube/logs/<ns>/<pod>/<container>.log`` (``kubectl logs`` reads them);
* reports ``terminated`` with the exit code (reason ``Completed`` or ``Error``) and the
  phase ``Succeeded`` or ``Failed``.

Jobs and Kueue admission (``jobs.py``) run first in each tick: the pods they make are run
here like any other.

What the kubelet does for the node itself (cordon Events, node Lease, the Node Problem
Detector's conditions) is in ``nodeagent.py``, run from the same loop.

Limits, on purpose: containers of a pod run one after the other, each once (as with
``restartPolicy: Never``); a node that does not answer SSH leaves the pod Pending with a
Warning Event, retried every few seconds. Node address: the fleet's entry for the node
name, else the Node's InternalIP on the lab's SSH port (annotation
``lab.bringup.io/ssh-port`` overrides it).
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import shlex
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paramiko

from . import events
from .jobs import JobController
from .nodeagent import NodeAgent
from .resources import find
from .store import Store, now_rfc3339

log = logging.getLogger("lab.kubeapi.kubelet")

PODS = find("", "v1", "pods")
NODES = find("", "v1", "nodes")
SSH_PORT_ANNOTATION = "lab.bringup.io/ssh-port"
DEFAULT_SSH_PORT = 2222
RETRY_S = 5.0


def runs_here(pod: dict[str, Any]) -> bool:
    """Whether the stand-in kubelet executes this pod (else it is simulated as Running)."""
    spec = pod.get("spec") or {}
    return bool(spec.get("nodeName")) and any(c.get("command") or c.get("args")
                                               for c in spec.get("containers") or [])


#: set in every container's environment, as a runtime marks its containers: the GPU
#: stand-ins read it to answer as they would inside a container (fault container_nvml_broken)
CONTAINER_ENV = "BRINGUP_LAB_CONTAINER=1"


def container_argv(c: dict[str, Any]) -> str:
    """The shell line that runs one container: the runtime's mark and its plain ``env``
    values, then command+args."""
    env = [f"{e['name']}={e.get('value', '')}" for e in c.get("env") or [] if "name" in e and "valueFrom" not in e]
    argv = [*(c.get("command") or []), *(c.get("args") or [])]
    # "--" first: env reads NAME=VALUE words after it, then the command
    return shlex.join(["env", "--", CONTAINER_ENV, *env, *argv])


def supervised(cmdline: str) -> str:
    """The command line as the session runs it: the container in a process group of its
    own, killed whole when our side closes the channel (deadline, deletion), since
    without a terminal sshd leaves an abandoned command running."""
    # the shell's own job notices go to /dev/null; the container keeps the session's stderr (fd 3)
    return ("exec 3>&2 2>/dev/null; set -m; (" + cmdline + ") </dev/null 2>&3 & child=$!; "
            "(cat >/dev/null; kill -KILL -$child 2>/dev/null) & watcher=$!; "
            "wait $child; rc=$?; kill -KILL -$watcher 2>/dev/null; exit $rc")


def _quantity(v: Any) -> int:
    try:
        return int(str(v))
    except ValueError:
        return 0


def requested(pod: dict[str, Any], resource: str) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        r = c.get("resources") or {}
        total += _quantity((r.get("limits") or {}).get(resource, (r.get("requests") or {}).get(resource, 0)))
    return total


def admission_failure(pod: dict[str, Any], node: dict[str, Any],
                      others: list[dict[str, Any]]) -> tuple[str, str] | None:
    """``(reason, message)`` of the node rejecting the pod (extended resources only), else None."""
    st = node.get("status") or {}
    alloc = st.get("allocatable") or st.get("capacity") or {}
    for res in sorted({k for c in (pod.get("spec") or {}).get("containers") or []
                       for part in ("limits", "requests") for k in ((c.get("resources") or {}).get(part) or {})
                       if "/" in k}):
        want = requested(pod, res)
        used = sum(requested(o, res) for o in others)
        cap = _quantity(alloc.get(res, 0))
        if want and want + used > cap:
            return (f"OutOf{res}", (f"Pod was rejected: Node didn't have enough resource: {res}, "
                                    f"requested: {want}, used: {used}, capacity: {cap}"))
    return None


class Kubelet:
    def __init__(self, store: Store, home: Path, endpoints: dict[str, tuple[str, int]] | None = None,
                 connect: Callable[[str, int], paramiko.SSHClient] | None = None) -> None:
        self.store = store
        self.home = Path(home)
        self.endpoints = endpoints or {}
        self._connect = connect or self._ssh
        self.logs = self.home / "kube" / "logs"
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.busy: set[tuple[str, str]] = set()
        self.retry_at: dict[tuple[str, str], float] = {}
        self.agent = NodeAgent(store, self.endpoints)
        self.jobs = JobController(store)  # Jobs and Kueue admission: their pods are ours to run
        self._lock = threading.Lock()
        # admission is one pod at a time, as the kubelet's: two pods arriving together must
        # not each count the other and both be refused
        self._admit_lock = threading.Lock()
        self.admitted: set[str] = set()  # uids admitted and not yet Running
        store.hooks.append(self._on_write)

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self._lost_on_restart()
        threading.Thread(target=self._loop, name="kubelet", daemon=True).start()

    def _on_write(self, res, old, new) -> None:
        if res.plural == "pods" and new is None and old is not None:
            shutil.rmtree(self.logs / old["metadata"].get("namespace", "") / old["metadata"]["name"],
                          ignore_errors=True)
        if res.plural == "nodes":
            self.agent.on_node_write(old, new)
        if res.plural in ("pods", "nodes", "jobs", "localqueues", "clusterqueues"):
            self.wake.set()

    def _lost_on_restart(self) -> None:
        """Commands that ran when the API process stopped died with its SSH sessions."""
        pods, _ = self.store.list(PODS, None, lambda p: runs_here(p)
                                  and (p.get("status") or {}).get("phase") == "Running")
        for pod in pods:
            ts = now_rfc3339()
            for cs in pod["status"].get("containerStatuses") or []:
                if "terminated" not in (cs.get("state") or {}):
                    cs["state"] = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                                                  "message": "The container could not be located when the pod "
                                                             "was terminated", "finishedAt": ts}}
            pod["status"]["phase"] = "Failed"
            self.store.replace(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], pod, check_rv=False)

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.wake.wait(1.0)
            self.wake.clear()
            try:
                self.tick()
            except Exception:  # never let one bad object stop every node's pods
                log.exception("kubelet tick failed")

    def tick(self) -> None:
        self.jobs.tick()
        pods, _ = self.store.list(PODS, None, lambda p: runs_here(p)
                                  and (p.get("status") or {}).get("phase") == "Pending")
        now = time.monotonic()
        for pod in pods:
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            with self._lock:
                if key in self.busy or self.retry_at.get(key, 0) > now:
                    continue
                self.busy.add(key)
            threading.Thread(target=self._run_guarded, args=(key,), name=f"pod-{key[1]}", daemon=True).start()
        self.agent.tick()  # after the pods: its SSH probes of silent nodes must not delay them

    def _run_guarded(self, key: tuple[str, str]) -> None:
        try:
            self.run_pod(*key)
        except Exception:
            log.exception("pod %s/%s", *key)
        finally:
            with self._lock:
                self.busy.discard(key)

    # --- one pod ------------------------------------------------------------------------
    def endpoint(self, node: dict[str, Any]) -> tuple[str, int] | None:
        name = node["metadata"]["name"]
        if name in self.endpoints:
            return self.endpoints[name]
        addr = {a.get("type"): a.get("address") for a in (node.get("status") or {}).get("addresses") or []}
        if not addr.get("InternalIP"):
            return None
        port = (node["metadata"].get("annotations") or {}).get(SSH_PORT_ANNOTATION, DEFAULT_SSH_PORT)
        return addr["InternalIP"], int(port)

    def _ssh(self, address: str, port: int) -> paramiko.SSHClient:
        secrets = self.home / "secrets"
        client = paramiko.SSHClient()
        client.load_host_keys(str(secrets / "known_hosts"))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        client.connect(address, port=port, username=getpass.getuser(), key_filename=str(secrets / "id_ed25519"),
                       timeout=10, banner_timeout=10, auth_timeout=10, allow_agent=False, look_for_keys=False)
        return client

    def _update(self, ns: str, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        with self.store.lock:
            pod = self.store.find(PODS, ns, name)
            if pod is None:
                return None
            change(pod)
            return self.store.replace(PODS, ns, name, pod, check_rv=False)

    def log_path(self, ns: str, name: str, container: str) -> Path:
        return self.logs / ns / name / f"{container}.log"

    def run_pod(self, ns: str, name: str) -> None:
        pod = self.store.find(PODS, ns, name)
        if pod is None or not runs_here(pod) or (pod.get("status") or {}).get("phase") != "Pending":
            return
        uid = pod["metadata"]["uid"]
        try:
            self._admit_and_run(pod)
        finally:
            with self._admit_lock:
                self.admitted.discard(uid)

    def _admit_and_run(self, pod: dict[str, Any]) -> None:
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"]["uid"]
        node_name = pod["spec"]["nodeName"]
        node = self.store.find(NODES, "", node_name)
        if node is None:
            return  # bound to a node that never registered: no kubelet picks it up
        with self._admit_lock:  # what holds the node's resources: running pods and those admitted
            others, _ = self.store.list(PODS, None, lambda p: p["spec"].get("nodeName") == node_name
                                        and p["metadata"]["uid"] != uid
                                        and ((p.get("status") or {}).get("phase") == "Running"
                                             or p["metadata"]["uid"] in self.admitted))
            rejected = admission_failure(pod, node, others)
            if not rejected:
                self.admitted.add(uid)
        if rejected:
            reason, message = rejected

            def fail(p: dict[str, Any]) -> None:
                p["status"].update({"phase": "Failed", "reason": reason, "message": message})
            if self._update(ns, name, fail):
                events.record(self.store, pod, reason, message, type_="Warning", host=node_name)
            return
        ep = self.endpoint(node)
        try:
            if ep is None:
                raise OSError(f"node {node_name} has no InternalIP address")
            client = self._connect(*ep)
        except (OSError, paramiko.SSHException) as exc:
            with self._lock:
                self.retry_at[(ns, name)] = time.monotonic() + RETRY_S
            events.record(self.store, pod, "FailedCreatePodSandBox",
                          f"cannot reach node {node_name} over SSH: {exc}", type_="Warning", host=node_name)
            return
        # a pod of the same name from before (a state the API did not keep) leaves no log behind
        shutil.rmtree(self.logs / ns / name, ignore_errors=True)
        with contextlib.closing(client):
            self._run_containers(pod, node, client)

    def _run_containers(self, pod: dict[str, Any], node: dict[str, Any], client: paramiko.SSHClient) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        node_name = node["metadata"]["name"]
        host_ip = self.endpoint(node)[0]
        containers = pod["spec"].get("containers") or []
        started = now_rfc3339()

        def running(p: dict[str, Any]) -> None:
            p["status"].update({
                "phase": "Running", "startTime": started, "hostIP": host_ip, "podIP": host_ip,
                "conditions": [{"type": t, "status": "True", "lastTransitionTime": started}
                               for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                "containerStatuses": [_status(c, {"running": {"startedAt": started}}, ready=True)
                                      for c in containers]})
        if self._update(ns, name, running) is None:
            return
        for c in containers:
            cname = c.get("name", "c")
            path = f"spec.containers{{{cname}}}"
            events.record(self.store, pod, "Pulled", f'Container image "{c.get("image", "")}" already present on '
                          "machine", host=node_name, field_path=path)
            events.record(self.store, pod, "Created", f"Created container: {cname}", host=node_name, field_path=path)
            events.record(self.store, pod, "Started", f"Started container {cname}", host=node_name, field_path=path)
        results = []
        # activeDeadlineSeconds counts from the pod's start, across its containers
        end = time.monotonic() + (pod["spec"].get("activeDeadlineSeconds") or 24 * 3600)
        for c in containers:
            code = self._exec(client, ns, name, c, end)
            results.append((c, code, now_rfc3339()))
            if self.store.find(PODS, ns, name) is None:
                return  # deleted while it ran
            if code is None:
                break

        def done(p: dict[str, Any]) -> None:
            statuses = [_status(c, {"terminated": {"exitCode": 137 if code is None else code,
                                                   "reason": "Completed" if code == 0 else "Error",
                                                   "startedAt": started, "finishedAt": at}}, ready=False)
                        for c, code, at in results]
            ok = all(code == 0 for _, code, _ in results)
            p["status"]["phase"] = "Succeeded" if ok else "Failed"
            if any(code is None for _, code, _ in results):  # as the kubelet reports an active deadline
                p["status"].update({"reason": "DeadlineExceeded",
                                    "message": "Pod was active on the node longer than the specified deadline"})
            p["status"]["containerStatuses"] = statuses
            for cond in p["status"]["conditions"]:
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond.update({"status": "False", "reason": "PodCompleted", "lastTransitionTime": now_rfc3339()})
        self._update(ns, name, done)

    def _exec(self, client: paramiko.SSHClient, ns: str, name: str, c: dict[str, Any], end: float) -> int | None:
        """The command's exit code; None when the pod's deadline killed it (or 137 when the
        pod was deleted under it)."""
        path = self.log_path(ns, name, c.get("name", "c"))
        path.parent.mkdir(parents=True, exist_ok=True)
        chan = client.get_transport().open_session()
        chan.set_combine_stderr(True)  # one stream, in the order the command wrote it
        chan.exec_command(supervised(container_argv(c)))
        with open(path, "ab") as out:
            while True:
                if chan.recv_ready():
                    out.write(chan.recv(65536))
                    out.flush()
                    continue
                if chan.exit_status_ready() and not chan.recv_ready():
                    break
                if time.monotonic() > end:
                    chan.close()
                    return None
                if self.store.find(PODS, ns, name) is None:
                    chan.close()
                    return 137
                time.sleep(0.05)
            chan.settimeout(10)
            with contextlib.suppress(TimeoutError):
                while data := chan.recv(65536):  # what arrived between the last read and the exit status
                    out.write(data)
        return chan.recv_exit_status()


def _status(c: dict[str, Any], state: dict[str, Any], ready: bool) -> dict[str, Any]:
    return {"name": c.get("name", "c"), "image": c.get("image", ""), "imageID": "", "ready": ready,
            "restartCount": 0, "started": "running" in state, "state": state,
            "containerID": f"lab://{c.get('name', 'c')}"}

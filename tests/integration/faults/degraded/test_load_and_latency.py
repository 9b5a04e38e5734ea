"""Load and latency are faults like any other (issue #24, item 3): a commission under a CPU
hog on every core, with NetBox stalled (SIGSTOP) for 90 s in the middle, and with every
NetBox response delayed 2 s by a proxy, ends each node with the verdict it gets without
the fault, loses no lease of a live run and no result, and ends within a stated bound.

Each scenario walks the fewest nodes of flow8.yaml that show it (on the fault suite's copy,
flow8c: tests/integration/faults/degraded/conftest.py); the verdict each gets without the fault is
the one the whole-fleet commission test asserts (tests/integration/flows/test_commission.py):

- CPU hog, rack r01's fabric pair and its node with a missing GPU: the pair is admitted
  after its fabric test, the other is quarantined at discovery;
- NetBox stalled, ft-r02-n04 (XID 79 in its burn-in): quarantined after install and burn-in,
  the stall starting as the first journal entry after its install is sent, so that POST, the
  lease's renewals and the reads after it all meet a NetBox that accepts connections and
  answers nothing (and takes the POST when it runs again: it must not be written twice);
- NetBox slow, ft-r02-n03 (driver drift): quarantined once its installed image is read back.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("flow8c")]

STALL_S = 90.0
DELAY_S = 2.0
#: the stall scenario's lease renewal cadence: several renewals meet the stalled NetBox
RENEW_IN_STALL_S = 20.0


def _commission(nodes, config=None):
    from flows import runtime
    from flows.commission import commission
    runtime.forget()
    # batches=0: walked in this process (the stall's step wrapper must be in the walk's process)
    kwargs = {"config": str(config)} if config else {}
    return {r["node"]: r for r in commission(nodes=nodes, batches=0, **kwargs)}


def _assert_verdicts(rows, nb, want: dict[str, tuple[str, str]], burned_in: set[str]) -> None:
    """Each node's verdict and a word of its reason, in the run's rows and in NetBox; no
    reason may speak of a lease (a live run never loses its own)."""
    assert set(rows) == set(want), rows
    for node, (verdict, word) in want.items():
        row = rows[node]
        reason = " ".join(row["reasons"])
        assert row["verdict"] == verdict, (node, row)
        assert word.lower() in reason.lower(), (node, reason)   # "" is in every reason
        assert "lease" not in reason.lower(), (node, reason)
        rec = nb.nodes(names=[node])[0]
        stage = "active" if verdict == "admitted" else verdict
        assert rec.stage == stage, (node, rec.stage, rec.custom_fields.get("bringup_reason"))
        # one verdict document, and no journal entry written twice (a write that NetBox
        # took while its caller had given up on the answer is not written again)
        entries = [e["comments"] for e in nb.journal_entries(rec.id)]
        assert sum("kind=verdict part=1/" in c for c in entries) <= 1, (node, entries)
        if node in burned_in:   # its burn-in's document reached NetBox, once
            assert sum("kind=burnin part=1/" in c for c in entries) == 1, (node, entries)
        twice = {c.splitlines()[0] for c in entries if entries.count(c) > 1}
        assert not twice, (node, twice)


def _no_spooled_results(config, nodes) -> None:
    """Nothing of these nodes waits in the controller's spool: every result reached NetBox."""
    from bringup.netbox.spool import Spool
    from bringup.settings import load_settings
    pending = Spool(load_settings(Path(config)).spool_path()).pending()
    assert [(k.node, k.step) for k in pending if k.node in nodes] == []


# more than 120 s (2-5 minutes): three nodes of rack r01 discovered, two of them installed,
# burned in and tested across the fabric, with stress-ng on every core for the whole run
def test_a_rack_under_a_cpu_hog_on_every_core_gets_the_verdicts_it_gets_without_it(
        reseeded, flow_env, prefect_server):
    hog = subprocess.Popen(["stress-ng", "--cpu", "0", "--timeout", "1200s", "--quiet"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(1.0)
        assert hog.poll() is None, "stress-ng did not start"
        began = time.monotonic()
        rows = _commission(["ft-r01-n01", "ft-r01-n02", "ft-r01-n05"])
        took = time.monotonic() - began
        assert hog.poll() is None, "the hog ended before the run did"
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    _assert_verdicts(rows, reseeded, {"ft-r01-n01": ("admitted", ""), "ft-r01-n05": ("admitted", ""),
                                      "ft-r01-n02": ("quarantined", "gpu")},
                     burned_in={"ft-r01-n01", "ft-r01-n05"})
    _no_spooled_results(flow_env, rows)
    # bounded: about 80 s on a quiet machine, twice that with half the CPU; 15 minutes is a hang
    assert took < 900, took


def _netbox_group(srv, lab_paths) -> int:
    from lab import procs
    pid = procs.pid_of(lab_paths.run, srv.name)
    assert pid, f"{srv.name} is not running"
    return os.getpgid(pid)


# more than 120 s (3-5 minutes): one node installed and burned in, with NetBox stopped for 90 s
def test_netbox_stalled_for_90_s_mid_run_changes_no_verdict_and_loses_no_lease(
        reseeded, flow_env, flow_netbox, prefect_server, lab_paths, monkeypatch, tmp_path):
    from bringup import pipeline as stages
    from bringup.netbox.adapter import NetBox
    group = _netbox_group(flow_netbox, lab_paths)
    # renewals every 20 s: several of them meet the stall (at the default cadence, 300 s,
    # a one-node walk might renew only once, before or after it)
    settings = {**yaml.safe_load(flow_env.read_text()), "lease_renew_every_s": RENEW_IN_STALL_S}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(settings))
    real_install, real_post = stages.STEPS["install"], NetBox._post_journal
    installed: list[str] = []
    stalls: list[threading.Thread] = []

    def stall() -> None:
        try:
            time.sleep(STALL_S)
        finally:
            os.killpg(group, signal.SIGCONT)

    def install_then_arm(ctx, rec, params):
        result = real_install(ctx, rec, params)
        installed.append(rec.name)
        return result

    def first_entry_after_the_install_meets_a_stall(self, node_id, comments, kind):
        # the install's own record goes into a NetBox that accepts the POST and answers
        # nothing; it takes the POST when it runs again, after the caller gave up on it
        if installed and not stalls:
            os.killpg(group, signal.SIGSTOP)     # every NetBox process: master and workers
            t = threading.Thread(target=stall, name="netbox-stall", daemon=True)
            t.start()
            stalls.append(t)
        return real_post(self, node_id, comments, kind)

    monkeypatch.setitem(stages.STEPS, "install", install_then_arm)
    monkeypatch.setattr(NetBox, "_post_journal", first_entry_after_the_install_meets_a_stall)
    began = time.monotonic()
    try:
        rows = _commission(["ft-r02-n04"], config=config)
    finally:
        for t in stalls:
            t.join()
        os.killpg(group, signal.SIGCONT)
    took = time.monotonic() - began
    assert installed == ["ft-r02-n04"] and len(stalls) == 1, (installed, stalls)
    assert took > STALL_S
    _assert_verdicts(rows, reseeded, {"ft-r02-n04": ("quarantined", "79")}, burned_in={"ft-r02-n04"})
    _no_spooled_results(config, rows)
    # bounded: the walk (about a minute) plus the stall plus the calls it cut short
    assert took < 600, took


class DelayingProxy:
    """A TCP proxy on loopback in front of ``target``: each response's first bytes wait
    ``delay_s`` (requests are passed on at once; HTTP/1.1 clients send one request at a
    time on a connection, so each answer that starts after a request is one response)."""

    def __init__(self, host: str, port: int, delay_s: float) -> None:
        self.target, self.delay_s, self.delayed = (host, port), delay_s, 0
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="delaying-proxy", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        asked = threading.Event()

        def up() -> None:
            try:
                while data := client.recv(65536):
                    asked.set()
                    upstream.sendall(data)
            except OSError:
                pass
            finally:
                _shut(upstream)

        threading.Thread(target=up, daemon=True).start()
        try:
            while data := upstream.recv(65536):
                if asked.is_set():
                    asked.clear()
                    time.sleep(self.delay_s)
                    with self._lock:
                        self.delayed += 1
                client.sendall(data)
        except OSError:
            pass
        finally:
            _shut(client)

    def close(self) -> None:
        self._closed = True
        self._server.close()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


# more than 120 s (3-5 minutes): one node discovered, set up and installed, every one of
# its NetBox calls answered 2 s late
def test_netbox_slow_by_2_s_a_response_changes_no_verdict(reseeded, flow_env, flow_netbox, prefect_server,
                                                         tmp_path):
    from urllib.parse import urlsplit
    url = urlsplit(flow_netbox.url)
    proxy = DelayingProxy(url.hostname, url.port, DELAY_S)
    settings = yaml.safe_load(flow_env.read_text())
    settings["netbox_url"] = f"http://127.0.0.1:{proxy.port}"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(settings))
    began = time.monotonic()
    try:
        rows = _commission(["ft-r02-n03"], config=config)
    finally:
        proxy.close()
    took = time.monotonic() - began
    assert proxy.delayed >= 20, proxy.delayed        # the run's calls went through the proxy
    _assert_verdicts(rows, reseeded, {"ft-r02-n03": ("quarantined", "570.86.15")}, burned_in=set())
    _no_spooled_results(config, rows)
    # bounded: each call's 2 s plus the walk's own time; 15 minutes is a hang
    assert took < 900, (took, proxy.delayed)

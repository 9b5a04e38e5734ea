"""The controller's mistake is never the node's fault (issue #13, defect 2).

Each test walks a real step function (``bringup.pipeline``) through the real lifecycle
engine, with the controller's side broken the way an operator breaks it: a wrong BMC
password in our credentials file, an SSH private key of mode 0644, settings that lack a
file, the Kubernetes API unreachable. The node must stay in its stage with the reason
(``held in <stage>: ...``), never be quarantined, never be cordoned, and the error must
reach the orchestrator, which fails the run (``flows.walk.RunFailed``).
"""

from __future__ import annotations

import base64
import json
import sys
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from lifecycle_fakes import MemoryRecords

from bringup import errors
from bringup.context import Context
from bringup.lifecycle.engine import Lifecycle, State
from bringup.netbox.adapter import NodeRecord
from bringup.pipeline import STEPS
from bringup.redfish.bmc import Bmc
from bringup.redfish.session import Reply
from bringup.settings import Settings
from bringup.sku import load_skus

SKU = load_skus()["hgx-h100-80gb"]
# the simulated BMC in-process, as the Redfish unit tests use it
if str(Path(__file__).resolve().parents[1] / "redfish") not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redfish"))


class NodeRecords(MemoryRecords):
    """In-memory records whose nodes are :class:`NodeRecord` values, as the real steps read them."""

    def node(self, name: str) -> NodeRecord:
        n = super().node(name)
        return NodeRecord(id=1, name=n.name, site="t", rack=n.rack, status=n.status, stage=n.stage, sku=SKU,
                          pool={"name": "p"}, macs={}, bmc_address="127.0.0.9", address="127.0.0.8", serial="",
                          custom_fields=n.custom_fields, url="", tags=n.tags)


def write_key(path: Path, mode: int) -> Path:
    key = Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption())
    path.write_bytes(key)
    path.chmod(mode)
    return path


@pytest.fixture
def site(tmp_path):
    """A controller's settings with every file in place and right (mode 0600)."""
    token = tmp_path / "netbox-token"
    token.write_text("t\n")
    creds = tmp_path / "bmc.yaml"
    creds.write_text("default: {username: admin, password: pw}\n")
    creds.chmod(0o600)
    known = tmp_path / "known_hosts"
    known.write_text("")
    values = {"netbox_url": "http://netbox.invalid", "netbox_token_file": token, "bmc_credentials_file": creds,
              "bmc_insecure": True, "ssh_key_file": write_key(tmp_path / "id_ed25519", 0o600),
              "ssh_known_hosts": known, "kubeconfig": tmp_path / "kubeconfig"}
    return values


def engine(ctx: Context, *names: str, stage: str = "planned", **fields):
    rec = NodeRecords(*names)
    for n in rec.nodes.values():
        n.stage = stage
        n.custom_fields.update(fields)
    isolated: list[str] = []
    lc = Lifecycle(steps={name: partial(fn, ctx) for name, fn in STEPS.items()}, records=rec,
                   on_quarantine=lambda node, reason: isolated.append(node.name) or "cordoned")
    return lc, rec, isolated


def assert_held(rec: NodeRecords, isolated: list[str], stage: str, *words: str) -> None:
    n = rec.nodes["n1"]
    assert n.stage == stage and n.status == "planned", (n.stage, n.status)
    assert "bringup-quarantine" not in n.tags and isolated == []
    reason = n.custom_fields["bringup_reason"]
    assert reason.startswith(f"held in {stage}: "), reason
    for w in words:
        assert w in reason, (w, reason)
    assert all(w["stage"] is None for _n, w in rec.writes)    # the stage was never written


# --- the BMC: a wrong password in our credentials file ---------------------------------------
def cred_session(service, creds):
    """The simulated BMC's service in-process (no socket), sent *these* credentials: a
    wrong password gets the BMC's own 401, mapped by the real status map."""
    from inproc import Clock, InProcSession

    class CredSession(InProcSession):
        def call(self, method, path, *, body=None, args=None) -> Reply:
            basic = base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
            r = self.service.handle(method, path.split("?")[0], urlencode(args or {}),
                                    {"authorization": f"Basic {basic}"},
                                    json.dumps(body).encode() if body is not None else b"")
            return Reply(r.status, None if isinstance(r.body, str) else r.body,
                         {k.lower(): v for k, v in r.headers.items()})

        def login(self):
            self.request("POST", "/redfish/v1/SessionService/Sessions",
                         body={"UserName": creds.username, "Password": creds.password})
            return super().login()

    return CredSession(service, Clock())


@pytest.fixture
def bmc_sim(monkeypatch):
    """Every Redfish connection of the library goes to one simulated BMC (user admin,
    password pw) in-process; ``faults`` of the fleet profile can be set per test."""
    from inproc import sim

    made = {}

    def connect(address, creds, port=443, ca_bundle=None, insecure=False, timeout=10.0, retries=3, quirks=None,
                for_inventory=False):
        service, _clock = sim(faults=made.get("faults", "[]"))
        bmc = Bmc(address, creds, insecure=True, retries=0, quirks=quirks,
                  system_levels=3 if for_inventory else 1)
        bmc.session = cred_session(service, creds)
        return bmc.login()

    monkeypatch.setattr("bringup.discovery.crawl.connect", connect)
    monkeypatch.setattr("bringup.redfish.connect", connect)
    return made


def test_a_wrong_bmc_password_in_our_file_holds_the_node_at_discovery(site, bmc_sim):
    site["bmc_credentials_file"].write_text("default: {username: admin, password: wrong}\n")
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1")
    with pytest.raises(errors.RedfishAuthError, match="refused our credentials"):
        lc.run_step("n1", State.PLANNED, "discover")
    assert_held(rec, isolated, "planned", "discover:", "bmc_credentials_file")


def test_the_right_password_discovers_with_the_same_fakes(site, bmc_sim):
    """The control of the test above: only the password differs, and the node moves on."""
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, _isolated = engine(ctx, "n1")
    assert lc.run_step("n1", State.PLANNED, "discover").state == "discovered"
    assert rec.nodes["n1"].stage == "discovered"


def test_one_bmc_refusing_what_others_accept_is_held_too(site, bmc_sim):
    """Decided (see RedfishAuthError): a 401 is never the node's hardware. The BMC's
    account is fixed in our file or on the BMC by an operator; the server is not failed."""
    bmc_sim["faults"] = "[{kind: bmc_401}]"
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1")
    with pytest.raises(errors.RedfishAuthError):
        lc.run_step("n1", State.PLANNED, "discover")
    assert_held(rec, isolated, "planned")


def test_a_bug_of_ours_during_discovery_holds_the_node(site, monkeypatch):
    def broken(address, creds, **kw):
        raise AttributeError("'Session' object has no attribute 'expand_args'")
    monkeypatch.setattr("bringup.discovery.crawl.connect", broken)
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1")
    with pytest.raises(errors.ControllerFault, match="inside bringup"):
        lc.run_step("n1", State.PLANNED, "discover")
    assert_held(rec, isolated, "planned", "expand_args")


def test_a_wrong_bmc_password_holds_the_node_at_its_bios_step(site, bmc_sim):
    site["bmc_credentials_file"].write_text("default: {username: admin, password: wrong}\n")
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1", stage="discovered")
    with pytest.raises(errors.RedfishAuthError):
        lc.run_step("n1", State.DISCOVERED, "bios")
    assert_held(rec, isolated, "discovered", "bios:")


def test_a_credentials_file_others_can_read_is_refused_and_holds_the_node(site, bmc_sim):
    site["bmc_credentials_file"].chmod(0o644)
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1")
    with pytest.raises(errors.SecretFileError, match="chmod 600"):
        lc.run_step("n1", State.PLANNED, "discover")
    assert_held(rec, isolated, "planned", "readable by other users")


def test_a_missing_credentials_file_is_a_secret_file_error(tmp_path):
    from bringup.redfish.credentials import load_credentials
    with pytest.raises(errors.SecretFileError, match="bmc_credentials_file"):
        load_credentials(tmp_path / "nowhere.yaml")


# --- SSH: our private key with mode 0644 --------------------------------------------------
def test_a_private_key_others_can_read_is_refused_where_it_is_read(tmp_path):
    from bringup.remote.ssh import check_private_key
    good = write_key(tmp_path / "good", 0o600)
    assert check_private_key(good) == good
    bad = write_key(tmp_path / "bad", 0o644)
    with pytest.raises(errors.SecretFileError, match="mode 0644") as exc:
        check_private_key(bad)
    assert exc.value.controller_fault and "chmod 600" in str(exc.value)
    (tmp_path / "junk").write_text("not a key\n")
    (tmp_path / "junk").chmod(0o600)
    with pytest.raises(errors.SecretFileError, match="not an SSH private key"):
        check_private_key(tmp_path / "junk")
    with pytest.raises(errors.SecretFileError, match="cannot read"):
        check_private_key(tmp_path / "missing")


def test_an_encrypted_private_key_is_refused(tmp_path):
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption

    from bringup.remote.ssh import check_private_key
    p = tmp_path / "enc"
    p.write_bytes(Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.OpenSSH,
                                                             BestAvailableEncryption(b"secret")))
    p.chmod(0o600)
    with pytest.raises(errors.SecretFileError, match="encrypted"):
        check_private_key(p)


def test_a_key_of_mode_0644_holds_the_node_at_configure(site):
    site["ssh_key_file"].chmod(0o644)
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1", stage="discovered")
    # without the check, ansible would start (a process: the unit-test guard fails it),
    # ssh would ignore the key and the node would be "unreachable", and quarantined
    with pytest.raises(errors.SecretFileError, match="0644"):
        lc.run_step("n1", State.DISCOVERED, "configure")
    assert_held(rec, isolated, "discovered", "configure:", "chmod 600")


class FakeKube:
    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail

    def node_state(self, name):
        from bringup.kube.models import NodeState
        if self.fail:
            raise self.fail
        return NodeState(name=name, exists=False)

    def join_command(self):
        from bringup.kube.models import JoinCommand
        return JoinCommand(endpoint="127.0.0.1:6443", token="abcdef.0123456789abcdef", ca_cert_hash="sha256:00")


PASSED = {"burnin_status": "pass", "burnin_last": "2026-01-01T00:00:00Z"}


def test_a_key_of_mode_0644_holds_the_node_at_join(site):
    site["ssh_key_file"].chmod(0o644)
    ctx = Context(Settings(**site), netbox=object())
    ctx.__dict__["kube"] = FakeKube()
    lc, rec, isolated = engine(ctx, "n1", stage="validating", **PASSED)
    with pytest.raises(errors.SecretFileError):
        lc.run_step("n1", State.VALIDATING, "join")
    assert_held(rec, isolated, "validating", "join:")


def test_settings_without_a_kubeconfig_hold_the_node_at_join(site):
    site.pop("kubeconfig")
    ctx = Context(Settings(**site), netbox=object())
    lc, rec, isolated = engine(ctx, "n1", stage="validating", **PASSED)
    with pytest.raises(errors.ConfigError, match="kubeconfig"):
        lc.run_step("n1", State.VALIDATING, "join")
    assert_held(rec, isolated, "validating", "join:")


# --- our services unreachable -----------------------------------------------------------------
def test_kubernetes_unreachable_at_join_is_retried_then_fails_the_run_never_the_node(site):
    ctx = Context(Settings(**site), netbox=object())
    ctx.__dict__["kube"] = FakeKube(errors.KubeTransientError("read node n1: API server unreachable"))
    lc, rec, isolated = engine(ctx, "n1", stage="validating", **PASSED)
    with pytest.raises(errors.KubeTransientError) as exc:
        lc.run_step("n1", State.VALIDATING, "join")
    # retried by the orchestrator (transient); once the retries are spent the walk holds
    # the node and fails the run, because the cluster is ours (a controller fault)
    assert exc.value.transient and exc.value.controller_fault
    assert rec.writes == [] and isolated == [] and rec.nodes["n1"].stage == "validating"


def test_waiting_for_ready_while_the_api_is_down_does_not_blame_the_node():
    """The API went away during the wait: "did not become Ready" would quarantine a node
    nobody could look at; it is the API server's error (transient, ours) instead."""
    from kubernetes import client as k8s

    from bringup.kube import KubeAdapter
    now = [0.0]
    kube = KubeAdapter(k8s.ApiClient(), sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0])

    def down(name):
        raise errors.KubeTransientError(f"read node {name}: API server unreachable")
    kube.node_state = down
    with pytest.raises(errors.KubeTransientError, match="could not tell whether it is Ready"):
        kube.wait_node_ready("n1", timeout=10)


@pytest.mark.parametrize("cls", [errors.SecretFileError, errors.ConfigError, errors.RedfishAuthError,
                                 errors.RedfishTLSError, errors.NetBoxUnavailable, errors.NetBoxAuthError,
                                 errors.NetBoxRequestError, errors.KubeAuthError, errors.KubeTransientError,
                                 errors.KubeTLSError, errors.AnsibleSetupError, errors.DrainBlocked])
def test_errors_of_our_side_are_controller_faults(cls):
    assert issubclass(cls, errors.ControllerFault)


@pytest.mark.parametrize("cls", [errors.SSHDropped, errors.HostKeyMismatch, errors.RedfishTaskError,
                                 errors.ParseError, errors.RedfishTimeoutError])
def test_errors_of_the_node_are_not(cls):
    assert not issubclass(cls, errors.ControllerFault)

"""Discovery and BMC actions against the fleet BMC simulator, one node per Redfish fault."""

from __future__ import annotations

import socket
import ssl
import threading
import time

import pytest

from bringup.discovery.crawl import discover
from bringup.errors import RedfishAuthError, RedfishError
from bringup.redfish import connect
from lab.bmcsim.expect import expected_nodes

# the session's BMC simulator (redfish/conftest.py) answers on fixed addresses: one worker runs its tests
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bmcsim")]


@pytest.fixture(scope="module")
def results(bmcsim):
    nodes = expected_nodes(bmcsim.fleet, bmcsim.skus)
    t0 = time.monotonic()
    out = discover(nodes, lambda _addr: bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, timeout=1.0, retries=1,
                   concurrency=16)
    return {r.name: r for r in out}, time.monotonic() - t0


def codes(result, severity=None):
    return sorted(f.code for f in result.findings if severity is None or f.severity == severity)


def test_healthy_node_passes_with_only_the_firmware_report(results):
    r = results[0]["ok-1"]
    assert r.ok and r.error is None
    assert codes(r) == ["firmware"]
    assert len(r.inventory.gpus) == 8 and len(r.inventory.nics) == 10
    assert r.to_dict()["ok"] is True and "OK" in r.to_markdown()


def test_missing_gpu(results):
    r = results[0]["missing-gpu"]
    assert not r.ok
    gpu = next(f for f in r.findings if f.code == "gpu_count")
    assert gpu.severity == "critical" and gpu.evidence["observed"] == 7 and "GPU5" not in gpu.evidence["present"]


def test_mac_mismatch(results, bmcsim):
    r = results[0]["mac-mismatch"]
    assert not r.ok
    missing = [f for f in r.findings if f.code == "nic_missing"]
    assert len(missing) == 1 and missing[0].evidence["interface"] == "cx3"
    assert missing[0].evidence["expected_mac"] == bmcsim.node("mac-mismatch").mac_of("cx3")
    assert "nic_extra" in codes(r, "warning")


def test_nic_swapped_is_critical(results):
    r = results[0]["nic-swapped"]
    swapped = sorted(f.evidence["interface"] for f in r.findings if f.code == "nic_swapped")
    assert swapped == ["cx1", "cx2"]
    assert not r.ok and "nic_missing" not in codes(r)   # every MAC is there, on the wrong ports


def test_bios_drift(results):
    r = results[0]["bios-drift"]
    drift = next(f for f in r.findings if f.code == "bios_drift")
    assert drift.evidence["attributes"] == {"IommuSupport": {"expected": "Disabled", "observed": "Enabled"}}


def test_ecc_off_is_critical(results):
    r = results[0]["ok-2"]
    assert not r.ok and "gpu_ecc_disabled" in codes(r, "critical")


def test_slow_bmc_is_read_slowly_but_read(results):
    r = results[0]["bmc-slow"]
    assert r.ok
    assert r.seconds >= 0.05 * r.requests * 0.9


@pytest.mark.parametrize("name,kind", [("bmc-timeout", "timeout"), ("bmc-500", "redfish"), ("bmc-401", "auth")])
def test_broken_bmcs_are_critical_findings(results, bmcsim, name, kind):
    r = results[0][name]
    assert not r.ok and r.inventory is None and r.error_kind == kind
    assert [(f.severity, f.code) for f in r.findings] == [("critical", f"bmc_{kind}")]
    assert bmcsim.node(name).bmc_address in r.findings[0].message
    assert bmcsim.creds.password not in r.to_markdown()


def test_http_500_message_and_401_type(bmcsim):
    with pytest.raises(RedfishError, match="HTTP 500") as err:
        connect(bmcsim.node("bmc-500").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, retries=1)
    assert err.value.transient
    with pytest.raises(RedfishAuthError, match="127.61.0.10"):
        connect(bmcsim.node("bmc-401").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, retries=3)


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_is_verified_by_default(bmcsim):
    addr = bmcsim.node("ok-1").bmc_address
    with pytest.raises(RedfishError, match="TLS verification failed"):
        connect(addr, bmcsim.creds, port=8443, retries=0)          # system CA store: lab CA unknown
    with connect(addr, bmcsim.creds, port=8443, insecure=True, retries=0) as bmc:
        assert bmc.system().Id == "1"


@pytest.mark.parametrize("cert_for,ok", [("127.0.0.1", True), ("127.0.0.2", False)])
def test_tls_checks_the_bmc_address_against_its_certificate(bmcsim, cert_for, ok):
    """A certificate from the right CA but for another address is refused (the shared TLS context
    must keep hostname checking on); the same server with the right certificate gets past TLS."""
    from lab.bmcsim import pki

    cert, key = pki.ensure_bmc_cert(bmcsim.home / "pki", cert_for)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:   # one TLS handshake, then a 404 to whatever is asked
            conn, _ = listener.accept()
            try:
                with ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(4096)
                    tls.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            except (ssl.SSLError, OSError):
                pass

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with pytest.raises(RedfishError) as err:
            connect(f"https://127.0.0.1:{port}", bmcsim.creds, ca_bundle=bmcsim.ca, retries=0, timeout=5)
        t.join(5)
    assert ("TLS verification failed" in str(err.value)) is not ok, str(err.value)


def test_expand_saves_requests(bmcsim):
    addr = bmcsim.node("ok-1").bmc_address
    counts = {}
    for expand in (True, False):
        with connect(addr, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, quirks={"expand": expand}) as bmc:
            inv = bmc.inventory()
            counts[expand] = bmc.request_count
        assert len(inv.gpus) == 8
    assert counts[True] * 2 < counts[False]


def _inventory(bmcsim, max_levels=None, **kw):
    with connect(bmcsim.node("ok-1").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, **kw) as bmc:
        if max_levels is not None:   # as a BMC that expands less deep would advertise it
            bmc.root.ProtocolFeaturesSupported["ExpandQuery"]["MaxLevels"] = max_levels
        inv = bmc.inventory()
    return inv.model_dump(), bmc.request_count


def test_inventory_prefetch_and_deep_expand_read_the_same_hardware(bmcsim):
    """Prefetching the system subtree at login and expanding chassis five levels deep change the
    request count, never what is read; a BMC with a shallower $expand gets the per-chassis path."""
    plain, n_plain = _inventory(bmcsim, quirks={"expand": False})
    shallow, n_shallow = _inventory(bmcsim, max_levels=3)
    deep, n_deep = _inventory(bmcsim)
    prefetched, n_prefetched = _inventory(bmcsim, for_inventory=True)
    assert plain == shallow == deep == prefetched
    assert len(plain["gpus"]) == 8 and len(plain["nics"]) == 10 and plain["bios"] and plain["firmware"]
    # root, login, Systems, Managers, Chassis, UpdateService, logout
    assert n_prefetched == 7
    assert n_prefetched < n_deep < n_shallow < n_plain


def test_apply_bios_reboots_and_reads_back(bmcsim):
    sku = bmcsim.skus["hgx-h200-141gb"]
    with connect(bmcsim.node("bios-drift").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca) as bmc:
        before = bmc.bios_attributes()
        assert before["IommuSupport"] == "Enabled"
        result = bmc.apply_bios(sku.bios, timeout=30)
        assert result.ok and result.rebooted
        assert bmc.bios_attributes()["IommuSupport"] == "Disabled"
        assert bmc.system().PowerState == "On"


def test_bios_not_applied_is_reported(bmcsim):
    sku = bmcsim.skus["hgx-h200-141gb"]
    with connect(bmcsim.node("bios-stuck").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca) as bmc:
        result = bmc.apply_bios(sku.bios, timeout=30)
    assert not result.ok and result.rebooted
    assert list(result.not_applied) == ["NumaNodesPerSocket"]
    wanted, observed = result.not_applied["NumaNodesPerSocket"]
    assert wanted == sku.bios["NumaNodesPerSocket"] and observed != wanted


def test_power_transitions_wait_for_the_new_state(bmcsim):
    with connect(bmcsim.node("ok-1").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca) as bmc:
        t0 = time.monotonic()
        assert bmc.power("ForceOff", timeout=10) == "Off"
        assert time.monotonic() - t0 >= 0.25          # the simulator's --power-delay 0.3
        assert bmc.power("On", timeout=10) == "On"
        assert bmc.power("On", timeout=10) == "On"    # already on: no reset


def _post_over(bmc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sysdoc = bmc.system()
        if sysdoc.PowerState == "On" and sysdoc.BootProgress.LastState not in (
                "PrimaryProcessorInitializationStarted", "MemoryInitializationStarted", "PCIResourceConfigStarted"):
            return
        time.sleep(0.1)
    raise AssertionError("POST did not end")


def test_boot_once_media_and_reset_clear_the_override(bmcsim):
    with connect(bmcsim.node("mac-mismatch").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca) as bmc:
        assert "supermicro-boot-override-mode" in bmc.quirks.applied
        bmc.set_boot_once("Cd")
        boot = bmc.system().Boot
        assert (boot.BootSourceOverrideTarget, boot.BootSourceOverrideEnabled, boot.BootSourceOverrideMode) == \
            ("Cd", "Once", "UEFI")
        bmc.insert_media("https://images.example/ubuntu.iso")      # 202 + task monitor in the simulator
        assert bmc._cd_media()[1].Inserted
        bmc.power("ForceRestart", timeout=10)
        _post_over(bmc)
        assert bmc.system().Boot.BootSourceOverrideEnabled == "Disabled"   # one-time override consumed
        bmc.eject_media()
        assert not bmc._cd_media()[1].Inserted


def test_without_the_supermicro_quirk_the_boot_mode_reverts(bmcsim):
    with connect(bmcsim.node("ok-1").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca,
                 quirks={"boot_override_mode": None}) as bmc:
        bmc.set_boot_once("Pxe")
        assert bmc.system().Boot.BootSourceOverrideMode == "Legacy"
        bmc.clear_boot_override()


def test_a_session_that_times_out_is_replaced_once(bmcsim):
    import requests
    with connect(bmcsim.node("ok-1").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca) as bmc:
        key, location = bmc.session._client.get_session_key(), bmc.session._client.get_session_location()
        # what a BMC does to an idle session after its SessionTimeout (an OS install is long)
        gone = requests.delete(location if "://" in location else bmc.base_url + location,
                               headers={"X-Auth-Token": key}, verify=bmcsim.ca, timeout=10)
        assert gone.status_code in (200, 204)
        assert bmc.system().PowerState in ("On", "Off")
        assert bmc.session._client.get_session_key() not in (None, key)


def test_basic_auth_401_is_an_auth_error_not_a_relogin(bmcsim):
    with connect(bmcsim.node("ok-1").bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca) as bmc:
        bmc.session._session_auth = False          # as after the Basic fallback
        bmc.session._client.set_session_key("not-a-session")
        with pytest.raises(RedfishAuthError, match="refused our credentials"):
            bmc.system()

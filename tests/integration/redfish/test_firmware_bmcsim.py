"""Firmware policy end to end over HTTPS against the BMC simulator: drift found, the image
applied with SimpleUpdate, its Task followed, the staged image activated by a reset, the
inventory read back and the policy met."""

from __future__ import annotations

import pytest

from bringup.provision.firmware_policy import Member, check
from bringup.redfish import connect

# the session's BMC simulator (redfish/conftest.py) answers on fixed addresses: one worker runs its tests
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bmcsim")]


def bmc(bmcsim, name):
    return connect(bmcsim.node(name).bmc_address, bmcsim.creds, port=8443, ca_bundle=bmcsim.ca, timeout=5.0)


def members(b):
    return [Member(id=s.id, name=s.name, version=s.version, uri=s.uri) for s in b.firmware()]


@pytest.mark.parametrize(("name", "component", "member"), [("fw-drift", "GPU VBIOS", "GPU5_VBIOS"),
                                                           ("fw-drift-dell", "BIOS", "BIOS")])
def test_drift_is_found_and_a_simulated_update_fixes_it(bmcsim, name, component, member):
    rules = bmcsim.skus[bmcsim.node(name).sku].firmware
    with bmc(bmcsim, name) as b:
        before = [f for f in check(members(b), rules) if not f.passed]
        [drift] = [f for f in before if f.blocking]
        assert (drift.component, drift.member, drift.status) == (component, member, "drift")
        out = b.update_firmware(drift.image, [drift.uri], timeout=60)
        assert out.task_state == "Completed" and out.staged and out.resets == 1, out
        assert out.after[drift.uri] != drift.found
        after = check(members(b), rules)
        assert not [f for f in after if not f.passed], [f for f in after if not f.passed]
        assert b.system().PowerState == "On"


def test_a_healthy_node_of_every_layout_meets_the_policy(bmcsim):
    for name in ("ok-1", "hgx", "dell", "hpe", "ami"):
        with bmc(bmcsim, name) as b:
            found = check(members(b), bmcsim.skus[bmcsim.node(name).sku].firmware)
            assert found and all(f.passed for f in found), (name, [f for f in found if not f.passed])


@pytest.fixture
def firmware_repo(tmp_path):
    """A firmware repository on loopback: the controller fetches a push-only BMC's image here."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    (tmp_path / "gpu-vbios-96.00.99.00.01.fwpkg").write_bytes(b"NVFW" + bytes(8192))

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_a_push_only_bmc_gets_the_image_as_a_multipart_form_over_https(bmcsim, firmware_repo):
    name = "fw-drift-ami"
    rules = bmcsim.skus[bmcsim.node(name).sku].firmware
    with bmc(bmcsim, name) as b:
        [drift] = [f for f in check(members(b), rules) if f.blocking]
        assert (drift.member, drift.found) == ("GPU0_VBIOS", "96.00.5A.00.01")
        out = b.update_firmware(f"{firmware_repo}/gpu-vbios-96.00.99.00.01.fwpkg", [drift.uri], timeout=60)
        assert out.method == "multipart" and out.staged and out.after == {drift.uri: "96.00.99.00.01"}, out
        assert all(f.passed for f in check(members(b), rules))

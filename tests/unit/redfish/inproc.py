"""The real Redfish client wired to the simulator's service in-process: no HTTP, no socket,
and a fake clock that the client's waits move forward (so minutes of BIOS staging take
milliseconds and every wait is deterministic)."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import urlencode

from requests_toolbelt import MultipartEncoder

from bringup.redfish.bmc import Bmc
from bringup.redfish.models import ServiceRootDoc, parse
from bringup.redfish.session import Credentials, Reply, Session
from bringup.sku import load_skus, nic_counts
from lab.bmcsim.profile import load_profile
from lab.bmcsim.service import BmcService
from lab.bmcsim.state import BmcState
from lab.fleet import loads_fleet

SKUS = load_skus()
AUTH = {"authorization": "Basic " + base64.b64encode(b"admin:pw").decode()}


class Clock:
    """Monotonic time that only moves when someone sleeps (or a request takes its 10 ms)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


class InProcSession(Session):
    def __init__(self, service: BmcService, clock: Clock) -> None:
        super().__init__("inproc", Credentials("admin", "pw"), insecure=True, retries=0)
        self.service = service
        self.clock = clock
        self.calls: list[tuple[str, str]] = []

    @property
    def request_count(self) -> int:
        return len(self.calls)

    def call(self, method, path, *, body=None, args=None, headers=None) -> Reply:
        self.calls.append((method, path))
        self.clock.sleep(0.01)
        sent = dict(AUTH)
        if (headers or {}).get("Content-Type") == "multipart/form-data":   # as the DMTF library encodes it
            encoder = MultipartEncoder(body)
            raw, sent["content-type"] = encoder.to_string(), encoder.content_type
        else:
            raw = json.dumps(body).encode() if body is not None else b""
        r = self.service.handle(method, path.split("?")[0], urlencode(args or {}), sent, raw)
        return Reply(r.status, None if isinstance(r.body, str) else r.body,
                     {k.lower(): v for k, v in r.headers.items()})

    def login(self) -> ServiceRootDoc:
        self.calls.append(("POST", "/redfish/v1/SessionService/Sessions"))
        self.root = parse(ServiceRootDoc, self.get("/redfish/v1/"), "/redfish/v1/")
        return self.root

    def close(self) -> None:
        self.calls.append(("DELETE", "session"))


def sim(vendor: str = "bmcsim", faults: str = "[]", sku: str = "hgx-h100-80gb", installer=None,
        clock: Clock | None = None) -> tuple[BmcService, Clock]:
    fleet = loads_fleet(f"""
site: t
pools: {{p: {{}}}}
nodes:
  - {{name: n1, rack: r1, sku: {sku}, pool: p, bmc_address: 127.0.0.9, address: 127.0.0.8,
     bmc_vendor: {vendor}, faults: {faults}}}
""", nic_counts(SKUS))
    node = fleet.nodes[0]
    clock = clock or Clock()
    state = BmcState(node=node, sku=SKUS[node.sku], profile=load_profile(vendor), power_delay=1.0, clock=clock,
                     installer=installer)
    return BmcService(state, "admin", "pw"), clock


def client(service: BmcService, clock: Clock, monkeypatch, *, quirks=None, for_inventory: bool = True) -> Bmc:
    """A logged-in :class:`Bmc` on ``service``; time.sleep/monotonic follow ``clock``."""
    monkeypatch.setattr(time, "monotonic", clock)
    monkeypatch.setattr(time, "sleep", clock.sleep)
    bmc = Bmc("inproc", Credentials("admin", "pw"), insecure=True, retries=0, quirks=quirks,
              system_levels=3 if for_inventory else 1)
    bmc.session = InProcSession(service, clock)
    return bmc.login()

"""A recorded BMC tree (``{path: document}``, tests/fixtures/redfish/*) served to the real
client in-process: no socket. A path the recording lacks answers 404, as a BMC would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bringup.redfish.bmc import Bmc
from bringup.redfish.models import ServiceRootDoc, parse
from bringup.redfish.session import Credentials, Reply, Session

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "redfish"


def load_tree(rel: str) -> dict[str, Any]:
    return json.loads((FIX / rel).read_text())


class TreeSession(Session):
    def __init__(self, tree: dict[str, Any]) -> None:
        super().__init__("recorded", Credentials("admin", "pw"), insecure=True, retries=0)
        # recordings spell some paths with a trailing slash, links without: one key for both
        self.tree = {path.rstrip("/"): doc for path, doc in tree.items()}
        self.calls: list[str] = []

    def call(self, method, path, *, body=None, args=None, headers=None) -> Reply:
        self.calls.append(path)
        doc = self.tree.get(path.split("?")[0].rstrip("/"))
        if method != "GET" or doc is None:
            return Reply(404, {"error": {"message": f"{path} is not in the recording"}}, {})
        return Reply(200, doc, {})

    def login(self) -> ServiceRootDoc:
        self.root = parse(ServiceRootDoc, self.get("/redfish/v1"), "/redfish/v1")
        return self.root

    def close(self) -> None:
        pass


def bmc_on(tree: dict[str, Any], quirks: dict[str, Any] | None = None) -> Bmc:
    """A logged-in :class:`Bmc` reading ``tree``; ``quirks`` override the vendor's."""
    bmc = Bmc("recorded", Credentials("admin", "pw"), insecure=True, retries=0, quirks=quirks, system_levels=1)
    bmc.session = TreeSession(tree)
    return bmc.login()

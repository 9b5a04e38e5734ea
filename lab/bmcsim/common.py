"""Small helpers shared by the simulator's document builders."""

from __future__ import annotations

from typing import Any

R = "/redfish/v1"


def ref(path: str) -> dict[str, str]:
    return {"@odata.id": path}


def status(state: str = "Enabled", health: str = "OK") -> dict[str, str]:
    return {"State": state, "Health": health}


def collection(path: str, odata_type: str, name: str, members: list[str]) -> dict[str, Any]:
    return {"@odata.id": path, "@odata.type": f"#{odata_type}Collection.{odata_type}Collection",
            "Name": name, "Members": [ref(m) for m in members], "Members@odata.count": len(members)}

"""Parse and assess ``ibstat`` (infiniband-diags) output.

``ibstat`` prints one block per channel adapter, ``CA 'mlx5_0'``, with indented
``Key: value`` lines and a ``Port N:`` block per port (State, Physical state, Rate in Gb/s,
Link layer: InfiniBand or Ethernet for RoCE). Indentation is tabs or spaces depending on
who copied it. Lines the tool prints about itself (``ibwarn:`` with ``-d``, ``ibpanic:``
when it cannot stat a device) are kept: a panic means ports may be missing from the list.
A panic before any ``CA`` block (``ibpanic: ... stat of IB device 'mlx5_0' failed``: no IB
device, or one ibstat cannot read, such as Azure's Ethernet ``mlx5_an0``) is understood as
what it is: ibstat listed no device, an unhealthy result with no ports (``no_device``).
"""

import re

from . import UnparseableOutput

_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^\s+Port (\d+):\s*$")
_FIELD = re.compile(r"^\s+([A-Za-z][A-Za-z ]*):\s*(.*)$")
_DIAG = re.compile(r"^(ibpanic|ibwarn|ibstat):\s*(.*)$")


def _rate(text: str | None) -> float | None:
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)", text or "")
    return float(m.group(1)) if m else None


def parse_ibstat(text: str) -> dict[str, object]:
    """Returns ``{"cas": {name: {"ca_type", "firmware", "ports": {n: {...}}}}, "ports":
    [{ca, port, state, physical_state, rate_gbps, link_layer}], "panics": [..], "no_device":
    bool}`` (``no_device``: ibstat panicked before listing any device).
    A port field ``ibstat`` did not print is None (the output was cut), never a default."""
    cas: dict[str, dict[str, object]] = {}
    ca: dict[str, object] | None = None
    port: dict[str, object] | None = None
    panics: list[str] = []
    for line in text.replace("\r", "").splitlines():
        m = _DIAG.match(line)
        if m:
            if m.group(1) == "ibpanic":
                panics.append(line.strip())
            continue
        m = _CA.match(line)
        if m:
            ca = {"ca_type": None, "firmware": None, "ports": {}}
            cas[m.group(1)] = ca
            port = None
            continue
        m = _PORT.match(line)
        if m and ca is not None:
            port = {"state": None, "physical_state": None, "rate": None, "link_layer": None}
            ca["ports"][int(m.group(1))] = port  # type: ignore[index]
            continue
        m = _FIELD.match(line)
        if m and ca is not None:
            key = m.group(1).strip().lower().replace(" ", "_")
            value = m.group(2).strip()
            if port is not None:
                port[key] = value
            elif key in ("ca_type", "firmware_version"):
                ca["firmware" if key == "firmware_version" else key] = value
    if not cas and panics:
        return {"cas": {}, "ports": [], "panics": panics, "no_device": True}
    if not cas:
        raise UnparseableOutput("no \"CA '...'\" block in the ibstat output")
    ports = []
    for name, info in cas.items():
        for num, p in sorted(info["ports"].items()):  # type: ignore[union-attr]
            ports.append({"ca": name, "port": num, "state": p.get("state"), "physical_state": p.get("physical_state"),
                          "rate_gbps": _rate(p.get("rate")), "link_layer": p.get("link_layer")})
    return {"cas": cas, "ports": ports, "panics": panics, "no_device": False}


def assess(parsed: dict[str, object], expect_ports: int | None = None,
           expect_rate_gbps: float | None = None) -> list[dict[str, object]]:
    """Findings ``{code, severity, message, port}``. Without expectations only the state is
    judged; with a SKU's, InfiniBand ports are counted and their rate checked (Ethernet
    ports, RoCE, are reported, not counted). A field that is missing cannot be judged."""
    out: list[dict[str, object]] = []
    ib = 0
    for p in parsed["ports"]:  # type: ignore[union-attr]
        name = f"{p['ca']}/{p['port']}"
        if p["state"] is not None and p["state"] != "Active":
            out.append({"code": "ib_port_down", "severity": "fail", "port": name,
                        "message": f"{name} is {p['state']} ({p['physical_state'] or 'physical state unknown'})"})
        if p["state"] is None or p["rate_gbps"] is None:
            out.append({"code": "ib_port_unreadable", "severity": "error", "port": name,
                        "message": f"{name}: ibstat printed no {'State' if p['state'] is None else 'Rate'} "
                                   "(the output is cut)"})
            continue
        if p["link_layer"] == "Ethernet":
            out.append({"code": "ib_port_ethernet", "severity": "info", "port": name,
                        "message": f"{name} runs Ethernet (RoCE) at {p['rate_gbps']:g} Gb/s"})
            continue
        if p["link_layer"] is None and expect_ports is not None:
            out.append({"code": "ib_port_unreadable", "severity": "error", "port": name,
                        "message": f"{name}: ibstat printed no Link layer (the output is cut)"})
            continue
        ib += 1
        if p["state"] == "Active" and expect_rate_gbps and p["rate_gbps"] < float(expect_rate_gbps):
            out.append({"code": "ib_rate_low", "severity": "fail", "port": name, "value": p["rate_gbps"],
                        "message": f"{name} trained at {p['rate_gbps']:g} Gb/s, expected {expect_rate_gbps:g}"})
    if parsed.get("no_device"):
        out.append({"code": "ib_no_device", "severity": "fail",
                     "message": f"ibstat listed no IB device: {parsed['panics'][0]}"})  # type: ignore[index]
    for panic in [] if parsed.get("no_device") else parsed["panics"]:  # type: ignore[union-attr]
        out.append({"code": "ibstat_panic", "severity": "error", "message": f"ibstat could not read a device: {panic}"})
    if expect_ports is not None and ib < int(expect_ports):
        out.append({"code": "ib_port_missing", "severity": "fail", "value": ib,
                    "message": f"{ib} InfiniBand ports, expected {expect_ports}"})
    return out

"""Benchmark: what one request of each kind the pipeline sends costs NetBox, in CPU.

    .venv/bin/bringup lab up && .venv/bin/bringup lab seed      # a NetBox with a seeded fleet
    .venv/bin/python bench/netbox_requests.py [--repeat 20]

It sends each request ``--repeat`` times to the lab's NetBox (settings from
``BRINGUP_CONFIG``, else the lab's) and reads the CPU time NetBox's gunicorn processes and
PostgreSQL spent meanwhile from ``/proc``: CPU time, unlike latency, barely moves when the
machine is busy. Every request on the device and interface endpoints pays for NetBox
building its filter set (hundreds of filters) before any row is read, so the number of
such requests per node, not their size, is what a commission costs NetBox
(docs/benchmarks.md). One line per kind:
``netbox_request: KIND netbox_ms N postgres_ms P wall_ms W``. The device it writes to
gets its ``bringup_reason`` custom field set and cleared again (run it on the lab only).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import requests


def _pids(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def _cpu_s(pids: list[int]) -> float:
    hz, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:   # a worker recycled meanwhile: its time is lost, not invented
            continue
        total += int(fields[11]) + int(fields[12])
    return total / hz


def _graphql(session: requests.Session, api: str, q: tuple[str, dict]) -> requests.Response:
    resp = session.post(api.removesuffix("/api") + "/graphql/", json={"query": q[0], "variables": q[1]})
    if resp.ok and resp.json().get("errors"):   # GraphQL answers its refusals with 200
        raise SystemExit(f"NetBox refused the GraphQL query: {resp.json()['errors']}")
    return resp


def _if_match_bulk(session: requests.Session, api: str, did: int) -> requests.Response:
    """A conditional write as the lease sends it, through the list endpoint: the ETag of a
    read, then the bulk PATCH under If-Match (two requests: the pair is what a renewal costs)."""
    etag = session.get(f"{api}/dcim/devices/{did}/", params={"fields": "id"}).headers.get("ETag", "")
    return session.patch(f"{api}/dcim/devices/", params={"fields": "id"}, headers={"If-Match": etag},
                         json=[{"id": did, "custom_fields": {"bringup_reason": "bench/netbox_requests.py"}}])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    from bringup.netbox import graphql
    from bringup.settings import load_settings
    config = os.environ.get("BRINGUP_CONFIG") or subprocess.run(
        [".venv/bin/python", "-m", "lab.paths", "config"], capture_output=True, text=True, check=True).stdout.strip()
    s = load_settings(config)
    token = s.netbox_token()
    api = s.netbox_url.rstrip("/") + "/api"
    port = s.netbox_url.rstrip("/").rsplit(":", 1)[-1]
    session = requests.Session()
    session.headers.update({"Accept": "application/json",
                            "Authorization": f"Bearer {token}" if token.startswith("nbt_") else f"Token {token}"})
    first = session.get(f"{api}/dcim/devices/", params={"role": "gpu-server", "limit": 1}).json()["results"]
    if not first:
        raise SystemExit("NetBox has no GPU server: run `bringup lab seed` first")
    did, name = first[0]["id"], first[0]["name"]
    gunicorn = _pids(f"gunicorn --bind 127.0.0.1:{port}")
    kinds = {
        "node-read (device list by name)": lambda: session.get(f"{api}/dcim/devices/",
                                                               params={"role": "gpu-server", "name": name, "limit": 0}),
        "node-macs (its interfaces)": lambda: session.get(f"{api}/dcim/interfaces/", params={"device_id": did, "limit": 0}),
        "device read, every field": lambda: session.get(f"{api}/dcim/devices/{did}/"),
        "device read, status+tags+custom_fields": lambda: session.get(
            f"{api}/dcim/devices/{did}/", params={"fields": "id,status,tags,custom_fields"}),
        "device write (PATCH custom field)": lambda: session.patch(
            f"{api}/dcim/devices/{did}/", params={"fields": "id,custom_fields"},
            json={"custom_fields": {"bringup_reason": "bench/netbox_requests.py"}}),
        # the same write through the list endpoint (a list of one): NetBox's bulk update
        # looks the object up without the filter set a detail URL builds
        "device write (bulk PATCH of one)": lambda: session.patch(
            f"{api}/dcim/devices/", params={"fields": "id,custom_fields"},
            json=[{"id": did, "custom_fields": {"bringup_reason": "bench/netbox_requests.py"}}]),
        "device write (bulk PATCH of one, If-Match)": lambda: _if_match_bulk(session, api, did),
        "journal entry (POST)": lambda: session.post(f"{api}/extras/journal-entries/", json={
            "assigned_object_type": "dcim.device", "assigned_object_id": did, "kind": "info",
            "comments": "bench/netbox_requests.py"}),
        "status (no model)": lambda: session.get(f"{api}/status/"),
        # the reads the pipeline repeats, as bringup.netbox.graphql sends them
        "GraphQL node read (no interfaces)": lambda: _graphql(session, api, graphql.nodes_query(
            "gpu-server", names=[name], macs=False)),
        "GraphQL node read with interfaces": lambda: _graphql(session, api, graphql.nodes_query(
            "gpu-server", names=[name], macs=True)),
        "GraphQL device state": lambda: _graphql(session, api, graphql.state_query(did)),
    }
    for kind, send in kinds.items():
        send()   # warm: the first request of a kind loads code and caches
        nb0, pg0, t0 = _cpu_s(gunicorn), _cpu_s(_pids("postgres")), time.perf_counter()
        for _ in range(args.repeat):
            resp = send()
            resp.raise_for_status()
        n = args.repeat
        # a PostgreSQL backend that ended meanwhile takes its time with it (NetBox opens one
        # per request in the lab, CONN_MAX_AGE 0): postgres_ms is a lower bound
        nb, pg, wall = _cpu_s(gunicorn) - nb0, max(0.0, _cpu_s(_pids("postgres")) - pg0), time.perf_counter() - t0
        print(f"netbox_request: {kind.replace(' ', '_')} netbox_ms {nb / n * 1000:.0f} "
              f"postgres_ms {pg / n * 1000:.0f} wall_ms {wall / n * 1000:.0f}", flush=True)
    session.patch(f"{api}/dcim/devices/{did}/", params={"fields": "id,custom_fields"},
                  json={"custom_fields": {"bringup_reason": ""}})


if __name__ == "__main__":
    main()

"""Parser for ``nvidia-smi topo -m`` (the connection matrix) into a
:class:`~bringup.fabric.topology.NodeTopology`.

The matrix has a header (device columns, then ``CPU Affinity``, ``NUMA Affinity`` and, on
newer drivers, ``GPU NUMA ID``), one row per GPU and per NIC, a legend, and on newer drivers
a ``NIC Legend`` (``NIC0: mlx5_0``). Only the GPU rows are read: the NIC rows repeat them.
Older drivers name NIC columns ``mlx5_N`` directly and have no NIC legend; where a legend is
absent NICs keep their column names. Cells are tab or space separated.

The matrix does not print a NIC's NUMA node or any PCI bus id, so a check fed only from it
has those as unknown (the agent adds them from sysfs). A cell that is not a known level is
``unknown``; a missing header, a GPU without its row or a short row is a
:class:`~bringup.errors.ParseError` naming what is missing. Pure: text in, model out.
"""

from __future__ import annotations

import re

from bringup.errors import ParseError
from bringup.fabric.topology import GpuReport, NicLink, NicReport, NodeTopology, level

_GPU = re.compile(r"^GPU(\d+)$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
# the trailing header fields; "CPU Affinity" is one column printed as two words
_TRAILER = ("CPU", "NUMA", "GPU")


def _header(lines: list[str]) -> tuple[int, list[str], int]:
    """Line number, device columns, and how many fields follow them (CPU/NUMA affinity...)."""
    for i, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0" and (len(tokens) == 1 or not tokens[1].startswith(("X", "NV"))):
            cols = []
            for t in tokens:
                if t in _TRAILER:
                    break
                cols.append(t)
            trailer = sum(1 for t in tokens[len(cols):] if t in ("Affinity", "ID"))
            return i, cols, trailer
    raise ParseError("no header line (a line of device columns starting with GPU0)", path="header",
                     source="nvidia-smi topo -m", hint="record the whole output of `nvidia-smi topo -m`")


def _numa(token: str | None) -> int | None:
    return int(token) if token is not None and token.isdigit() else None


def parse_topo_matrix(text: str) -> NodeTopology:
    """GPUs with their level to every NIC column, CPU affinity and NUMA node; NICs by name."""
    lines = text.splitlines()
    at, cols, trailing = _header(lines)
    gpu_cols = [c for c in cols if _GPU.match(c)]
    nic_cols = [c for c in cols if not _GPU.match(c)]
    if not gpu_cols:
        raise ParseError("header has no GPU columns", path="header", source="nvidia-smi topo -m")
    legend = {m.group(1): m.group(2) for line in lines if (m := _LEGEND.match(line))}
    rows: dict[str, list[str]] = {}
    for line in lines[at + 1:]:
        tokens = line.split()
        if tokens and _GPU.match(tokens[0]) and tokens[0] in gpu_cols:
            rows[tokens[0]] = tokens[1:]
    gpus = []
    for name in gpu_cols:
        if name not in rows:
            raise ParseError(f"no row for {name} (the header lists it)", path=name, source="nvidia-smi topo -m")
        cells = rows[name]
        if len(cells) < len(cols):
            missing = cols[len(cells)]
            raise ParseError(f"row {name} has {len(cells)} cells for {len(cols)} columns; "
                             f"column {missing} is missing", path=f"{name}.{missing}", source="nvidia-smi topo -m")
        if len(cells) < len(cols) + trailing:
            # a cell lost in the middle shifts every later one: refuse rather than misread
            raise ParseError(f"row {name} has {len(cells)} cells; the header has {len(cols)} device columns "
                             f"and {trailing} affinity/NUMA fields", path=name, source="nvidia-smi topo -m")
        trailer = cells[len(cols):]
        links = [NicLink(nic=legend.get(col, col), level=level(cell))
                 for col, cell in zip(cols, cells, strict=False) if col in nic_cols]
        gpus.append(GpuReport(index=int(_GPU.match(name).group(1)),  # type: ignore[union-attr]
                              cpu_affinity=trailer[0] if trailer else None,
                              numa_node=_numa(trailer[1] if len(trailer) > 1 else None), nics=links))
    return NodeTopology(gpus=gpus, nics=[NicReport(name=legend.get(c, c)) for c in nic_cols])

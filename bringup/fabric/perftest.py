"""Parse perftest's ``ib_write_bw`` (and the same table of ``ib_send_bw``/``ib_read_bw``).

Layouts read (tests/fixtures/perftest/SOURCES.md):

- units ``[Gb/sec]`` (``--report_gbits``, 10^9 bits), ``[MB/sec]`` (older default) and
  ``[MiB/sec]`` (newer default); perftest divides by 2^20 for both MB and MiB, so both are
  MiB here and figures are kept in Gb/s;
- one row, or every size with ``-a``; uni- or bidirectional; the peak printed as ``0.00``
  in duration mode (``-D``), so only the average is judged;
- lines perftest prints in between (``Conflicting CPU frequency values detected``), the
  CUDA preamble and teardown of ``--use_cuda``, blocks indented as a document quoted them.

Anything else (no result header, a header with no row, a row cut short) raises
:class:`~bringup.errors.ParseError` naming what is missing: never a pass.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from bringup.errors import ParseError

_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(Gb|MB|MiB)/sec\]\s+BW average\[(?:Gb|MB|MiB)/sec\]"
                     r"\s+MsgRate\[Mpps\]")
_ROW = re.compile(r"^(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)$")
_TITLE = re.compile(r"^\s*((?:RDMA_Write|RDMA_Read|Send|Atomic)[\w ]*BW Test)\s*$")
_DEVICE = re.compile(r"Device\s*:\s*(\S+)")
_QPS = re.compile(r"Number of qps\s*:\s*(\d+)")
_LINK = re.compile(r"Link type\s*:\s*(\S+)")
_CUDA = re.compile(r"device name = \[([^\]]+)\]")
_SEP = re.compile(r"^-{20,}$")
#: bytes of perftest's MB and MiB (both 0x100000 in its source), in Gb/s per unit/s
_TO_GBPS = {"Gb": 1.0, "MB": 1048576 * 8 / 1e9, "MiB": 1048576 * 8 / 1e9}


class PerftestRow(BaseModel):
    bytes: int
    iterations: int
    peak_gbps: float
    avg_gbps: float
    msg_rate_mpps: float


class PerftestResult(BaseModel):
    test: str | None = None
    device: str | None = None
    link_type: str | None = None
    qps: int | None = None
    unit: str
    cuda_device: str | None = None
    rows: list[PerftestRow] = Field(default_factory=list)

    @property
    def largest(self) -> PerftestRow:
        """The row judged: the largest message (small ones never reach line rate)."""
        return max(self.rows, key=lambda r: r.bytes)


def parse_perftest_bw(text: str, source: str = "ib_write_bw") -> PerftestResult:
    test = device = link = cuda = unit = None
    qps = None
    rows: list[PerftestRow] = []
    in_table = False
    for raw in text.replace("\r", "").splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _TITLE.match(line):
            test = m.group(1).strip()
        if (m := _DEVICE.search(line)) and device is None:
            device = m.group(1)
        if (m := _QPS.search(line)) and qps is None:
            qps = int(m.group(1))
        if (m := _LINK.search(line)) and link is None:
            link = m.group(1)
        if m := _CUDA.search(line):
            cuda = m.group(1)
        if m := _HEADER.search(line):
            unit, in_table = m.group(1), True
            continue
        if not in_table:
            continue
        if _SEP.match(line):
            in_table = False
            continue
        if m := _ROW.match(line):
            f = _TO_GBPS[unit]
            rows.append(PerftestRow(bytes=int(m.group(1)), iterations=int(m.group(2)),
                                    peak_gbps=float(m.group(3)) * f, avg_gbps=float(m.group(4)) * f,
                                    msg_rate_mpps=float(m.group(5))))
        elif re.match(r"^\d+(\s|$)", line):
            # a line that starts like a row but is not one: the output was cut or garbled
            raise ParseError(f"a result row is cut short or garbled: {line!r} (expected #bytes, #iterations, "
                             "BW peak, BW average, MsgRate)", source=source)
        # anything else inside the table (CPU frequency warnings) is perftest talking
    if unit is None:
        raise ParseError("no result header (#bytes #iterations BW peak BW average MsgRate) in the output",
                         source=source, hint="the test did not get to its results, or this is not perftest")
    if not rows:
        raise ParseError("the result header has no row under it", source=source)
    return PerftestResult(test=test, device=device, link_type=link, qps=qps, unit=unit, cuda_device=cuda,
                          rows=rows)

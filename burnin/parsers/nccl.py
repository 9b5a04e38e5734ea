"""Parse nccl-tests ``all_reduce_perf`` (and the other ``*_perf``) output.

Handles both column layouts (with ``root`` and ``#wrong``, as nccl-tests 2.10+ prints, and the
older one without ``root`` and with a floating-point ``error`` column), MPI rank prefixes such
as ``[0]`` (even in the middle of a line), and ``NCCL INFO``/``WARN`` lines interleaved with
the table.
"""

import re

from . import UnparseableOutput

_RANK_PREFIX = re.compile(r"\[\d+\]")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)", re.IGNORECASE)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*([0-9.]+)", re.IGNORECASE)
_VERSION = re.compile(r"nccl-tests version\s+(\S+)", re.IGNORECASE)
_NCCL_VERSION = re.compile(r"NCCL version\s+(\S+)")


def _num(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None  # "N/A" and friends


def _columns(header: list[str]) -> dict[str, list[int]]:
    cols: dict[str, list[int]] = {}
    for i, name in enumerate(header):
        cols.setdefault(name, []).append(i)
    return cols


def parse_nccl_perf(text: str) -> dict[str, object]:
    """Rows of the bandwidth table plus the trailer figures.

    Returns ``{"rows": [{size, busbw_oop, busbw_ip, wrong_oop, wrong_ip}], "oob_values",
    "oob_ok", "avg_busbw", "layout", "nccl_version", "tests_version"}``. ``wrong_*`` is None
    when the layout has an ``error`` column instead of ``#wrong``.
    """
    header: list[str] | None = None
    rows: list[dict[str, object]] = []
    oob = None
    oob_ok = None
    avg = None
    nccl_version = tests_version = None
    for raw in text.replace("\r", "\n").splitlines():
        if "NCCL INFO" in raw or "NCCL WARN" in raw:
            m = _NCCL_VERSION.search(raw)
            if m and not nccl_version:
                nccl_version = m.group(1)
            continue
        line = _RANK_PREFIX.sub(" ", raw).strip()
        if not line:
            continue
        m = _NCCL_VERSION.search(line)
        if m and not nccl_version:
            nccl_version = m.group(1)
        if line.startswith("#"):
            body = line.lstrip("#").split()
            if "size" in body and "busbw" in body:
                header = body
            m = _OOB.search(line)
            if m:
                oob, oob_ok = int(m.group(1)), m.group(2).upper() == "OK"
            m = _AVG.search(line)
            if m:
                avg = float(m.group(1))
            m = _VERSION.search(line)
            if m:
                tests_version = m.group(1)
            continue
        toks = line.split()
        if not toks or not toks[0].isdigit() or len(toks) < 8 or not toks[1].isdigit():
            continue
        cols = _columns(header) if header else None
        if cols is None or len(header or []) != len(toks):
            # no header seen (or it disagrees): infer the layout from the token count
            if len(toks) == 13:
                names = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong"
            elif len(toks) == 12:
                names = "size count type redop time algbw busbw error time algbw busbw error"
            elif len(toks) == 11:
                # the oldest nccl-tests: no redop column either
                names = "size count type time algbw busbw error time algbw busbw error"
            else:
                raise UnparseableOutput(f"a table row has {len(toks)} columns, expected 11, 12 or 13: {line!r}")
            cols = _columns(names.split())
        bus = cols.get("busbw", [])
        wrong_cols = cols.get("#wrong")
        if len(bus) < 1:
            raise UnparseableOutput("the table header has no busbw column")
        size = int(toks[cols["size"][0]])
        row = {
            "size": size,
            "busbw_oop": _num(toks[bus[0]]),
            "busbw_ip": _num(toks[bus[1]]) if len(bus) > 1 else None,
            "wrong_oop": None,
            "wrong_ip": None,
        }
        if wrong_cols:
            w = [_num(toks[i]) for i in wrong_cols]
            row["wrong_oop"] = int(w[0]) if w[0] is not None else None
            row["wrong_ip"] = int(w[1]) if len(w) > 1 and w[1] is not None else None
        if row["busbw_oop"] is None and row["busbw_ip"] is None:
            raise UnparseableOutput(f"a table row has no numeric busbw: {line!r}")
        rows.append(row)
    if not rows:
        raise UnparseableOutput("no bandwidth table rows found (expected lines of size, count, type, ...)")
    return {
        "rows": rows,
        "oob_values": oob,
        "oob_ok": oob_ok,
        "avg_busbw": avg,
        "layout": "wrong" if any(r["wrong_oop"] is not None for r in rows) else "error",
        "nccl_version": nccl_version,
        "tests_version": tests_version,
    }


def busbw_at_largest(parsed: dict[str, object], largest_sizes: int = 2) -> float:
    """The figure to judge: for each of the ``largest_sizes`` biggest message sizes take the
    better of out-of-place and in-place busbw, then the worst of those sizes.

    "Avg bus bandwidth" averages every size including tiny latency-bound ones, so it says
    little about the fabric; the largest sizes are where NVLink/NVSwitch bandwidth shows.
    """
    rows = parsed["rows"]  # type: ignore[index]
    sizes = sorted({r["size"] for r in rows}, reverse=True)[:max(1, largest_sizes)]  # type: ignore[index]
    best_per_size = []
    for size in sizes:
        vals = [v for r in rows if r["size"] == size for v in (r["busbw_oop"], r["busbw_ip"])  # type: ignore[index]
                if v is not None]
        best_per_size.append(max(vals))
    return min(best_per_size)


def wrong_total(parsed: dict[str, object]) -> int | None:
    rows = parsed["rows"]  # type: ignore[index]
    vals = [v for r in rows for v in (r["wrong_oop"], r["wrong_ip"]) if v is not None]  # type: ignore[index]
    return sum(vals) if vals else None

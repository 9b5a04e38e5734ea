"""Parse and assess nccl-tests ``all_reduce_perf`` (and the other ``*_perf``) output.

Layouts read:

- 2.x with ``root`` and integer ``#wrong`` columns, and older ones without ``root`` (or
  ``redop``) and with a floating-point ``error`` column (``N/A`` when run with ``-c 0``);
- builds from before the ``#``-prefixed header (about 2020), whose header and trailer lines
  ("Out of bounds values : N FAILED") carry no ``#``;
- launcher prefixes on every line: ``[0]`` (also in the middle of lines), OpenMPI
  ``--tag-output`` ``[1,0]<stdout>:``, and SkyPilot's ``(head, rank=0, pid=3808)``, alone or
  stacked; ``<stderr>`` lines are dropped; an OpenMPI tag in the middle of a line (mpirun
  tags each chunk it reads, and a rank's buffered output can be cut mid-line: psij-python
  #510) is removed, joining the line again;
- ``NCCL INFO``/``WARN`` lines interleaved with the table (from other ranks too).
"""

import re

from . import UnparseableOutput

_RANK_PREFIX = re.compile(r"\[\d+\]")
# launcher prefixes at the start of a line, possibly stacked: SkyPilot, then OpenMPI
_SKY = re.compile(r"^\([\w.-]+, rank=\d+, pid=\d+(?:, [^)]*)?\)\s?")
_OMPI = re.compile(r"^\[\d+,\d+\]<(stdout|stderr|stddiag)>:")
_OMPI_MID = re.compile(r"\[\d+,\d+\]<stdout>:")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)", re.IGNORECASE)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*([0-9.]+)", re.IGNORECASE)
_VERSION = re.compile(r"nccl-tests version\s+(\S+)", re.IGNORECASE)
_NCCL_VERSION = re.compile(r"NCCL version\s+(\S+)")
_VALIDATION = re.compile(r"validation:\s*(\d+)")
_LAYOUTS = {
    13: "size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
    12: "size count type redop time algbw busbw error time algbw busbw error",
    # the oldest nccl-tests: no redop column either
    11: "size count type time algbw busbw error time algbw busbw error",
}


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


def strip_launcher(raw: str) -> str | None:
    """The tool's own line without launcher prefixes; None for a line of stderr."""
    line = raw.strip()
    for _ in range(3):  # stacked prefixes: "(head, rank=0, pid=1) [1,0]<stdout>:..."
        m = _SKY.match(line)
        if m:
            line = line[m.end():].lstrip()
            continue
        m = _OMPI.match(line)
        if m:
            if m.group(1) != "stdout":
                return None
            # the rest of a cut line comes with a tag of its own: nccl-tests never prints one
            line = _OMPI_MID.sub("", line[m.end():])
            continue
        break
    return _RANK_PREFIX.sub(" ", line).strip()


def parse_nccl_perf(text: str) -> dict[str, object]:
    """Rows of the bandwidth table plus the trailer figures.

    Returns ``{"rows": [{size, type, busbw_oop, busbw_ip, wrong_oop, wrong_ip, error_oop,
    error_ip}], "oob_values", "oob_ok", "avg_busbw", "layout": "wrong"|"error",
    "validated": bool | None, "nccl_version", "tests_version"}``. ``wrong_*`` is None in the
    ``error`` layout and ``error_*`` None in the ``#wrong`` one (or when printed as N/A).
    """
    header: list[str] | None = None
    rows: list[dict[str, object]] = []
    oob = oob_ok = avg = validation = None
    nccl_version = tests_version = None
    for raw in text.replace("\r", "\n").splitlines():
        line = strip_launcher(raw)
        if not line:
            continue
        m = _NCCL_VERSION.search(line)
        if m and not nccl_version:
            nccl_version = m.group(1)
        if "NCCL INFO" in line or "NCCL WARN" in line:
            continue
        body = line.lstrip("#").split()
        if "size" in body and "busbw" in body:
            header = body
            continue
        for rx, kind in ((_OOB, "oob"), (_AVG, "avg"), (_VERSION, "ver"), (_VALIDATION, "val")):
            m = rx.search(line)
            if m and kind == "oob":
                oob, oob_ok = int(m.group(1)), m.group(2).upper() == "OK"
            elif m and kind == "avg":
                avg = float(m.group(1))
            elif m and kind == "ver":
                tests_version = m.group(1)
            elif m and kind == "val":
                validation = int(m.group(1))
        toks = line.split()
        if line.startswith("#") or len(toks) < 8 or not toks[0].isdigit() or not toks[1].isdigit():
            continue
        cols = _columns(header) if header and len(header) == len(toks) else None
        if cols is None:
            # no header seen (or it disagrees): infer the layout from the token count
            if len(toks) not in _LAYOUTS:
                raise UnparseableOutput(f"a table row has {len(toks)} columns, expected 11, 12 or 13: {line!r}")
            cols = _columns(_LAYOUTS[len(toks)].split())
        rows.append(_row(toks, cols, line))
    if not rows:
        raise UnparseableOutput("no bandwidth table rows found (expected lines of size, count, type, ...)")
    has_wrong = any(r["wrong_oop"] is not None for r in rows)
    has_error = any(r["error_oop"] is not None or r["error_ip"] is not None for r in rows)
    return {
        "rows": rows,
        "oob_values": oob,
        "oob_ok": oob_ok,
        "avg_busbw": avg,
        "layout": "wrong" if has_wrong else "error",
        # nccl-tests prints N/A in the error column (and validation: 0) when run with -c 0
        "validated": False if validation == 0 else (True if has_wrong or has_error else None),
        "nccl_version": nccl_version,
        "tests_version": tests_version,
    }


def _row(toks: list[str], cols: dict[str, list[int]], line: str) -> dict[str, object]:
    bus = cols.get("busbw", [])
    if not bus:
        raise UnparseableOutput("the table header has no busbw column")
    row: dict[str, object] = {
        "size": int(toks[cols["size"][0]]),
        "type": toks[cols["type"][0]] if "type" in cols else None,
        "busbw_oop": _num(toks[bus[0]]),
        "busbw_ip": _num(toks[bus[1]]) if len(bus) > 1 else None,
        "wrong_oop": None, "wrong_ip": None, "error_oop": None, "error_ip": None,
    }
    for key, col in (("wrong", "#wrong"), ("error", "error")):
        idx = cols.get(col) or []
        vals = [_num(toks[i]) for i in idx]
        for place, v in zip(("oop", "ip"), vals):
            row[f"{key}_{place}"] = (int(v) if key == "wrong" else v) if v is not None else None
    if row["busbw_oop"] is None and row["busbw_ip"] is None:
        raise UnparseableOutput(f"a table row has no numeric busbw: {line!r}")
    return row


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


def error_figures(parsed: dict[str, object], limits: dict[str, float]) -> dict[str, object]:
    """The ``error`` column against per-type limits: ``{"max": float | None, "over": n,
    "unknown_types": [..]}``. A row of a type with no limit is counted in ``unknown_types``
    (it cannot be judged), never as within bounds."""
    worst = None
    over = 0
    unknown: set[str] = set()
    for r in parsed["rows"]:  # type: ignore[union-attr]
        for v in (r["error_oop"], r["error_ip"]):
            if v is None:
                continue
            worst = v if worst is None else max(worst, v)
            limit = limits.get(str(r["type"]))
            if limit is None:
                unknown.add(str(r["type"]))
            elif v > float(limit):
                over += 1
    return {"max": worst, "over": over, "unknown_types": sorted(unknown)}


def assess(parsed: dict[str, object], error_limits: dict[str, float]) -> list[dict[str, object]]:
    """Correctness findings ``{code, severity, message}`` (bandwidth is judged by the caller,
    against the SKU). Data that was not checked at all is an ``error``, never a pass."""
    out: list[dict[str, object]] = []
    wrong = wrong_total(parsed)
    if wrong:
        out.append({"code": "nccl_wrong", "severity": "fail", "value": wrong,
                    "message": f"the collective produced {wrong} wrong values (#wrong)"})
    if parsed["oob_values"]:
        out.append({"code": "nccl_oob", "severity": "fail", "value": parsed["oob_values"],
                    "message": f"Out of bounds values: {parsed['oob_values']} FAILED"})
    err = error_figures(parsed, error_limits)
    if err["over"]:
        out.append({"code": "nccl_error_high", "severity": "fail", "value": err["max"],
                    "message": f"error column above the limit in {err['over']} places (max {err['max']:g})"})
    if err["unknown_types"]:
        out.append({"code": "nccl_error_unjudged", "severity": "error",
                    "message": f"no error limit for data type {', '.join(err['unknown_types'])}"})
    if parsed["validated"] is False:
        out.append({"code": "nccl_not_validated", "severity": "error",
                    "message": "results were not validated (run with -c 0: error column N/A)"})
    elif wrong is None and err["max"] is None and parsed["oob_values"] is None:
        out.append({"code": "nccl_not_validated", "severity": "error",
                    "message": "the output reports no correctness figure (#wrong, error or out of bounds)"})
    return out

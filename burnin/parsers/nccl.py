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

A run is judged whole only when it printed its summary ("Out of bounds values" and "Avg bus
bandwidth"): a log that stops after some rows did not finish (``complete`` False). Failures
are read wherever they appear, after any launcher prefix and from any rank: nccl-tests' own
``Test NCCL failure``/``Test CUDA failure``/``Test failure`` lines (nccl-tests #219, #322),
and the launcher's report of a rank that exited non-zero or on a signal (OpenMPI's "Primary
job terminated normally, but 1 process returned a non-zero exit code", "exited on signal",
"exited with non-zero status"; srun's ``srun: error: <host>: task N: ...``). A run that failed
before any row is still understood (:func:`parse_nccl_run`): a failed run, not garbage.
"""

import itertools
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
_STEP = re.compile(r"step:\s*(\d+)\((factor|bytes)\)")
# nccl-tests' own failure lines, whatever prefixes them ("host: Test NCCL failure common.cu:959
# '...'", " .. host pid 1: Test failure common.cu:844"; before 2019 "NCCL failure all_reduce.cu:95")
_TEST_FAILURE = re.compile(r"\b(?:Test (?:NCCL |CUDA )?failure|(?:NCCL|CUDA) failure) \S+:\d+")
# the launcher's report that a rank ended badly (OpenMPI/PRRTE, Slurm's srun: slurm's
# "%s: %s: Exited with exit code %d" or the signal's name, after srun's "error: " prefix)
_LAUNCHER_FAILURE = re.compile(
    r"Primary job\s+terminated normally, but \d+ process(?:es)? returned"
    r"|(?:mpirun|prterun|prte) noticed that process rank \d+.*exited on signal"
    r"|exited with non-zero status"
    r"|has exited due to process rank \d+"
    r"|^srun: error: \S+: tasks? [\d,\-\[\]]+: ")
#: how close a size must be to the previous size times the factor (sizes are aligned by nccl-tests)
_ADJACENT = 0.1
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


def parse_nccl_perf(text: str, stderr: str = "") -> dict[str, object]:
    """Rows of the bandwidth table plus the trailer figures (see :func:`parse_nccl_run`);
    an output without a single table row raises :class:`UnparseableOutput`, naming the
    failure the run reported if it reported one."""
    parsed = parse_nccl_run(text, stderr)
    if not parsed["rows"]:
        why = (parsed["failures"] or parsed["launcher_failures"] or [""])[0]  # type: ignore[index]
        raise UnparseableOutput("no bandwidth table rows found" + (f": the run failed before any row ({why})"
                                                                   if why else ""))
    return parsed


def _failure_lines(raw: str, line: str | None) -> tuple[str | None, str | None]:
    """(nccl-tests failure, launcher failure) found on one line, raw or unprefixed."""
    for text in (line, raw.strip()):
        if text and _TEST_FAILURE.search(text):
            return text, None
        if text and _LAUNCHER_FAILURE.search(text):
            return None, text
    return None, None


def parse_nccl_run(text: str, stderr: str = "") -> dict[str, object]:
    """The run as printed: rows of the bandwidth table, the trailer figures and what failed.

    Returns ``{"rows": [{size, type, busbw_oop, busbw_ip, wrong_oop, wrong_ip, error_oop,
    error_ip}], "oob_values", "oob_ok", "avg_busbw", "layout": "wrong"|"error",
    "validated": bool | None, "nccl_version", "tests_version", "step": {"factor"|"bytes": n}
    | None, "complete": bool, "failures": [..], "launcher_failures": [..]}``. ``wrong_*`` is
    None in the ``error`` layout and ``error_*`` None in the ``#wrong`` one (or when printed
    as N/A). ``stderr`` (the launcher's own messages go there) is read for failures only.
    Raises :class:`UnparseableOutput` when there is neither a row nor a failure.
    """
    header: list[str] | None = None
    rows: list[dict[str, object]] = []
    oob = oob_ok = avg = validation = step = None
    nccl_version = tests_version = None
    failures: list[str] = []
    launcher: list[str] = []
    for raw in stderr.replace("\r", "\n").splitlines():
        fail, rank_exit = _failure_lines(raw, strip_launcher(raw))
        failures += [fail] if fail else []
        launcher += [rank_exit] if rank_exit else []
    for raw in text.replace("\r", "\n").splitlines():
        line = strip_launcher(raw)
        fail, rank_exit = _failure_lines(raw, line)
        if fail or rank_exit:
            failures += [fail] if fail else []
            launcher += [rank_exit] if rank_exit else []
            continue
        if not line:
            continue
        m = _STEP.search(line)
        if m and step is None:
            step = {m.group(2): int(m.group(1))}
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
    if not rows and not failures and not launcher:
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
        "step": step,
        # nccl-tests prints both summary lines once the sweep is done: without them it did not finish
        "complete": oob is not None and avg is not None,
        "failures": failures,
        "launcher_failures": launcher,
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
        for place, v in zip(("oop", "ip"), vals, strict=False):
            row[f"{key}_{place}"] = (int(v) if key == "wrong" else v) if v is not None else None
    if row["busbw_oop"] is None and row["busbw_ip"] is None:
        raise UnparseableOutput(f"a table row has no numeric busbw: {line!r}")
    return row


def _sweep_step(parsed: dict[str, object], sizes: list[int]) -> dict[str, int] | None:
    """The sweep's step as the header says (``step: 2(factor)`` or ``1048576(bytes)``), else
    the factor or increment most rows agree on; None when the rows cannot tell."""
    if parsed.get("step"):
        return parsed["step"]  # type: ignore[return-value]
    pairs = list(itertools.pairwise(sorted(sizes)))
    ratios = [round(b / a) for a, b in pairs if a and abs(b / a - round(b / a)) <= _ADJACENT * b / a]
    ratios = [r for r in ratios if r >= 2]
    if ratios:
        best = max(set(ratios), key=ratios.count)
        if ratios.count(best) >= 2 or best == 2:  # one pair at 2x: nccl-tests' usual -f 2
            return {"factor": best}
    diffs = [b - a for a, b in pairs]
    common = max(set(diffs), key=diffs.count) if diffs else 0
    if diffs.count(common) >= 2:
        return {"bytes": common}
    return None


def _adjacent(smaller: int, larger: int, step: dict[str, int] | None) -> bool:
    if not step:
        return False
    if step.get("factor", 1) > 1:
        want = smaller * step["factor"]
        return abs(larger - want) <= _ADJACENT * want
    inc = step.get("bytes") or step.get("factor") or 0
    return inc > 0 and abs(larger - smaller - inc) <= max(_ADJACENT * inc, 64)


def largest_sizes(parsed: dict[str, object], largest: int = 2) -> list[int]:
    """The ``largest`` biggest sizes that are neighbours in the sweep (each the previous one
    times the factor, or plus the increment), biggest first. A table whose rows were elided
    by hand keeps its largest size but never borrows a far smaller row as the second."""
    sizes = sorted({int(r["size"]) for r in parsed["rows"]}, reverse=True)  # type: ignore[union-attr,index]
    if not sizes:
        return []
    step = _sweep_step(parsed, sizes)
    chosen = [sizes[0]]
    for s in sizes[1:max(1, largest)]:
        if not _adjacent(s, chosen[-1], step):
            break
        chosen.append(s)
    return chosen


def busbw_at_largest(parsed: dict[str, object], largest_sizes_n: int = 2) -> float | None:
    """The figure to judge: for each of the ``largest_sizes_n`` biggest message sizes
    adjacent in the sweep (:func:`largest_sizes`) take the better of out-of-place and
    in-place busbw, then the worst of those sizes; None for a run with no rows.

    "Avg bus bandwidth" averages every size including tiny latency-bound ones, so it says
    little about the fabric; the largest sizes are where NVLink/NVSwitch bandwidth shows.
    """
    rows = parsed["rows"]  # type: ignore[index]
    sizes = largest_sizes(parsed, largest_sizes_n)
    if not sizes:
        return None
    best_per_size = []
    for size in sizes:
        vals = [v for r in rows if r["size"] == size for v in (r["busbw_oop"], r["busbw_ip"])  # type: ignore[index]
                if v is not None]
        best_per_size.append(max(vals))
    return min(best_per_size)


def finished(parsed: dict[str, object]) -> bool:
    """True when the run printed its summary and nothing reported a failure. Only such a
    run's rows measure the node: the rows of a run that died or was cut show how far it
    got, and its outcome (:func:`run_outcome`) is the failure or the cut, never a bandwidth."""
    return bool(parsed.get("complete")) and not parsed.get("failures") and not parsed.get("launcher_failures")


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
    out: list[dict[str, object]] = _run_findings(parsed)
    # a run that failed is its own reason: what it left unchecked adds nothing to that
    failed = any(f["severity"] == "fail" for f in out)
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
    if err["unknown_types"] and not failed:
        out.append({"code": "nccl_error_unjudged", "severity": "error",
                    "message": f"no error limit for data type {', '.join(err['unknown_types'])}"})
    if failed:
        pass
    elif parsed["validated"] is False:
        out.append({"code": "nccl_not_validated", "severity": "error",
                    "message": "results were not validated (run with -c 0: error column N/A)"})
    elif wrong is None and err["max"] is None and parsed["oob_values"] is None and parsed["rows"]:
        out.append({"code": "nccl_not_validated", "severity": "error",
                    "message": "the output reports no correctness figure (#wrong, error or out of bounds)"})
    return out


def run_outcome(findings: list[dict[str, object]]) -> tuple[str, list[str]]:
    """One verdict for callers that judge a run as a whole (the fabric's pair test, the
    smoke pod): ``("fail" | "unknown" | "pass", messages)`` from :func:`assess`'s findings,
    a ``fail`` finding first; an ``error`` (cut before its summary, nothing validated) is
    unknown, never a pass. The messages are those of the findings that decided it."""
    for severity, outcome in (("fail", "fail"), ("error", "unknown")):
        hits = [str(f["message"]) for f in findings if f["severity"] == severity]
        if hits:
            return outcome, hits
    return "pass", []


def _run_findings(parsed: dict[str, object]) -> list[dict[str, object]]:
    """A failed run is a failure; a run that stopped before its summary never a pass."""
    out: list[dict[str, object]] = []
    failures: list[str] = parsed.get("failures") or []  # type: ignore[assignment]
    launcher: list[str] = parsed.get("launcher_failures") or []  # type: ignore[assignment]
    rows: list[dict[str, object]] = parsed["rows"]  # type: ignore[assignment]
    where = f"after the {rows[-1]['size']}-byte row" if rows else "before any table row"
    if failures:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        out.append({"code": "nccl_failed", "severity": "fail",
                    "message": f"the run failed {where}: {failures[0]}{more}"})
    if launcher:
        out.append({"code": "nccl_launcher_failed", "severity": "fail",
                    "message": f"the launcher reports a rank that ended badly ({where}): {launcher[0]}"})
    if not failures and not launcher and not parsed.get("complete", True):
        out.append({"code": "nccl_incomplete", "severity": "error",
                    "message": f"incomplete run: cut before its summary, {where} (no 'Out of bounds values' / "
                               "'Avg bus bandwidth' lines)"})
    return out

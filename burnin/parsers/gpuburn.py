"""Parse and assess gpu-burn (wilicc/gpu-burn) output.

gpu_burn exits 0 even when a GPU is FAULTY, and it prints ``OK`` for a GPU whose test
never started ("Couldn't init a GPU test", then ``proc'd: 0 (0 Gflop/s)`` to the end), so
the verdict needs three things: the ``Tested N GPUs:`` summary, the error counts and the
*work figures* (iterations processed and Gflop/s per GPU) of the last progress record.

Progress records look like ``100.0%  proc'd: 6783 (16942 Gflop/s) - 4522 (...) errors: 0
- 0  temps: 62 C - 59 C``. Builds redraw them in place with a carriage return, so captured
logs hold them one per line or many run together on one line; both are read here.
"""

import re

from . import UnparseableOutput

_TESTED = re.compile(r"Tested\s+(\d+)\s+GPUs:")
_GPU = re.compile(r"^\s*GPU\s+(\d+):[ \t]*(OK|FAULTY)?[ \t]*$", re.MULTILINE)
# one progress record; the temps list ends at the last "N C"
_RECORD = re.compile(r"proc'd:(?P<work>.*?)errors:(?P<errors>.*?)temps:(?P<temps>(?:\s*-?\s*\d+\s*C\b)+)")
_WORK = re.compile(r"(-?\d+)\s*\(\s*(-?[0-9.]+)\s*Gflop/s\)")
_INIT_FAILED = re.compile(r"Couldn't init a GPU test:?[ \t]*(.*)$", re.MULTILINE)


def _record(m: "re.Match[str]") -> dict[str, list]:
    work = [(int(p), float(g)) for p, g in _WORK.findall(m.group("work"))]
    errors: list[int] = []
    died: list[int] = []
    # "0 - -524288000  (WARNING!)- 12  (DIED!)": counts may be negative (overflowed)
    for i, (num, flag) in enumerate(re.findall(r"(-?\d+)\s*(\((?:WARNING|DIED)!\))?", m.group("errors"))):
        errors.append(int(num))
        if "DIED" in flag:
            died.append(i)
    temps = [int(t) for t in re.findall(r"(\d+)\s*C\b", m.group("temps"))]
    return {"procd": [p for p, _ in work], "gflops": [g for _, g in work], "errors": errors, "died": died,
            "temps_c": temps}


def parse_gpu_burn(text: str) -> dict[str, object]:
    """Returns ``{"tested": N | None, "gpus": {index: "OK"|"FAULTY"}, "procd": [..],
    "gflops": [..], "errors": [..], "died": [..], "temps_c": [..], "records": n,
    "init_errors": [..], "aborted": bool, "finished": bool}`` (the per-GPU lists are from
    the last progress record). ``tested`` is None when the run never printed its summary.

    Raises :class:`UnparseableOutput` when there is nothing to read (no progress record,
    no summary) or the summary is cut short (it names fewer GPUs than it says it tested).
    """
    text = text.replace("\r", "\n")
    aborted = "No clients are alive" in text
    records = [_record(m) for m in _RECORD.finditer(text)]
    last = records[-1] if records else {"procd": [], "gflops": [], "errors": [], "died": [], "temps_c": []}
    init_errors = [m.group(1).strip() or "(no reason given)" for m in _INIT_FAILED.finditer(text)]
    tested_m = _TESTED.search(text)
    out: dict[str, object] = {"tested": None, "gpus": {}, **last, "records": len(records),
                              "init_errors": init_errors, "aborted": aborted, "finished": False}
    if tested_m is None:
        if not records and not aborted:
            raise UnparseableOutput("no progress record and no 'Tested N GPUs:' summary")
        return out
    tested = int(tested_m.group(1))
    found = _GPU.findall(text[tested_m.end():])
    if len(found) != tested or any(not status for _, status in found):
        listed = sum(1 for _, status in found if status)
        raise UnparseableOutput(f"summary says {tested} GPUs tested but lists {listed}")
    out.update({"tested": tested, "gpus": {int(i): s for i, s in found}, "finished": True})
    return out


def assess(parsed: dict[str, object], expect_gpus: int | None = None) -> list[dict[str, object]]:
    """What the run shows, as findings ``{code, severity, message[, gpu]}``; severity
    ``fail`` (the hardware failed), ``error`` (the run cannot be judged). No finding at all
    means every GPU was tested, did work and computed correctly."""
    out: list[dict[str, object]] = []

    def add(code: str, severity: str, message: str, gpu: int | None = None) -> None:
        out.append({"code": code, "severity": severity, "message": message, **({"gpu": gpu} if gpu is not None else {})})

    gpus: dict[int, str] = parsed["gpus"]  # type: ignore[assignment]
    procd: list[int] = parsed["procd"]  # type: ignore[assignment]
    gflops: list[float] = parsed["gflops"]  # type: ignore[assignment]
    for g, status in sorted(gpus.items()):
        if status != "OK":
            add("gpuburn_faulty", "fail", f"GPU {g}: gpu-burn reports FAULTY (computation errors)", g)
    for g in parsed["died"]:  # type: ignore[union-attr]
        add("gpuburn_died", "fail", f"GPU {g}: gpu-burn worker died", g)
    idle = [g for g in range(len(procd)) if procd[g] <= 0 or (g < len(gflops) and gflops[g] <= 0)]
    died = set(parsed["died"])  # type: ignore[arg-type]
    for g in idle:
        if g not in died:
            add("gpuburn_no_work", "fail", f"GPU {g}: gpu-burn did no work (proc'd {procd[g]}, "
                f"{gflops[g] if g < len(gflops) else 0:g} Gflop/s): its test never ran", g)
    for msg in parsed["init_errors"]:  # type: ignore[union-attr]
        named = f" (GPUs without work: {', '.join(map(str, idle))})" if idle else ""
        add("gpuburn_init_failed", "fail", f"a gpu-burn GPU test could not start: {msg}{named}",
            idle[0] if len(idle) == 1 else None)
    if parsed["aborted"]:
        add("gpuburn_aborted", "fail", "gpu-burn aborted: no workers alive")
    if not procd:
        add("gpuburn_no_progress", "error", "gpu-burn printed no progress record: the work done cannot be verified")
    elif gpus and len(procd) != len(gpus):
        add("gpuburn_gpu_count", "error", f"progress reports {len(procd)} GPUs, the summary {len(gpus)}")
    if not parsed["finished"] and not parsed["aborted"]:
        add("gpuburn_unfinished", "error", "gpu-burn did not print its 'Tested N GPUs' summary (cut short?)")
    tested = parsed["tested"]
    if expect_gpus and tested is not None and int(tested) < int(expect_gpus):  # type: ignore[call-overload]
        add("gpuburn_gpu_count", "fail", f"gpu-burn tested {tested} GPUs, expected {expect_gpus}")
    return out

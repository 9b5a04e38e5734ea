"""Parse gpu-burn (wilicc/gpu-burn) output.

gpu_burn exits 0 even when a GPU is FAULTY, so the verdict comes from the final
``Tested N GPUs:`` summary and the error counts of the last progress line
(``errors: 0 - 12 (WARNING!) - ...``, ``(DIED!)`` when a worker died).
"""

import re

from . import UnparseableOutput

_TESTED = re.compile(r"Tested\s+(\d+)\s+GPUs:")
_GPU = re.compile(r"^\s*GPU\s+(\d+):\s*(OK|FAULTY)\b", re.MULTILINE)
_PROGRESS = re.compile(r"proc'd:.*?errors:(.*?)temps:(.*)$")


def parse_gpu_burn(text: str) -> dict[str, object]:
    """Returns ``{"tested": N, "gpus": {index: "OK"|"FAULTY"}, "errors": [..], "died": [..],
    "temps_c": [..], "aborted": bool}``."""
    text = text.replace("\r", "\n")
    aborted = "No clients are alive" in text
    errors: list[int] = []
    died: list[int] = []
    temps: list[int] = []
    for line in text.splitlines():
        m = _PROGRESS.search(line)
        if not m:
            continue
        errors, died = [], []
        # "0 - -524288000  (WARNING!)- 12  (DIED!)": counts may be negative (overflowed)
        for i, (num, flag) in enumerate(re.findall(r"(-?\d+)\s*(\((?:WARNING|DIED)!\))?", m.group(1))):
            errors.append(int(num))
            if "DIED" in flag:
                died.append(i)
        temps = [int(t) for t in re.findall(r"(\d+)\s*C", m.group(2))]
    tested = _TESTED.search(text)
    if not tested:
        if aborted:
            return {"tested": 0, "gpus": {}, "errors": errors, "died": died, "temps_c": temps, "aborted": True}
        raise UnparseableOutput("no 'Tested N GPUs:' summary (gpu_burn did not finish)")
    summary = text[tested.end():]
    gpus = {int(i): s for i, s in _GPU.findall(summary)}
    if len(gpus) != int(tested.group(1)):
        raise UnparseableOutput(f"summary says {tested.group(1)} GPUs tested but lists {len(gpus)}")
    return {"tested": int(tested.group(1)), "gpus": gpus, "errors": errors, "died": died,
            "temps_c": temps, "aborted": aborted}

"""Parse ``dcgmi diag -r N -j`` for DCGM 3.x and 4.x.

DCGM 3.x puts everything under ``"DCGM GPU Diagnostic"`` with title-case test names and
per-GPU ``gpu_id``; DCGM 4.x uses ``"DCGM Diagnostic"`` with lower-case test names,
``entity_group``/``entity_id`` results and a ``test_summary`` per test, with ``metadata`` and
``entity_groups`` beside it at the top level. NVIDIA publishes no stable schema, so anything
we do not recognise raises :class:`UnparseableOutput` rather than passing.
"""

import json

from . import UnparseableOutput

STATUSES = {"pass": "pass", "fail": "fail", "warn": "warn", "warning": "warn", "skip": "skip",
            "skipped": "skip", "not run": "not_run", "notrun": "not_run"}
# worst first: one failing GPU fails the test
_RANK = ["fail", "warn", "not_run", "skip", "unknown", "pass"]


def _status(raw: object) -> str:
    return STATUSES.get(str(raw or "").strip().lower(), "unknown")


def _worst(statuses: list[str]) -> str:
    if not statuses:
        return "not_run"
    return min(statuses, key=_RANK.index)


def _load(text: str) -> dict[str, object]:
    start = text.find("{")  # dcgmi may print a banner line before the document
    if start < 0:
        raise UnparseableOutput("no JSON object in the output")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as exc:
        raise UnparseableOutput(f"the JSON document is malformed: {exc}") from None
    if not isinstance(doc, dict):
        raise UnparseableOutput("the JSON document is not an object")
    return doc


def parse_dcgm_diag(text: str) -> dict[str, object]:
    """Returns ``{"version", "format": "3.x"|"4.x", "tests": [{name, category, status,
    gpus: {gpu: status}, warnings: [..]}], "runtime_error"}``."""
    doc = _load(text)
    if "DCGM Diagnostic" in doc:
        fmt, root = "4.x", doc["DCGM Diagnostic"]
    elif "DCGM GPU Diagnostic" in doc:
        fmt, root = "3.x", doc["DCGM GPU Diagnostic"]
    else:
        raise UnparseableOutput("neither 'DCGM Diagnostic' (4.x) nor 'DCGM GPU Diagnostic' (3.x) at the top")
    if not isinstance(root, dict):
        raise UnparseableOutput(f"'{'DCGM Diagnostic' if fmt == '4.x' else 'DCGM GPU Diagnostic'}' is not an object")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    version = meta.get("version") or root.get("version") or doc.get("version")  # type: ignore[union-attr]
    runtime_error = root.get("runtime_error") or doc.get("runtime_error")
    categories = root.get("test_categories")
    if not isinstance(categories, list):
        if runtime_error:
            return {"version": version, "format": fmt, "tests": [], "runtime_error": str(runtime_error)}
        raise UnparseableOutput("test_categories is missing or not a list")
    tests = []
    for ci, cat in enumerate(categories):
        if not isinstance(cat, dict) or not isinstance(cat.get("tests"), list):
            raise UnparseableOutput(f"test_categories[{ci}] has no tests list")
        for ti, test in enumerate(cat["tests"]):
            if not isinstance(test, dict) or "name" not in test:
                raise UnparseableOutput(f"test_categories[{ci}].tests[{ti}] has no name")
            gpus: dict[str, str] = {}
            warnings: list[str] = []
            for res in test.get("results") or []:
                if not isinstance(res, dict):
                    continue
                if res.get("entity_group", "GPU") != "GPU":
                    continue
                gpu = res.get("entity_id", res.get("gpu_id", res.get("gpu_ids")))
                gpus[str(gpu)] = _status(res.get("status"))
                for w in res.get("warnings") or []:
                    msg = w.get("warning") if isinstance(w, dict) else w
                    if msg:
                        warnings.append(str(msg))
                if isinstance(res.get("warning"), str):  # 3.x puts a single warning string here
                    warnings.append(res["warning"])
            summary = test.get("test_summary")
            if isinstance(summary, dict) and summary.get("status"):
                status = _status(summary.get("status"))
            else:
                status = _worst(list(gpus.values()))
            tests.append({"name": str(test["name"]), "category": str(cat.get("category", "")),
                          "status": status, "gpus": gpus, "warnings": warnings})
    return {"version": version, "format": fmt, "tests": tests,
            "runtime_error": str(runtime_error) if runtime_error else None}


def failing_gpus(test: dict[str, object]) -> list[str]:
    return sorted(g for g, s in test["gpus"].items() if s in ("fail", "warn"))  # type: ignore[union-attr]


def overall(parsed: dict[str, object]) -> str | None:
    tests = parsed["tests"]
    return _worst([t["status"] for t in tests]) if tests else None  # type: ignore[union-attr]

"""Parse ``dcgmi diag -r N -j`` for DCGM 3.x and 4.x.

DCGM 3.x puts everything under ``"DCGM GPU Diagnostic"`` with title-case test names and
per-GPU ``gpu_id``; DCGM 4.x uses ``"DCGM Diagnostic"`` with lower-case test names,
``entity_group``/``entity_id`` results and a ``test_summary`` per test, with ``metadata`` and
``entity_groups`` beside it at the top level. NVIDIA publishes no stable schema, so anything
we do not recognise raises :class:`UnparseableOutput` rather than passing.

Two shapes seen in real 3.x output: ``null`` entries between the tests of a category
(DCGM 3.1: skipped and counted), and results that stand for the whole node rather than
one GPU (the software/deployment tests: ``"gpu_ids": "0,1,2,3"`` or no id at all). Those
are keyed ``all`` (:data:`NODE`): a failure there is about the node, all its GPUs.

``Skip`` is DCGM saying it did not run a test here (a plugin that is not installed, such as
the EUD, or a test the GPU does not support): not a failure of the node, so it is reported
as skipped. It verifies nothing, though: a test the plan requires (``required``) that was
skipped or is absent is the finding, and a run in which no test passed proved nothing.
"""

import json
import re

from . import UnparseableOutput

STATUSES = {"pass": "pass", "fail": "fail", "warn": "warn", "warning": "warn", "skip": "skip",
            "skipped": "skip", "not run": "not_run", "notrun": "not_run"}
# worst first: one failing GPU fails the test
_RANK = ["fail", "warn", "not_run", "skip", "unknown", "pass"]
#: the key of a result that is about the whole node (all GPUs), not one GPU
NODE = "all"


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
    nulls = 0
    for ci, cat in enumerate(categories):
        if cat is None:
            nulls += 1
            continue
        if not isinstance(cat, dict) or not isinstance(cat.get("tests"), list):
            raise UnparseableOutput(f"test_categories[{ci}] has no tests list")
        for ti, test in enumerate(cat["tests"]):
            if test is None:  # DCGM 3.1 puts null between the tests of a category
                nulls += 1
                continue
            if not isinstance(test, dict) or "name" not in test:
                raise UnparseableOutput(f"test_categories[{ci}].tests[{ti}] has no name")
            gpus: dict[str, str] = {}
            warnings: list[str] = []
            for res in test.get("results") or []:
                if not isinstance(res, dict):
                    continue
                status = _status(res.get("status"))
                for key in _where(res):
                    gpus[key] = _worst([status, gpus[key]]) if key in gpus else status
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
    return {"version": version, "format": fmt, "tests": tests, "nulls_skipped": nulls,
            "runtime_error": str(runtime_error) if runtime_error else None}


def _where(res: dict[str, object]) -> list[str]:
    """Which GPUs a result is about: its GPU index, the node (:data:`NODE`) when it names
    all of them or none, or another entity (``"CPU 0"``) in DCGM 4.x."""
    group = res.get("entity_group", "GPU")
    if "entity_id" in res and group != "GPU":
        return [f"{group} {res['entity_id']}"]
    ids = res.get("entity_id", res.get("gpu_id", res.get("gpu_ids")))
    if ids is None or ids == "":
        return [NODE]
    if isinstance(ids, str) and "," in ids:
        return [NODE]  # the deployment tests' one result for every GPU of the run
    return [str(ids).strip()]


def where_text(key: str) -> str:
    if key == NODE:
        return "the node (all GPUs; DCGM reports this test once for the whole run, no GPU id)"
    return f"GPU {key}" if key.isdigit() else key


def failing_gpus(test: dict[str, object]) -> list[str]:
    """Keys of the results that failed or warned: GPU indexes, :data:`NODE`, other entities."""
    return sorted(g for g, s in test["gpus"].items() if s in ("fail", "warn"))  # type: ignore[union-attr]


def test_key(name: str) -> str:
    """A test's name as both DCGM generations spell it: "EUD Test" and "eud", "GPU Memory"
    and "memory", "Targeted Stress" and "targeted_stress" are one test."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    key = key[3:] if key.startswith("gpu") and len(key) > 3 else key
    return key[:-4] if key.endswith("test") and len(key) > 4 else key


def assess(parsed: dict[str, object], required: list[str] | None = None) -> list[dict[str, object]]:
    """Findings ``{code, severity, message[, test, gpu]}``: a failed or warned test is a
    failure naming its GPUs (or the node); a not-run or unknown test verified nothing
    (``error``); a skipped test is ``info`` unless the plan requires it (``required``: test
    names, either generation's spelling) or no test of the run passed (then ``error``); a
    required test missing from the run, a runtime error or no test at all is an ``error``."""
    out: list[dict[str, object]] = []
    if parsed["runtime_error"]:
        return [{"code": "dcgm_runtime_error", "severity": "error",
                 "message": f"DCGM diag could not run: {parsed['runtime_error']}"}]
    need = {test_key(n): n for n in required or []}
    tests: list[dict[str, object]] = parsed["tests"]  # type: ignore[assignment]
    verified = any(t["status"] == "pass" for t in tests)
    for t in tests:
        msg = "; ".join(t["warnings"][:2])  # type: ignore[index]
        if t["status"] in ("fail", "warn"):
            keys = failing_gpus(t)
            where = "; ".join(where_text(k) for k in keys) or "an unnamed entity"
            item = {"code": "dcgm_failed", "severity": "fail", "test": t["name"],
                    "message": f"DCGM {t['name']}: {t['status'].upper()} on {where}" + (f" ({msg})" if msg else "")}  # type: ignore[union-attr]
            if len(keys) == 1 and keys[0].isdigit():
                item["gpu"] = int(keys[0])
            out.append(item)
        elif t["status"] == "skip" and verified and test_key(str(t["name"])) not in need:
            where = "; ".join(where_text(k) for k, s in t["gpus"].items() if s == "skip")  # type: ignore[union-attr]
            out.append({"code": "dcgm_skipped", "severity": "info", "test": t["name"],
                        "message": f"DCGM {t['name']}: skipped on {where or 'every GPU'}" + (f" ({msg})" if msg else "")})
        elif t["status"] in ("skip", "not_run", "unknown"):
            # a test that did not run verified nothing: never a pass
            why = " (required for this SKU)" if test_key(str(t["name"])) in need else (
                " (no test of the run passed)" if t["status"] == "skip" else "")
            out.append({"code": "dcgm_not_run", "severity": "error", "test": t["name"],
                        "message": f"DCGM {t['name']}: {t['status'].replace('_', ' ')}{why}" + (f" ({msg})" if msg else "")})  # type: ignore[union-attr]
    present = {test_key(str(t["name"])) for t in tests}
    for key, name in need.items():
        if key not in present:
            out.append({"code": "dcgm_required_missing", "severity": "error", "test": name,
                        "message": f"DCGM {name} is required for this SKU but is not in the run"})
    if not tests:
        out.append({"code": "dcgm_not_run", "severity": "error", "message": "DCGM diag reported no tests"})
    return out


def overall(parsed: dict[str, object]) -> str | None:
    tests = parsed["tests"]
    return _worst([t["status"] for t in tests]) if tests else None  # type: ignore[union-attr]

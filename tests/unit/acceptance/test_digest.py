"""bringup.acceptance.digest: the figures of burn-in evidence, extracted once when the steps
record it, from documents shaped like the agent's (tests/unit/fleet_fixtures.py) and verdicts
made by the real judge; and the steps record them beside their documents."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fleet_fixtures import METRICS, agent_document, record

from bringup.acceptance import digest
from bringup.acceptance.judge_step import judge, verdict_of
from bringup.errors import NetBoxNotFound, ParseError
from bringup.netbox.evidence import digest_problem, encode, read_digest


def stored(doc) -> dict:
    return {"plan": {"profile": "quick", "checks": list(METRICS)}, "rc": 0, "document": doc}


def test_burnin_digest_holds_the_run_the_metrics_and_each_gpu():
    d = digest.of_burnin(stored(agent_document("n1", hot_gpu=3)))
    assert d["v"] == digest.VERSION and not d.get("problems")
    assert (d["profile"], d["rc"], d["agent_version"], d["partial"]) == ("quick", 0, "0.1.0", False)
    assert d["metrics"]["nccl.busbw_largest_gbps"] == 476.3 and d["metrics"]["clocks.max_temp_c"] == 95
    assert "xid.codes" not in d["metrics"]  # a list, not a figure
    assert d["gpus"][3] == (3, "SN-n1-3", 95, 683.0, 51300.0, "OK") and len(d["gpus"]) == 8


def test_burnin_digest_of_an_odd_gpu_value_is_unknown_not_the_value():
    doc = agent_document("n1")
    next(c for c in doc["checks"] if c["name"] == "clocks")["data"]["gpus"][2]["max_temp_c"] = "N/A"
    d = digest.of_burnin(stored(doc))
    assert d["gpus"][2][2] is None and d["gpus"][1][2] == 61
    digest.parse("burnin", d)  # still a valid digest


@pytest.mark.parametrize(("record_", "path", "text"), [
    ({"plan": {}, "rc": 0}, "", "holds no agent document"),
    (stored({"unparsed": "Segmentation fault\n{", "file": "/tmp/r.json"}), ".document", "not JSON"),
])
def test_burnin_digest_of_unreadable_evidence_names_where_and_has_no_figures(record_, path, text):
    d = digest.of_burnin(record_)
    [(where, message)] = d["problems"]
    assert where == path and text in message
    assert d.get("metrics") is None and not d.get("gpus")


def test_burnin_digest_of_a_malformed_field_names_its_path():
    doc = agent_document("n1")
    doc["checks"][3]["status"] = "mostly"
    [(where, _)] = digest.of_burnin(stored(doc))["problems"]
    assert where == ".document.checks[3].status"


def test_verdict_digest_holds_status_reasons_and_key_figures():
    verdict = verdict_of("n1", record("n1"), stored(agent_document("n1", hot_gpu=3)))
    d = digest.of_verdict(verdict)
    assert d["status"] == "fail"
    assert d["reasons"] == [("clocks", "temperature_high", "fail", "GPU 3: 95 C under load")]
    assert d["figures"]["busbw_gbps"] == 476.3 and d["figures"]["driver"] == "570.86.15"
    bad = digest.of_verdict({"status": "passish", "reasons": []})
    assert bad["problems"][0][0] == ".status" and "status" not in bad


def test_a_digest_read_back_is_validated_naming_the_bad_field():
    d = digest.of_burnin(stored(agent_document("n1")))
    d["metrics"]["nccl.busbw_largest_gbps"] = "fast"
    with pytest.raises(ParseError) as exc:
        digest.parse("burnin", d)
    assert exc.value.path.startswith("$.metrics.nccl.busbw_largest_gbps")
    with pytest.raises(ParseError, match="status"):
        digest.parse("verdict", '{"v": 1, "status": "passish"}')


def test_with_digest_keeps_the_summary_and_names_the_checksum_encode_records():
    doc = stored(agent_document("n1"))
    head = digest.with_digest("burnin", doc, "## Burn-in document (quick profile)\n")
    assert head.startswith("## Burn-in document (quick profile)\n\n```bringup-digest kind=burnin ")
    found = read_digest(head)
    _, rec = encode("burnin", doc)
    assert found.sha256 == rec["sha256"] and digest_problem("burnin", found, rec["sha256"]) is None
    assert found.data["metrics"] == digest.of_burnin(doc)["metrics"]


def test_the_judge_step_records_the_verdict_with_its_digest():
    rec = record("n1")
    burnin = stored(agent_document("n1", hot_gpu=3))

    def get(node, custom_fields, kind):
        if kind == "burnin":
            return burnin
        raise NetBoxNotFound("no verdict yet")
    ctx = SimpleNamespace(evidence=SimpleNamespace(get=get), netbox=SimpleNamespace(nodes=lambda **kw: []))
    [ev] = judge(ctx, rec, {}).evidence
    found = read_digest(ev.summary)
    assert ev.summary.startswith("## Burn-in verdict: FAIL")
    assert found.kind == "verdict" and found.data["status"] == "fail"
    assert found.sha256 == encode("verdict", ev.document)[1]["sha256"]


def test_the_burn_in_step_records_the_document_with_its_digest(monkeypatch):
    from bringup.acceptance.burnin_step import burn_in
    from bringup.provision import ansible_steps

    doc = agent_document("n1")
    run = ansible_steps.BurninRun(node="n1", text="", document=doc, rc=0)
    monkeypatch.setattr(ansible_steps, "run_burnin", lambda *a, **kw: run)
    ctx = SimpleNamespace(host=lambda rec: {rec.name: {}}, ssh_access=lambda: None)
    [ev] = burn_in(ctx, record("n1"), {"burnin_profile": "quick"}).evidence
    found = read_digest(ev.summary)
    assert found.kind == "burnin" and found.sha256 == encode("burnin", ev.document)[1]["sha256"]
    assert found.data["metrics"]["nccl.busbw_largest_gbps"] == 476.3 and len(found.data["gpus"]) == 8


def test_a_document_that_cannot_be_digested_is_recorded_without_one(monkeypatch):
    def odd(stored):
        raise TypeError("'NoneType' object is not subscriptable")  # a shape the extractor did not foresee
    monkeypatch.setattr(digest, "of_burnin", odd)
    assert digest.with_digest("burnin", stored(agent_document("n1")), "## Burn-in document") == "## Burn-in document"

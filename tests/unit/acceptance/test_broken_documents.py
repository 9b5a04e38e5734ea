"""A broken burn-in document is an unknown, not a stuck node: a cut agent document, cut
evidence in NetBox or a document of odd shape becomes an incomplete verdict (a quarantine
reason naming the file and the parse error), never a crash of the judge and never a
stale ``pass``; a forced rerun burns in again."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest
from lifecycle_fakes import MemoryRecords
from test_judge import good_doc

from bringup.acceptance.judge_step import judge, verdict_of
from bringup.acceptance.thresholds import thresholds_for
from bringup.errors import ParseError
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle, State
from bringup.lifecycle.results import StepResult
from bringup.netbox.adapter import NodeRecord
from bringup.netbox.evidence import decode, encode
from bringup.sku import load_skus

H100 = "hgx-h100-80gb"
FILE = "n1:/var/lib/bringup/burnin/result.json"


@pytest.fixture(scope="module")
def sku():
    return load_skus()[H100]


def _rec(sku, **fields) -> NodeRecord:
    return NodeRecord(id=1, name="n1", site="s", rack="r", status="active", stage="burned_in", sku=sku, pool={},
                      macs={}, bmc_address="", address="", serial="", url="", tags=[], custom_fields=dict(fields))


def _cut(sku) -> dict:
    text = json.dumps(good_doc(thresholds_for(sku)))
    return {"plan": {}, "rc": 0, "document": {"unparsed": text[: len(text) // 2], "file": FILE}}


def test_a_cut_agent_document_is_incomplete_naming_the_file_and_the_parse_error(sku):
    v = verdict_of("n1", _rec(sku), _cut(sku))
    assert v["status"] == "incomplete"
    msg = v["reasons"][0]["message"]
    assert FILE in msg and "not JSON" in msg and "line 1 column" in msg


def test_a_document_of_odd_shape_does_not_crash_the_judge(sku):
    doc = good_doc(thresholds_for(sku))
    for c in doc["checks"]:
        if c["name"] == "ecc":
            c["data"] = {"gpus": None}          # cut where a list was due
        if c["name"] == "versions":
            c["data"] = {"installed": "570."}   # cut where a mapping was due
    v = verdict_of("n1", _rec(sku), {"document": doc})
    assert v["status"] == "incomplete" and "cannot be judged" in v["reasons"][0]["message"]


def test_altered_gzip_evidence_is_a_parse_error_not_a_zlib_crash():
    blocks, _ = encode("burnin", {"x": [str(i) * 50 for i in range(4000)]})
    head, rest = blocks[0].split("\n", 1)
    payload = bytearray(base64.b64decode(rest.rsplit("\n", 1)[0]))
    for k in range(20, 28):   # bytes flipped inside the deflate stream: zlib.error, not EOF or CRC
        payload[k] ^= 0xFF
    with pytest.raises(ParseError, match="cannot be decoded"):
        decode("burnin", [f"{head}\n{base64.b64encode(bytes(payload)).decode()}\n```"], source="n1")


class _Evidence:
    """ctx.evidence over MemoryRecords; ``broken`` kinds read back as NetBox's cut entries would."""

    def __init__(self, records, broken=()):
        self.records, self.broken = records, set(broken)

    def get(self, node, custom_fields, kind):
        from bringup.errors import NetBoxNotFound
        if kind in self.broken:
            raise ParseError("parts [1] of 2 found; some entries are missing", source=f"{node} evidence {kind!r}")
        try:
            return self.records.evidence[node][kind]
        except KeyError:
            raise NetBoxNotFound(f"{node}: no {kind} evidence") from None


def _lifecycle(records, sku, ctx, calls):
    def step(name):
        def fn(node, params):
            calls.append(name)
            return StepResult(node=node.name, step=name, ok=True)
        return fn
    fns = {n: step(n) for n in STEP_NAMES}

    def judged(node, params):
        calls.append("judge")
        return judge(ctx, _rec(sku, **node.custom_fields), params)
    fns["judge"] = judged
    return Lifecycle(steps=fns, records=records)


@pytest.mark.parametrize("broken", ["cut document", "cut evidence"])
def test_the_node_is_quarantined_with_the_reason_no_stale_pass_and_a_forced_rerun_burns_in(sku, broken):
    records, calls = MemoryRecords("n1"), []
    n = records.nodes["n1"]
    n.stage, n.custom_fields["burnin_status"] = State.BURNED_IN.value, "pass"   # a pass of an earlier burn-in
    records.evidence["n1"] = {"burnin": _cut(sku)}
    # the judge step reads its peers from NetBox: a fleet of one here
    ctx = SimpleNamespace(evidence=_Evidence(records, broken=["burnin"] if broken == "cut evidence" else []),
                          netbox=SimpleNamespace(nodes=lambda **filters: []))
    lc = _lifecycle(records, sku, ctx, calls)
    res = lc.run_step("n1", State.BURNED_IN, "judge")
    assert res.state == State.QUARANTINED.value
    assert n.custom_fields["burnin_status"] == "incomplete"
    reason = n.custom_fields["bringup_reason"]
    assert (FILE in reason and "not JSON" in reason) if broken == "cut document" else \
        ("n1 evidence 'burnin'" in reason and "entries are missing" in reason)
    # a rerun (forced: a quarantined node waits for an operator) burns in again
    state = lc.start("n1", force=True)
    while state not in (State.BURNED_IN, State.QUARANTINED):
        for st in lc.pending_steps("n1", state):
            state = State(lc.run_step("n1", state, st.name).state)
    assert calls.count("burn_in") == 1 and state == State.BURNED_IN


def test_run_burnin_keeps_a_cut_document_as_text(tmp_path, monkeypatch):
    from bringup.provision import ansible_steps
    from bringup.remote.ansible import HostResult, PlaybookResult

    def fake_playbook(playbook, hosts, extra, access, timeout=None):
        (tmp_path / "agent").mkdir(exist_ok=True)
        from pathlib import Path
        Path(extra["burnin_fetch_dir"], "n1.json").write_text('{"schema_version": 1, "checks": [{"na')
        return PlaybookResult(playbook, "failed", 2, {"n1": HostResult("n1", ok=True, ran=True,
                                                                       facts={"burnin_rc": 137})})
    monkeypatch.setattr(ansible_steps, "run_playbook", fake_playbook)
    agent = tmp_path / "burnin"
    agent.mkdir()
    (agent / "__main__.py").write_text("")
    run = ansible_steps.run_burnin("n1", {"address": "127.0.0.1"}, {"budget_s": 10}, access=None, agent_dir=agent)
    assert run.document == {"unparsed": '{"schema_version": 1, "checks": [{"na', "file": FILE}
    assert run.rc == 137

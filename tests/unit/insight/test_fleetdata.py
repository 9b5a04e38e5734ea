"""bringup.insight.fleetdata: histories written by the real evidence store and judge, read back into
DataFrames; unreadable evidence is a finding row, never a pass and never the end of the load."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import pandas as pd
import pytest
from fleet_fixtures import T0, Journal, burn_in_and_judge, history, record

from bringup.acceptance import digest
from bringup.insight import fleetdata
from bringup.insight.fleetdata import JournalEntry, build, documents, load
from bringup.netbox import evidence
from bringup.netbox.adapter import NetBox


def test_two_burn_ins_fail_then_pass():
    j = Journal()
    burn_in_and_judge(j, "n1", T0, hot_gpu=3)
    burn_in_and_judge(j, "n1", T0 + timedelta(hours=5))
    fd = build([history("n1", j, ((0, "planned"), (1, "provisioned"), (1.6, "quarantined")))])
    runs = fd.runs.set_index("run")
    assert list(runs["verdict"]) == ["fail", "pass"]
    assert runs.loc[1, "reasons"] == "GPU 3: 95 C under load"
    assert runs.loc[2, "reasons"] == ""
    assert runs.loc[1, "max_temp_c"] == 95 and runs.loc[2, "max_temp_c"] == 63
    assert runs.loc[2, "busbw_gbps"] == 476.3 and runs.loc[2, "driver"] == "570.86.15"
    assert runs.loc[1, "duration_s"] == 1800.0
    assert runs.loc[1, "burnin_at"] == pd.Timestamp(T0 + timedelta(minutes=31))
    assert list(fd.reasons[["run", "check", "code"]].itertuples(index=False, name=None)) == [
        (1, "clocks", "temperature_high")]
    assert fd.findings.empty


def test_per_gpu_and_figures_tables():
    j = Journal()
    burn_in_and_judge(j, "n1", T0, hot_gpu=3)
    fd = build([history("n1", j)])
    gpus = fd.gpus.set_index("gpu")
    assert len(gpus) == 8 and gpus.loc[3, "max_temp_c"] == 95 and gpus.loc[0, "max_temp_c"] == 60
    assert gpus.loc[7, "serial"] == "SN-n1-7" and gpus.loc[7, "gflops"] == 51700.0
    assert gpus.loc[2, "max_power_w"] == 682.0 and set(gpus["burn_status"]) == {"OK"}
    fig = fd.figures.iloc[0]
    assert fig["nccl.busbw_largest_gbps"] == 476.3 and fig["gpu_burn.gflops_min"] == 51000.0
    assert "xid.codes" not in fd.figures.columns  # a list, not a figure


def test_stage_table_has_ends_and_open_interval():
    fd = build([history("n1", None, ((0, "planned"), (2, "provisioned"), (3, "active")))])
    st = fd.stages
    assert list(st["stage"]) == ["planned", "provisioned", "active"]
    assert st.loc[0, "end"] == pd.Timestamp(T0 + timedelta(hours=2))
    assert pd.isna(st.loc[2, "end"])
    assert fd.runs.empty and list(fd.nodes["node"]) == ["n1"]


def test_altered_document_is_a_finding_and_other_nodes_still_load():
    bad, good = Journal(), Journal()
    burn_in_and_judge(bad, "n1", T0)
    burn_in_and_judge(good, "n2", T0)
    e = bad.entries[1]  # the verdict: "pass" changed to... something else
    bad.entries[1] = JournalEntry(e.id, e.created, e.kind, e.comments.replace('"pass"', '"fail"'))
    fd = build([history("n1", bad), history("n2", good)])
    runs = fd.runs.set_index("node")
    assert runs.loc["n1", "verdict"] == "unreadable"  # not the pass it once was
    assert runs.loc["n2", "verdict"] == "pass"
    [(node, path, error)] = fd.findings.itertuples(index=False, name=None)
    assert node == "n1" and path == "journal #2 (verdict)" and "SHA-256" in error


def test_agent_output_that_is_not_json_names_where():
    j = Journal()
    verdict = burn_in_and_judge(j, "n1", T0, raw={"unparsed": "Segmentation fault\n{", "file": "/tmp/r.json"})
    assert verdict["status"] == "incomplete"
    fd = build([history("n1", j)])
    assert fd.runs.loc[0, "verdict"] == "incomplete"
    [(node, path, error)] = fd.findings.itertuples(index=False, name=None)
    assert (node, path) == ("n1", "journal #1 (burnin).document") and "not JSON" in error
    assert fd.gpus.empty


def test_malformed_agent_field_names_its_path():
    j = Journal()
    from fleet_fixtures import agent_document
    doc = agent_document("n1")
    doc["checks"][3]["status"] = "mostly"
    burn_in_and_judge(j, "n1", T0, raw=doc)
    fd = build([history("n1", j)])
    assert fd.findings.loc[0, "path"] == "journal #1 (burnin).document.checks[3].status"
    assert fd.runs.loc[0, "verdict"] != "pass"


def test_verdict_of_unknown_status_names_its_path():
    j = Journal()
    evidence.EvidenceStore(j).put(1, "verdict", {"status": "passish", "reasons": []})
    fd = build([history("n1", j)])
    assert fd.runs.loc[0, "verdict"] == "unreadable"
    assert fd.findings.loc[0, "path"] == "journal #1 (verdict).status"


def test_burn_in_not_judged_yet_is_pending():
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    fd = build([history("n1", j.__class__())])  # empty journal: no runs
    assert fd.runs.empty
    j.entries.pop()  # the verdict never came
    fd = build([history("n1", j)])
    assert list(fd.runs["verdict"]) == ["pending"]


def test_large_document_in_parts_is_reassembled(monkeypatch):
    monkeypatch.setattr(evidence, "CHUNK", 1000)
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    assert len(j.entries) > 3  # the burn-in document went gzip+base64, in several entries
    fd = build([history("n1", j)])
    assert fd.findings.empty and list(fd.runs["verdict"]) == ["pass"] and len(fd.gpus) == 8


def test_missing_part_is_a_finding(monkeypatch):
    monkeypatch.setattr(evidence, "CHUNK", 1000)
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    del j.entries[1]  # the burn-in document's second part
    docs, bad = documents("n1", j.entries)
    assert [d.kind for d in docs] == ["verdict"]
    assert bad == [("n1", "journal #1 (burnin)", "some parts of this document are missing")]


def test_notes_without_evidence_are_skipped():
    entries = [JournalEntry(1, T0.isoformat(), "danger", "## Quarantined in state provisioned\n\n- burn_in failed")]
    assert documents("n1", entries) == ([], [])


class FakeNetBox:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def nodes(self, site=None, rack=None):
        return [record("n1", 7)]

    def journals(self, ids):
        return {7: [{"id": e.id, "created": e.created, "kind": e.kind, "comments": e.comments}
                    for e in self.journal.entries]}

    def stage_changes(self, ids):
        return {7: [(T0.isoformat(), "planned"), ((T0 + timedelta(hours=1)).isoformat(), "active")]}

    def _raw(self, method, path, **kw):
        # the adapter's generic read, for the GPUs out of service: GPU 5 of n1
        assert (method, path) == ("GET", "dcim/inventory-items/"), (method, path)
        item = {"id": 1, "device": {"id": 7}, "name": "GPU 5", "status": {"value": "failed"}, "serial": "",
                "description": "XID 48", "tags": [{"slug": "bringup-gpu-quarantine"}], "custom_fields": {}}
        return SimpleNamespace(json=lambda: {"results": [item], "next": None})


def test_load_reads_through_the_adapter():
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    fd = load(FakeNetBox(j))
    assert fd.nodes.loc[0, ["node", "pool", "sku", "gpus", "gpus_healthy"]].tolist() == [
        "n1", "training", "hgx-h100-80gb", 8, 7]
    assert list(fd.runs["verdict"]) == ["pass"] and list(fd.stages["stage"]) == ["planned", "active"]


def _change(device, time, before, after):
    cf = lambda v: {"custom_fields": {"bringup_stage": v}} if v is not None else None
    return SimpleNamespace(changed_object_id=device, time=time, prechange_data=cf(before), postchange_data=cf(after))


def test_adapter_stage_changes_keep_only_stage_moves():
    changes = [_change(7, "2026-03-02T09:00:00Z", "planned", "discovered"),
               _change(7, "2026-03-02T08:00:00Z", None, "planned"),           # created
               _change(7, "2026-03-02T09:30:00Z", "discovered", "discovered"),  # evidence, lease writes
               _change(8, "2026-03-02T10:00:00Z", {"value": "planned", "label": "Planned"},
                       {"value": "active", "label": "Active"})]
    seen = []

    def filter_(**kw):
        seen.append(kw)
        return [c for c in changes if c.changed_object_id in kw["changed_object_id"]]
    api = SimpleNamespace(core=SimpleNamespace(object_changes=SimpleNamespace(filter=filter_)))
    out = NetBox(api).stage_changes([7, 8], chunk=1)
    assert out == {7: [("2026-03-02T08:00:00Z", "planned"), ("2026-03-02T09:00:00Z", "discovered")],
                   8: [("2026-03-02T10:00:00Z", "active")]}
    assert [kw["changed_object_id"] for kw in seen] == [[7], [8]]


@pytest.mark.parametrize("chunk", [1, 100])
def test_adapter_journals_by_device(chunk):
    entries = [SimpleNamespace(id=1, assigned_object_id=7, created="2026-03-02T08:00:00Z",
                               kind={"value": "info", "label": "Info"}, comments="x")]
    api = SimpleNamespace(extras=SimpleNamespace(journal_entries=SimpleNamespace(
        filter=lambda **kw: [e for e in entries if e.assigned_object_id in kw["assigned_object_id"]])))
    assert NetBox(api).journals([7, 8], chunk=chunk) == {
        7: [{"id": 1, "created": "2026-03-02T08:00:00Z", "kind": "info", "comments": "x"}], 8: []}


# --- digests: the figures recorded beside each document ----------------------------------------
def _tables(fd):
    return {name: getattr(fd, name).reset_index(drop=True) for name in ("runs", "figures", "gpus", "reasons")}


def _replace_digest(entry: JournalEntry, data, *, sha: str | None = None, check: str | None = None) -> JournalEntry:
    """The entry with its digest replaced by ``data`` (checksum recomputed unless ``check``)."""
    head, rest = entry.comments.split("```bringup-digest ", 1)
    meta, rest = rest.split("\n", 1)
    tail = rest.split("\n```", 1)[1]
    fields = dict(kv.split("=", 1) for kv in meta.split())
    sha = sha or fields["sha256"]
    body = json.dumps(data, sort_keys=True, separators=(",", ":"))
    check = check or evidence.digest_checksum(sha, body)
    return JournalEntry(entry.id, entry.created, entry.kind,
                        f"{head}```bringup-digest kind={fields['kind']} sha256={sha} check={check}\n{body}\n```{tail}")


def test_digests_and_documents_give_the_same_tables():
    new, old = Journal(), Journal()
    for j, digests in ((new, True), (old, False)):
        burn_in_and_judge(j, "n1", T0, hot_gpu=3, digests=digests)
        burn_in_and_judge(j, "n1", T0 + timedelta(hours=5), digests=digests)
        burn_in_and_judge(j, "n1", T0 + timedelta(hours=9), raw={"unparsed": "Killed\n{", "file": "r.json"},
                          digests=digests)
    assert "```bringup-digest" in new.entries[0].comments and "```bringup-digest" not in old.entries[0].comments
    a, b = build([history("n1", new)]), build([history("n1", old)])
    for name, frame in _tables(a).items():
        pd.testing.assert_frame_equal(frame, _tables(b)[name], obj=name)
    pd.testing.assert_frame_equal(a.findings, b.findings)
    assert list(a.runs["verdict"]) == ["fail", "pass", "incomplete"] and len(a.findings) == 1


def test_the_reader_uses_digests_and_decodes_no_document(monkeypatch):
    j = Journal()
    burn_in_and_judge(j, "n1", T0, hot_gpu=3)
    decoded = []
    real = fleetdata.decode
    monkeypatch.setattr(fleetdata, "decode", lambda kind, texts, **kw: decoded.append(kind) or real(kind, texts, **kw))
    fd = build([history("n1", j)])
    assert decoded == [] and list(fd.runs["verdict"]) == ["fail"] and fd.gpus.loc[3, "max_temp_c"] == 95
    build([history("n1", j)], verify=True)
    assert decoded == ["burnin", "verdict"]  # verify: every document is decoded and compared


def test_evidence_from_before_digests_is_decoded(monkeypatch):
    j = Journal()
    burn_in_and_judge(j, "n1", T0, digests=False)
    decoded = []
    real = fleetdata.decode
    monkeypatch.setattr(fleetdata, "decode", lambda kind, texts, **kw: decoded.append(kind) or real(kind, texts, **kw))
    fd = build([history("n1", j)])
    assert decoded == ["burnin", "verdict"] and fd.figures.loc[0, "nccl.busbw_largest_gbps"] == 476.3
    assert fd.findings.empty


def test_an_edited_digest_is_a_finding_and_the_document_figures_are_used():
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    e = j.entries[0]
    j.entries[0] = JournalEntry(e.id, e.created, e.kind, e.comments.replace('"nccl.busbw_largest_gbps":476.3',
                                                                            '"nccl.busbw_largest_gbps":999.0', 1))
    fd = build([history("n1", j)])
    [(node, path, error)] = fd.findings.itertuples(index=False, name=None)
    assert (node, path) == ("n1", "journal #1 (burnin) digest") and "checksum" in error
    assert fd.figures.loc[0, "nccl.busbw_largest_gbps"] == 476.3


def test_a_digest_of_another_document_is_a_finding():
    j, other = Journal(), Journal()
    burn_in_and_judge(j, "n1", T0)
    burn_in_and_judge(other, "n2", T0, hot_gpu=5)
    e, pasted = j.entries[0], other.entries[0]
    digest_of_n2 = pasted.comments[pasted.comments.index("```bringup-digest"):pasted.comments.index("```bringup-evidence")]
    j.entries[0] = JournalEntry(e.id, e.created, e.kind, "## Burn-in document\n\n" + digest_of_n2
                                + e.comments[e.comments.index("```bringup-evidence"):])
    fd = build([history("n1", j)])
    [(_, path, error)] = fd.findings.itertuples(index=False, name=None)
    assert path == "journal #1 (burnin) digest" and "not of this burnin document" in error
    assert set(fd.gpus["serial"]) == {f"SN-n1-{i}" for i in range(8)}  # n1's own, from its document


def test_figures_that_are_not_the_document_s_are_a_finding_in_verify_mode():
    j = Journal()
    verdict = burn_in_and_judge(j, "n1", T0)
    forged = digest.of_verdict({**verdict, "status": "fail"})  # a faulty extractor; checksum made right
    j.entries[1] = _replace_digest(j.entries[1], forged)
    assert list(build([history("n1", j)]).runs["verdict"]) == ["fail"]  # trusted as recorded: not decoded
    fd = build([history("n1", j)], verify=True)
    [(_, path, error)] = fd.findings.itertuples(index=False, name=None)
    assert path == "journal #2 (verdict) digest" and "figures are not its document's" in error
    assert list(fd.runs["verdict"]) == ["pass"]


def test_a_malformed_digest_names_its_path_and_the_document_is_read():
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    d = json.loads(j.entries[0].comments.split("```bringup-digest ", 1)[1].split("\n")[1])
    d["metrics"]["nccl.busbw_largest_gbps"] = "fast"
    j.entries[0] = _replace_digest(j.entries[0], d)
    fd = build([history("n1", j)])
    [(_, path, _)] = fd.findings.itertuples(index=False, name=None)
    assert path.startswith("journal #1 (burnin) digest.metrics.nccl.busbw_largest_gbps")
    assert fd.figures.loc[0, "nccl.busbw_largest_gbps"] == 476.3


def test_a_digest_of_another_version_is_not_used_and_not_a_finding():
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    j.entries[0] = _replace_digest(j.entries[0], {"v": 2, "busbw": "in another shape"})
    fd = build([history("n1", j)])
    assert fd.findings.empty and fd.figures.loc[0, "nccl.busbw_largest_gbps"] == 476.3


def test_load_reads_the_fleet_in_chunks_and_can_verify():
    j = Journal()
    burn_in_and_judge(j, "n1", T0)
    nb = FakeNetBox(j)
    nb.nodes = lambda site=None, rack=None: [record("n1", 7), record("n2", 8)]
    asked = []
    journals = nb.journals
    nb.journals = lambda ids: asked.append(list(ids)) or {i: journals(ids).get(7, []) for i in ids}
    nb.stage_changes = lambda ids: {i: [] for i in ids}
    fd = load(nb, chunk=1, verify=True)
    assert asked == [[7], [8]] and list(fd.runs["verdict"]) == ["pass", "pass"] and fd.findings.empty

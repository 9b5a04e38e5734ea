"""NVSentinel's ExternalRemediationRequest read (bringup.kube.remediation), acted on and
answered (bringup.service.handoff), on the example object of NVSentinel's ADR-040
(tests/fixtures/kube/nvsentinel/err-example.yaml)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from bringup.errors import ConfigError
from bringup.kube import remediation as r_
from bringup.service import handoff as h

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "kube" / "nvsentinel" / "err-example.yaml"
T0 = datetime(2026, 5, 11, 21, 0, tzinfo=UTC)


def err(**changes):
    doc = yaml.safe_load(EXAMPLE.read_text())
    for path, value in changes.items():
        cur = doc
        *head, last = path.split(".")
        for k in head:
            cur = cur.setdefault(k, {})
        cur[last] = value
    return doc


def test_the_documented_err_reads_as_an_open_request_on_gpu_0():
    r = r_.parse(err())
    assert isinstance(r, r_.Request)
    assert (r.name, r.node) == ("gpu0-xid79-node-01", "node-01.example-cluster.internal")
    assert r.error_codes == ("XID-79",) and r.gpus == (0,) and r.fatal and r.recommended == "CUSTOM"
    assert (r.released, r.complete) == ("True", "Unknown") and r.open and r.accepted_at is None


def test_a_request_nvsentinel_has_not_released_or_that_is_done_is_not_open():
    assert not r_.parse(err(status={"conditions": []})).open
    done = err()
    done["status"]["conditions"][1]["status"] = "True"
    assert not r_.parse(done).open
    assert not r_.parse(err(**{"metadata.deletionTimestamp": "2026-05-12T00:00:00Z"})).open


@pytest.mark.parametrize("path,value,where", [
    ("spec.healthEvent.nodeName", "", "spec.healthEvent.nodeName"),
    ("spec.healthEvent.errorCode", [79], "spec.healthEvent.errorCode"),
    ("spec.healthEvent", "XID 79", "spec.healthEvent"),
    ("spec.healthEvent.entitiesImpacted", ["GPU 0"], "spec.healthEvent.entitiesImpacted[0]"),
])
def test_a_malformed_field_is_named_by_its_path(path, value, where):
    bad = r_.parse(err(**{path: value}))
    assert isinstance(bad, r_.Malformed) and bad.path == where and bad.name == "gpu0-xid79-node-01"


def test_the_policy_picks_the_first_matching_rule_and_says_why():
    policy = h.load_policy()
    p = h.plan(policy, r_.parse(err()))
    assert p.action == "reburnin" and "XID 79/74" in p.why
    assert p.reasons == [("NVSentinel handed the node over (gpu0-xid79-node-01: XID-79): GPU fell off the bus (XID 79) "
                         "on /dev/nvidia0; node requires hardware-level repair.")]
    switch = r_.parse(err(**{"spec.healthEvent.componentClass": "nvswitch", "spec.healthEvent.errorCode": ["SXID-12028"]}))
    assert h.plan(policy, switch).action == "inspection"
    other = r_.parse(err(**{"spec.healthEvent.errorCode": ["XID-48"]}))
    assert h.plan(policy, other).action == "reburnin" and "default" in h.plan(policy, other).why


def test_a_rule_on_an_unknown_fact_is_refused(tmp_path):
    bad = tmp_path / "n.yaml"
    bad.write_text("rules:\n  - when: [{field: xid, op: equals, value: '79'}]\n    then: reburnin\n")
    with pytest.raises(ConfigError, match="xid"):
        h.load_policy(bad)


def accepted(at=T0):
    doc = err()
    doc["metadata"].setdefault("annotations", {})[r_.ACCEPTED] = at.isoformat()
    return r_.parse(doc)


def test_completion_true_once_the_node_serves_again_after_leaving_service():
    r = accepted()
    changes = [(T0 - timedelta(days=3), "active"), (T0 + timedelta(minutes=1), "draining"),
               (T0 + timedelta(minutes=5), "provisioned"), (T0 + timedelta(minutes=40), "active")]
    c = h.completion(r, "active", changes)
    assert c is not None and c.status == "True" and "serves again" in c.message
    cond = r_.condition(c.status, c.reason, c.message, 1, T0 + timedelta(hours=1))
    assert cond["type"] == "ExternalRemediationComplete" and cond["status"] == "True"
    assert cond["lastTransitionTime"] == "2026-05-11T22:00:00Z"


def test_completion_false_when_bringup_quarantined_it_and_none_meanwhile():
    r = accepted()
    out = [(T0 + timedelta(minutes=1), "draining"), (T0 + timedelta(minutes=30), "quarantined")]
    c = h.completion(r, "quarantined", out)
    assert c is not None and c.status == "False" and c.reason == "QuarantinedByBringup"
    assert h.completion(r, "burned_in", out[:1]) is None                     # still walking
    assert h.completion(r, "active", [(T0 - timedelta(days=1), "active")]) is None   # never left since
    assert h.completion(r_.parse(err()), "active", out) is None                # never accepted


def test_the_documented_err_is_unchanged_by_parsing():
    doc = err()
    before = copy.deepcopy(doc)
    r_.parse(doc)
    assert doc == before


def test_a_node_in_inspection_keeps_the_request_open_until_the_repair_is_re_tested():
    r = accepted()
    sent = [(T0 + timedelta(minutes=1), "inspection")]
    assert h.completion(r, "inspection", sent) is None           # the repair is the remediation
    back = [*sent, (T0 + timedelta(days=2), "provisioned"), (T0 + timedelta(days=2, hours=1), "active")]
    c = h.completion(r, "active", back)
    assert c is not None and c.status == "True"


def test_an_err_raised_by_an_externalfault_names_it():
    doc = err()
    doc["metadata"]["ownerReferences"] = [{"apiVersion": "nvsentinel.dgxc.nvidia.com/v1", "kind": "ExternalFault",
                                           "name": "bringup-n1-abc-20261206100000", "uid": "u1", "controller": True}]
    assert r_.parse(doc).raised_by == "bringup-n1-abc-20261206100000" and r_.parse(err()).raised_by == ""

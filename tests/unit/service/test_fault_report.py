"""The ExternalFault bringup creates for its own findings when NVSentinel owns the nodes'
health (bringup.service.fault_report): NVSentinel's fields and vocabulary (ADR-049's and
ADR-040's documented health events), XIDs as NVSentinel writes them, the GPUs named, one
component class or the node; and the hand-off policy sends a part to replace to inspection."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import yaml

from bringup.kube import external_fault as ef
from bringup.kube.remediation import Request
from bringup.service import fault_report as fr
from bringup.service.handoff import load_policy, plan
from bringup.service.health import Signal

FIX = Path(__file__).parents[2] / "fixtures" / "kube" / "nvsentinel"
AT = datetime(2026, 12, 6, 10, 0, 5, tzinfo=UTC)
XID = Signal("xid_fatal", "critical", "GPU 3: XID 79 since the last look", {"gpu": 3, "xid": 79})
ECC = Signal("ecc_uncorrected_new", "critical", "GPU 5: 2 new uncorrectable ECC errors", {"gpu": 5})
PSU = Signal("bmc_psu_lost", "critical", "BMC: power supply PSU2 is Absent", {"member": "PSU2"})


def test_an_xid_is_reported_on_its_gpu_in_nvsentinels_words():
    body = fr.external_fault(load_policy().report, "gpu-n01", [XID], AT)
    assert body["apiVersion"] == "nvsentinel.dgxc.nvidia.com/v1" and body["kind"] == "ExternalFault"
    event = body["spec"]["healthEvent"]
    assert event["errorCode"] == ["XID-79"] and event["componentClass"] == "GPU"
    assert event["entitiesImpacted"] == [{"entityType": "GPU", "entityValue": "3"}]
    assert (event["nodeName"], event["isFatal"], event["isHealthy"]) == ("gpu-n01", True, False)
    assert (event["recommendedAction"], event["customRecommendedAction"]) == ("CUSTOM", "external-remediation")
    assert event["generatedTimestamp"] == "2026-12-06T10:00:05Z" and event["message"] == XID.message
    assert body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "bringup"


def test_findings_of_several_components_are_the_nodes_and_a_bmc_finding_names_the_node():
    policy = load_policy().report
    mixed = fr.external_fault(policy, "gpu-n01", [XID, PSU], AT)["spec"]["healthEvent"]
    assert mixed["componentClass"] == "NODE" and mixed["errorCode"] == ["XID-79", "bmc_psu_lost"]
    psu = fr.external_fault(policy, "gpu-n01", [PSU], AT)["spec"]["healthEvent"]
    assert psu["entitiesImpacted"] == [{"entityType": "Node", "entityValue": "gpu-n01"}]
    two = fr.external_fault(policy, "gpu-n01", [XID, ECC], AT)["spec"]["healthEvent"]
    assert two["componentClass"] == "GPU" and [e["entityValue"] for e in two["entitiesImpacted"]] == ["3", "5"]


def test_every_field_bringup_writes_is_one_nvsentinels_documented_events_have():
    documented = set()
    for name in ("ef-example.yaml", "err-example.yaml"):
        documented |= set(yaml.safe_load((FIX / name).read_text())["spec"]["healthEvent"])
    event = fr.external_fault(load_policy().report, "n1", [XID], AT)["spec"]["healthEvent"]
    assert set(event) <= documented, set(event) - documented


def test_the_name_is_dns_1123_the_same_for_a_retry_and_apart_for_names_that_clean_up_alike():
    a = fr.fault_name("Rack1/GPU_N01.example", AT)
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", a) and len(a) <= 253
    assert a == fr.fault_name("Rack1/GPU_N01.example", AT) and a != fr.fault_name("rack1-gpu-n01-example", AT)


def test_what_bringup_creates_reads_back_as_its_own_open_fault():
    got = ef.parse(fr.external_fault(load_policy().report, "n1", [XID, ECC], AT))
    assert isinstance(got, ef.Fault) and got.open and got.ours and got.error_codes == ("XID-79", "ecc_uncorrected_new")


def test_the_request_nvsentinel_makes_of_a_lost_psu_goes_to_inspection():
    req = Request(name="r", node="n1", component="NODE", error_codes=("bmc_psu_lost",), released="True")
    assert plan(load_policy(), req).action == "inspection"

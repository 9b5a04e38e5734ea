"""Fleet table and node summaries rendered from node reports."""

from bringup.insight.run_summary import fleet_rows, node_markdown, summary_text
from bringup.lifecycle.results import NodeReport, StepResult

A = NodeReport(node="n1", rack="r1", verdict="admitted", stage="admitted",
               figures={"busbw_gbps": 478.25, "gpus": 8},
               labels={"bringup.io/accelerator": "h100-80gb", "bringup.io/pool": "train"},
               netbox_url="http://nb/dcim/devices/1/")
Q = NodeReport(node="n2", rack="r1", verdict="quarantined", stage="quarantined",
               reasons=["nccl: busbw 300.0 GB/s below 460"], figures={"busbw_gbps": 300.0})
P = NodeReport(node="n3", verdict="pending", stage="discovered", reasons=["bmc timeout"])


def test_fleet_rows_put_quarantined_first_and_format_figures():
    rows = fleet_rows([A, Q])
    assert [r["node"] for r in rows] == ["n2", "n1"]
    assert rows[1]["busbw_gbps"] == "478.2" or rows[1]["busbw_gbps"] == "478.3"
    assert rows[0]["reasons"].startswith("nccl: busbw")
    assert rows[1]["gpus"] == "8" and rows[0]["gpus"] == "-"
    assert "max_temp_c" not in rows[0]


def test_summary_names_joined_with_labels_and_quarantined_with_reason():
    text = summary_text([Q, A, P])
    assert text.splitlines()[0] == "1 joined Kubernetes, 1 cordoned/quarantined, 1 other"
    assert "JOINED      n1: accelerator=h100-80gb, pool=train" in text
    assert "QUARANTINED n2: nccl: busbw 300.0 GB/s below 460" in text
    assert "PENDING" in text and "bmc timeout" in text


def test_node_markdown_lists_stages():
    md = node_markdown(Q, [StepResult(node="n2", step="discover", ok=True, skipped=True),
                           StepResult(node="n2", step="judge", ok=False, reasons=["busbw low"])])
    assert md.startswith("# n2: quarantined")
    assert "| discover | skipped (done before) |" in md
    assert "| judge | **failed** | busbw low |" in md


def test_acceptance_text_says_what_the_fabric_test_and_the_gate_said_per_node():
    from dataclasses import asdict

    from bringup.admission.readiness import Check
    from bringup.insight.run_summary import acceptance_text
    text = acceptance_text([
        ("n1", {"verdict": "pass", "partners": ["n2"], "pairs": [{"busbw_gbps": 371.24, "outcome": "pass"}],
                "links": [{"message": "n1 and n4 each pass with others but fail together"}]},
         # as the gate step keeps its checks (asdict of bringup.admission.readiness.Check)
         {"checks": [asdict(Check("ready", "pass", "Ready")),
                     asdict(Check("allocatable", "pass", "allocatable nvidia.com/gpu: 8"))]}),
        ("n6", {"verdict": "fail", "partners": ["n1", "n2"], "reasons": ["n6 fails with known-good partners n1, n2"]},
         None),
        ("n7", {"verdict": "pass", "partners": ["n1"]},
         {"checks": [asdict(Check("allocatable", "fail", "7, NetBox expects 8")),
                     asdict(Check("smoke pod", "unknown", "no log"))]}),
    ])
    lines = text.splitlines()
    assert lines[1] == "  n1  fabric: pass with n2 (371.2 GB/s); bad link: n1 and n4 each pass with others but fail together"
    assert lines[2].endswith("gate:   passed 2/2 checks")
    assert "fail with n1, n2: n6 fails with known-good partners n1, n2" in lines[3] and lines[4].endswith("gate:   -")
    assert lines[6].endswith("refused: allocatable: fail: 7, NetBox expects 8; smoke pod: unknown: no log")

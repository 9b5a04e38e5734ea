"""The agent's gpu-burn and DCGM parsers and assessments against recorded public outputs
(tests/fixtures/{gpu-burn,dcgm}/README.md)."""

from pathlib import Path

import pytest

from burnin.parsers import UnparseableOutput, dcgm, gpuburn
from burnin.parsers.dcgm import NODE, failing_gpus, overall, parse_dcgm_diag
from burnin.parsers.gpuburn import parse_gpu_burn

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def fixture(*parts: str) -> str:
    return (FIX.joinpath(*parts)).read_text()


def codes(findings):
    return sorted({f["code"] for f in findings})


# --- gpu-burn -------------------------------------------------------------------------------
def test_gpuburn_faulty_while_exit_zero():
    p = parse_gpu_burn(fixture("gpu-burn", "issue12-faulty-16gpu.txt"))
    assert p["tested"] == 16
    assert set(p["gpus"].values()) == {"FAULTY"}
    assert p["errors"][1] == -524288000 and p["errors"][0] == 0
    assert p["temps_c"][:3] == [51, 45, 48]
    assert p["procd"][0] == 18000 and p["gflops"][0] == 6311.0
    f = gpuburn.assess(p)
    assert codes(f) == ["gpuburn_faulty"] and len(f) == 16


def test_gpuburn_gpu_that_never_started_is_a_failure_naming_it():
    # issue #7: "Couldn't init a GPU test", every GPU 0 Gflop/s, yet the summary says OK
    p = parse_gpu_burn(fixture("gpu-burn", "issue7-init-failed-6gpu.txt"))
    assert p["gpus"] == dict.fromkeys(range(6), "OK") and p["finished"]
    assert p["procd"] == [0] * 6 and p["gflops"] == [0.0] * 6
    assert p["init_errors"] == ['Error in "load module":']
    f = gpuburn.assess(p)
    assert codes(f) == ["gpuburn_init_failed", "gpuburn_no_work"]
    assert sorted(x["gpu"] for x in f if x["code"] == "gpuburn_no_work") == list(range(6))
    assert all(x["severity"] == "fail" for x in f)
    assert "GPUs without work: 0, 1, 2, 3, 4, 5" in next(x for x in f if x["code"] == "gpuburn_init_failed")["message"]


def test_gpuburn_no_work_without_a_summary():
    # issue #14: cuBLAS failed to initialise; the report ends before any summary
    p = parse_gpu_burn(fixture("gpu-burn", "issue14-cublas-init-no-summary-8gpu.txt"))
    assert p["tested"] is None and not p["finished"] and p["records"] == 2
    f = gpuburn.assess(p)
    assert codes(f) == ["gpuburn_init_failed", "gpuburn_no_work", "gpuburn_unfinished"]
    assert len([x for x in f if x["code"] == "gpuburn_no_work"]) == 8


def test_gpuburn_init_failed_and_died_single_gpu():
    p = parse_gpu_burn(fixture("gpu-burn", "issue53-init-failed-died-1gpu.txt"))
    assert p["aborted"] and p["died"] == [0] and p["procd"] == [-1]
    f = gpuburn.assess(p)
    assert codes(f) == ["gpuburn_aborted", "gpuburn_died", "gpuburn_init_failed"]
    assert next(x for x in f if x["code"] == "gpuburn_init_failed")["gpu"] == 0


def test_gpuburn_healthy_8gpu_run_with_progress_records_run_together():
    # superbenchmark's recorded A100 run: the records are on one line (carriage returns
    # lost); early records show GPUs 1-7 still at 0, the last one shows work on all
    p = parse_gpu_burn(fixture("gpu-burn", "superbench-a100-8gpu-ok-trimmed.txt"))
    assert p["tested"] == 8 and p["records"] == 5
    assert p["procd"] == [6783, 6783, 6783, 4522, 4522, 6783, 4522, 4522]
    assert min(p["gflops"]) == 16890.0 and p["temps_c"][-1] == 61
    assert gpuburn.assess(p, expect_gpus=8) == []
    assert codes(gpuburn.assess(p, expect_gpus=16)) == ["gpuburn_gpu_count"]


def test_gpuburn_summary_without_progress_cannot_be_verified():
    # issue #124 (A2000): the reporter got no progress lines, only "GPU 0: OK"
    p = parse_gpu_burn(fixture("gpu-burn", "issue124-ok-1gpu.txt"))
    assert p["gpus"] == {0: "OK"} and p["records"] == 0
    f = gpuburn.assess(p)
    assert codes(f) == ["gpuburn_no_progress"] and f[0]["severity"] == "error"


@pytest.mark.parametrize("name,gflops", [("issue124-a500-progress-no-summary.txt", 3519.0),
                                          ("issue8-k80-progress.txt", 2273.0)])
def test_gpuburn_progress_without_summary_is_unfinished(name, gflops):
    p = parse_gpu_burn(fixture("gpu-burn", name))
    assert p["gflops"] == [gflops] and p["tested"] is None
    assert codes(gpuburn.assess(p)) == ["gpuburn_unfinished"]


def test_gpuburn_truncated_summary_is_unparseable():
    with pytest.raises(UnparseableOutput, match="8 GPUs tested but lists 4"):
        parse_gpu_burn(fixture("gpu-burn", "issue123-truncated-8gpu.txt"))


def test_gpuburn_died_and_aborted():
    p = parse_gpu_burn(fixture("gpu-burn", "issue69-died.txt"))
    assert p["aborted"] is True and p["died"] == list(range(8))
    assert "gpuburn_aborted" in codes(gpuburn.assess(p))


def test_gpuburn_nothing_to_read_is_unparseable():
    with pytest.raises(UnparseableOutput):
        parse_gpu_burn("Segmentation fault (core dumped)\n")


# --- DCGM ---------------------------------------------------------------------------------
def test_dcgm4_real_capture_fail_is_a_failure():
    p = parse_dcgm_diag(fixture("dcgm", "dcgm4-gb10-level1.json"))
    assert p["format"] == "4.x" and p["version"] == "4.2.3"
    (t,) = p["tests"]
    assert t["name"] == "software" and t["category"] == "Deployment" and t["status"] == "fail"
    assert failing_gpus(t) == ["0"]
    assert "Persistence mode" in t["warnings"][0]
    assert overall(p) == "fail"
    (f,) = dcgm.assess(p)
    assert f["code"] == "dcgm_failed" and f["gpu"] == 0 and "on GPU 0" in f["message"]


def test_dcgm3_skip_is_never_pass():
    p = parse_dcgm_diag("Successfully ran diagnostic for group.\n" + fixture("dcgm", "dcgm3-t400-level3-excerpt.json"))
    assert p["format"] == "3.x"
    assert [t["name"] for t in p["tests"]] == ["PCIe", "GPU Memory", "Diagnostic", "EUD Test", "Targeted Stress"]
    assert {t["status"] for t in p["tests"]} == {"skip"}
    assert overall(p) == "skip"
    assert {f["severity"] for f in dcgm.assess(p)} == {"error"}


def test_dcgm31_nulls_in_test_lists_and_all_gpu_results():
    # NVIDIA/DCGM's own "real output" test document (3.1.0): null between tests, and the
    # deployment tests' single result for "0,1,2,3,4,5,6,7"
    p = parse_dcgm_diag(fixture("dcgm", "dcgm3.1-nulls-in-tests.json"))
    assert p["version"] == "3.1.0" and p["nulls_skipped"] == 8
    names = [t["name"] for t in p["tests"]]
    assert names[0] == "Denylist" and names[-1] == "software" and len(names) == 10
    assert p["tests"][0]["gpus"] == {NODE: "pass"}
    assert p["tests"][-1]["gpus"] == {str(i): "pass" for i in range(8)}
    assert overall(p) == "pass" and dcgm.assess(p) == []


def test_dcgm_failure_without_a_gpu_id_is_about_the_node():
    # the 3.1 document with its Inforom result turned into a failure: that result names
    # all GPUs ("0,...,7"), so the finding is about the node, never "GPU None"
    doc = fixture("dcgm", "dcgm3.1-nulls-in-tests.json")
    doc = doc.replace('"name" : "Inforom",\n\t\t\t\t\t\t"results" :\n\t\t\t\t\t\t[\n\t\t\t\t\t\t\t{\n'
                      '\t\t\t\t\t\t\t\t"gpu_ids" : "0,1,2,3,4,5,6,7",\n\t\t\t\t\t\t\t\t"status" : "PASS"',
                      '"name" : "Inforom",\n\t\t\t\t\t\t"results" :\n\t\t\t\t\t\t[\n\t\t\t\t\t\t\t{\n'
                      '\t\t\t\t\t\t\t\t"gpu_ids" : "0,1,2,3,4,5,6,7",\n\t\t\t\t\t\t\t\t"status" : "FAIL"')
    p = parse_dcgm_diag(doc)
    (f,) = dcgm.assess(p)
    assert f["test"] == "Inforom" and "gpu" not in f
    assert "the node (all GPUs" in f["message"] and "None" not in f["message"]
    # and a result with no id at all (constructed) is the node too
    bare = parse_dcgm_diag('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", '
                           '"tests": [{"name": "Denylist", "results": [{"status": "FAIL"}]}]}]}}')
    assert bare["tests"][0]["gpus"] == {NODE: "fail"}
    assert "None" not in dcgm.assess(bare)[0]["message"]


@pytest.mark.parametrize("text", ["", "Error: unable to connect to host engine", "{\"foo\": 1}", "{not json"])
def test_dcgm_unknown_documents_rejected(text):
    with pytest.raises(UnparseableOutput):
        parse_dcgm_diag(text)


def test_dcgm_not_run_and_unknown_status_words_are_not_pass():
    doc = ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": ['
           '{"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass"},'
           '{"entity_group": "GPU", "entity_id": 1, "status": "Not Run"}]},'
           '{"name": "pcie", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Inconclusive"}]}]}]}}')
    p = parse_dcgm_diag(doc)  # constructed: statuses from the DCGM docs' vocabulary
    assert [t["status"] for t in p["tests"]] == ["not_run", "unknown"]
    assert codes(dcgm.assess(p)) == ["dcgm_not_run"]

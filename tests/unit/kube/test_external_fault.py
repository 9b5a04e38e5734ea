"""NVSentinel's ExternalFault as bringup reads and creates it (bringup.kube.external_fault):
ADR-049's documented example reads as an open fault; what is cleared, completed or being
deleted is not open; an odd member is a value naming its path; the calls go through the
adapter, a missing CRD saying what to install."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from bringup.errors import KubeConflictError, KubeNotFoundError
from bringup.kube import external_fault as ef
from bringup.kube.remediation import Malformed

FIX = Path(__file__).parents[2] / "fixtures" / "kube" / "nvsentinel"
DOC = yaml.safe_load((FIX / "ef-example.yaml").read_text())


def test_the_documented_example_reads_as_an_open_fault_reported_and_not_cleared():
    got = ef.parse(DOC)
    assert got == ef.Fault(name="csp-maintenance-ip-10-0-31-7", node="ip-10-0-31-7.us-west-2.compute.internal",
                           message="AWS scheduled maintenance 2026-05-13T03:00Z; node must be drained.",
                           error_codes=("CSP-MAINT-AWS-EBS-RETIRE",), reported="True", cleared="False")
    assert got.open and not got.ours


@pytest.mark.parametrize("change", [
    {"status": {"conditions": [{"type": "FaultCleared", "status": "True"}]}},
    {"status": {"completionTime": "2026-05-14T00:00:00Z", "conditions": []}},
    {"metadata": {"name": "x", "deletionTimestamp": "2026-05-14T00:00:00Z"}},
])
def test_cleared_completed_or_deleted_is_not_open(change):
    doc = {**DOC, **change}
    got = ef.parse(doc)
    assert isinstance(got, ef.Fault) and not got.open


@pytest.mark.parametrize(("path", "value", "where"), [
    (("spec",), {"healthEvent": "no"}, "spec.healthEvent"),
    (("spec", "healthEvent", "nodeName"), "", "spec.healthEvent.nodeName"),
    (("spec", "healthEvent", "errorCode"), [79], "spec.healthEvent.errorCode"),
    (("metadata",), {}, "metadata.name"),
])
def test_a_malformed_field_is_named_by_its_path(path, value, where):
    doc = yaml.safe_load(yaml.safe_dump(DOC))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    got = ef.parse(doc)
    assert isinstance(got, Malformed) and got.path == where


class Kube:
    """The adapter's seam: ``_call`` answers from a script (no socket)."""

    def __init__(self, answer=None, error=None):
        self.api_client, self.calls, self.answer, self.error = object(), [], answer, error

    def _call(self, what, fn, *args):
        self.calls.append((what, args))
        if self.error is not None:
            raise self.error
        return self.answer


def test_the_open_fault_of_a_node_is_found_among_odd_members():
    other = {**DOC, "spec": {"healthEvent": {**DOC["spec"]["healthEvent"], "nodeName": "n1"}}}
    kube = Kube({"items": [{"metadata": {}}, DOC, other]})
    assert ef.open_fault(kube, "n1").node == "n1" and ef.open_fault(kube, "n2") is None
    assert kube.calls[0][1] == (ef.GROUP, "v1", "externalfaults")


def test_a_cluster_without_the_crd_says_what_to_install():
    with pytest.raises(KubeNotFoundError) as err:
        ef.faults(Kube(error=KubeNotFoundError("404")))
    assert "externalfaults.nvsentinel.dgxc.nvidia.com" in str(err.value) and "ExternalFault" in err.value.hint


def test_create_of_a_name_already_there_is_the_same_report():
    body = {"metadata": {"name": "bringup-n1-abc-20261206100000"}}
    kube = Kube(error=KubeConflictError("409 AlreadyExists"))
    assert ef.create(kube, body) == "bringup-n1-abc-20261206100000"
    assert SimpleNamespace(what=kube.calls[0][0]).what == "create externalfaults bringup-n1-abc-20261206100000"

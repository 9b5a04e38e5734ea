"""The health watch's look where NVSentinel owns the nodes' health (flows.healthwatch,
issue #27 item 2): a critical finding is reported (an ExternalFault), never acted on; a
report that cannot be made is carried to the run's end, which fails saying why; a transient
error is the task's to retry."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from lifecycle_fakes import MemoryRecords
from runtime_fakes import FakeRuntime

from bringup.errors import KubeNotFoundError, KubeTransientError
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.lifecycle.results import StepResult
from bringup.netbox.lease import Claimant
from bringup.service.health import Signal
from bringup.service.watch_step import Look
from flows import healthwatch, runtime

ME = Claimant(run="run-a", host="ctl-1", pid=100, pidns="pid:[1]")
XID = Signal("xid_fatal", "critical", "GPU 3: XID 79 since the last look", {"gpu": 3, "xid": 79})


class Rt(FakeRuntime):
    def __init__(self, report):
        rec = MemoryRecords("n1")
        self.lc = Lifecycle({s: (lambda node, p: StepResult(node=node.name, step="x", ok=True)) for s in STEP_NAMES},
                            rec)
        self.report, self.reported = report, []

    def lifecycle(self):
        return self.lc

    def watch(self, name):
        return Look(node=name, signals=[XID], deferred_to="nvsentinel")

    def report_fault(self, name, look):
        self.reported.append((name, [s.code for s in look.critical]))
        return self.report()


@pytest.fixture
def rt(monkeypatch):
    monkeypatch.setattr(healthwatch, "claimant", lambda: ME)
    yield lambda report: runtime.use(Rt(report)) or runtime.get(None)
    runtime.use(None)


def test_a_critical_finding_is_reported_and_the_node_not_acted_on(rt):
    fake = rt(lambda: "reported to NVSentinel: ExternalFault bringup-n1-x")
    row = healthwatch.look_node.fn("n1")
    assert fake.reported == [("n1", ["xid_fatal"])]
    assert row["critical"] == [] and row["evidence"] is None and row["deferred_to"] == "nvsentinel"
    assert row["gpu_action"] == "reported to NVSentinel: ExternalFault bringup-n1-x" and row["unreported"] == ""


def test_a_look_that_does_not_act_reports_nothing(rt):
    fake = rt(lambda: pytest.fail("reported"))
    assert healthwatch.look_node.fn("n1", act=False)["gpu_action"] == "" and fake.reported == []


def test_a_report_that_cannot_be_made_is_carried_to_the_runs_end(rt):
    def missing():
        raise KubeNotFoundError("the cluster serves no externalfaults.nvsentinel.dgxc.nvidia.com/v1")
    rt(missing)
    row = healthwatch.look_node.fn("n1")
    assert row["unreported"].startswith("n1: not reported to NVSentinel (the cluster serves no externalfaults")
    assert SimpleNamespace(**row).critical == []          # still not acted on by bringup


def test_a_transient_error_is_the_tasks_to_retry(rt):
    def down():
        raise KubeTransientError("API server restarting")
    rt(down)
    with pytest.raises(KubeTransientError):
        healthwatch.look_node.fn("n1")

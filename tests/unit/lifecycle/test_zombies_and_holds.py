"""Runs that died say so: the zombie automation (pure definition), the heartbeat the
lab's workers run with, and the reason a node carries when its BMC stayed unreachable."""

from __future__ import annotations

import pytest
from lifecycle_fakes import MemoryRecords

from bringup.errors import RedfishTimeoutError, SSHUnreachable, UnavailableError, held_reason
from bringup.lifecycle.engine import STEP_NAMES, Lifecycle
from bringup.lifecycle.results import StepResult


def test_the_zombie_automation_crashes_a_run_silent_past_its_heartbeats():
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import Posture

    from flows import zombies
    a = zombies.automation()
    t = a.trigger
    assert t.posture == Posture.Proactive and t.threshold == 1
    assert t.after == {"prefect.flow-run.heartbeat"}
    assert t.expect == {"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
                        "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"}
    assert t.for_each == {"prefect.resource.id"}          # each run on its own
    assert t.match.model_dump() == {"prefect.resource.id": ["prefect.flow-run.*"]}
    assert t.match_related.model_dump() == {"prefect.resource.role": "deployment"}
    # several beats may be missed (a busy server), a live run never crashed
    assert t.within.total_seconds() >= 3 * zombies.HEARTBEAT_S
    # a worker started without our heartbeat env beats every 180 s (Prefect's default):
    # its live runs must not be crashed (seen: a 120 s window crashed live child runs)
    assert t.within.total_seconds() >= 3 * zombies.PREFECT_DEFAULT_HEARTBEAT_S
    [action] = a.actions
    assert isinstance(action, ChangeFlowRunState) and action.state == StateType.CRASHED
    assert zombies.heartbeat_env() == {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(zombies.HEARTBEAT_S)}


def test_the_lab_workers_beat_as_often_as_the_automation_expects():
    from flows import zombies
    from lab import supervisor
    assert supervisor.WORKER_HEARTBEAT_S == zombies.HEARTBEAT_S


def test_ensure_automation_is_idempotent(monkeypatch):
    from prefect.automations import Automation

    from flows import zombies
    store: dict[str, Automation] = {}
    calls = []

    def read(cls=None, id=None, name=None):
        if name not in store:
            raise ValueError(f"Automation with name {name!r} not found")
        return store[name].model_copy(deep=True)

    def create(self):
        calls.append("create")
        store[self.name] = self
        return self

    def update(self):
        calls.append("update")
        store[self.name] = self

    monkeypatch.setattr(Automation, "read", classmethod(lambda cls, id=None, name=None: read(name=name)))
    monkeypatch.setattr(Automation, "create", create)
    monkeypatch.setattr(Automation, "update", update)
    assert zombies.ensure_automation() == "created"
    assert zombies.ensure_automation() == "unchanged"
    store[zombies.NAME] = store[zombies.NAME].model_copy(update={"description": "old"})
    assert zombies.ensure_automation() == "updated"
    assert calls == ["create", "update"]


@pytest.mark.parametrize("exc,words", [
    (RedfishTimeoutError("n1: BMC 10.0.0.9 could not be read: timed out"), "BMC unreachable after retries: n1: BMC"),
    (SSHUnreachable("no answer on 10.0.1.9:22"), "node unreachable over SSH after retries"),
    (UnavailableError(""), "still failing after retries: UnavailableError"),
])
def test_a_node_held_after_retries_says_why(exc, words):
    records = MemoryRecords("n1")
    lc = Lifecycle(steps={n: (lambda node, p: StepResult(node=node.name, step="x", ok=True)) for n in STEP_NAMES},
                   records=records)
    lc.hold("n1", held_reason(exc))
    reason = records.nodes["n1"].custom_fields["bringup_reason"]
    assert reason.startswith("held in planned: ") and words in reason

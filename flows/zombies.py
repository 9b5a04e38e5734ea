"""Flow runs whose process died turn Crashed, not Running forever: Prefect's own heartbeats
and a "zombie" automation.

Every flow run emits a ``prefect.flow-run.heartbeat`` event each
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (:data:`HEARTBEAT_S` on the workers this
project starts). The automation below is the one Prefect documents for self-hosted
servers (docs: "How to detect and respond to zombie flows"): a *proactive* trigger that,
after a heartbeat of a run, expects another heartbeat or a terminal state of the same run
(``for_each`` the run's resource id) within :data:`WITHIN_S` seconds; when none comes, the
server sets the run Crashed. A SIGKILLed worker, a machine that lost power: the run says
so within ``WITHIN_S`` seconds of its last heartbeat.

Only runs of deployments are watched (``match_related`` on the deployment role); the
lab's workers set the heartbeat to :data:`HEARTBEAT_S`, but any worker may run them, at
Prefect's default of 180 s, so the window is three of those beats.
"""

from __future__ import annotations

from datetime import timedelta

from prefect.automations import Automation
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import EventTrigger, Posture
from prefect.events.schemas.events import ResourceSpecification

NAME = "bringup: crash zombie flow runs"
#: seconds between heartbeats of a deployment's run (Prefect's minimum is 30)
HEARTBEAT_S = 30
#: Prefect's default heartbeat (180 s): a worker started without :func:`heartbeat_env`
#: beats this rarely, and its live runs must not be taken for dead
PREFECT_DEFAULT_HEARTBEAT_S = 180
#: a run silent this long after its last heartbeat is dead: three default beats missed
#: (seen: a 120 s window crashed live child runs of workers started without our env)
WITHIN_S = 3 * PREFECT_DEFAULT_HEARTBEAT_S
TERMINAL = ("Completed", "Failed", "Cancelled", "Crashed")


def heartbeat_env() -> dict[str, str]:
    """Environment of a worker (and so of the flow runs it starts) that beats often enough."""
    return {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_S)}


def automation(within_s: int = WITHIN_S) -> Automation:
    """The automation, built (no I/O)."""
    return Automation(
        name=NAME,
        description=f"A deployment's flow run with no heartbeat for {within_s} s (its process died) is set "
                    "Crashed, so it does not stay Running forever. Created by flows.deploy.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in TERMINAL)},
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            match_related=ResourceSpecification({"prefect.resource.role": "deployment"}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=within_s),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED,
                                    message=f"no heartbeat for {within_s} s: the flow run's process died "
                                            "(its nodes are held where they stopped; run again)")],
    )


def _shape(a: Automation) -> dict:
    # python mode keeps the trigger's sets (``expect``, ``after``) as sets: in JSON mode
    # they become lists in hash order, and a copy read back could differ from the one we
    # built in order alone (the unit test caught it 1 run in 8)
    return a.model_dump(mode="python", include={"description", "trigger", "actions", "enabled"})


def ensure_automation(within_s: int = WITHIN_S) -> str:
    """Create the automation, or bring an existing one of that name up to date. Idempotent:
    returns ``created``, ``updated`` or ``unchanged``."""
    want = automation(within_s)
    try:
        have = Automation.read(name=NAME)
    except ValueError:  # Prefect's "not found"
        want.create()
        return "created"
    if _shape(have) == _shape(want):
        return "unchanged"
    want.id = have.id
    want.update()
    return "updated"

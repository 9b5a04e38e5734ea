"""The health watch run with one look failed: that node's health is unknown, nothing is
done to it, the other looks stand, and the run says which node it could not see."""

from __future__ import annotations

from bringup.errors import NetBoxUnavailable
from flows.healthwatch import blind, outcome

LOOK = {"node": "n2", "skipped": "", "seconds": 3.0, "signals": ["critical: XID 79 on GPU 3"],
        "critical": ["XID 79 on GPU 3"], "evidence": {}}


def test_a_failed_look_is_unknown_not_quiet():
    looks = [outcome("n1", NetBoxUnavailable("cannot reach NetBox: ConnectionError")), outcome("n2", LOOK)]
    assert looks[1] is LOOK
    assert looks[0]["critical"] == [] and looks[0]["signals"] == []
    assert blind(looks) == ("1 node(s) could not be looked at, their health is unknown: "
                            "n1 (NetBoxUnavailable: cannot reach NetBox: ConnectionError)")


def test_a_run_that_saw_every_node_is_not_blind():
    assert blind([LOOK, {"node": "n3", "skipped": "held by run x", "signals": [], "critical": []}]) == ""

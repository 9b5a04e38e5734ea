"""A step whose tries failed on the node and then on the controller keeps the node's failure
in the error it ends with (flows.step_errors; fs-r2-bmc500 in a loaded suite run)."""

from __future__ import annotations

from bringup.errors import NetBoxUnavailable, RedfishServerError, held_reason
from flows import step_errors

KEY = ("run-a@ctl:1", "fs-r2-bmc500", "discover")


def test_a_controller_failure_after_a_node_failure_names_both_and_stays_the_controllers():
    bmc = RedfishServerError("BMC 127.13.2.2 answered 500 to GET /redfish/v1/Systems")
    assert step_errors.failed(KEY, bmc) is bmc                    # the node's own: as it is
    netbox = NetBoxUnavailable("cannot reach NetBox: ConnectionError")
    raised = step_errors.failed(KEY, netbox)
    assert isinstance(raised, step_errors.AfterNodeFailure)
    assert raised.transient and raised.controller_fault           # retried, and the run's to report
    reason = held_reason(raised)
    assert "answered 500" in reason and "cannot reach NetBox" in reason, reason
    step_errors.succeeded(KEY)


def test_another_run_or_step_and_a_try_that_went_through_keep_nothing():
    bmc = RedfishServerError("BMC answered 500")
    netbox = NetBoxUnavailable("NetBox did not answer in time")
    step_errors.failed(KEY, bmc)
    assert step_errors.failed(("run-b@ctl:2", *KEY[1:]), netbox) is netbox
    assert step_errors.failed((*KEY[:2], "firmware"), netbox) is netbox
    step_errors.succeeded(KEY)
    assert step_errors.failed(KEY, netbox) is netbox


def test_a_walk_that_ends_keeps_nothing_of_its_steps_tries():
    bmc = RedfishServerError("BMC answered 500")
    netbox = NetBoxUnavailable("NetBox did not answer in time")
    step_errors.failed(KEY, bmc)                       # its tries ran out on the BMC
    step_errors.forget(*KEY[:2])
    assert step_errors.failed(KEY, netbox) is netbox

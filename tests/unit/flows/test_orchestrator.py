"""flows.orchestrator: Prefect server errors as bringup's errors, and waiting out an outage."""

from __future__ import annotations

import httpx
import pytest
from prefect.exceptions import PrefectHTTPStatusError

from bringup.errors import OrchestratorError, OrchestratorUnavailable
from flows import orchestrator


def status(code: int) -> PrefectHTTPStatusError:
    request = httpx.Request("POST", "http://prefect.invalid/api/concurrency_limits/increment-with-lease")
    return PrefectHTTPStatusError.from_httpx_error(
        httpx.HTTPStatusError("refused", request=request, response=httpx.Response(code, request=request)))


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def failing(errors, then="ok"):
    errors = list(errors)

    def call():
        if errors:
            raise errors.pop(0)
        return then
    return call


def test_an_outage_shorter_than_the_limit_is_waited_out():
    clock = Clock()
    got = orchestrator.through_outage(failing([httpx.ConnectError("refused"), status(503), status(500)]),
                                      "taking a slot", outage_s=10, sleep=clock.sleep, clock=clock)
    assert got == "ok" and 0 < clock.t < 10


def test_a_longer_outage_ends_as_orchestrator_unavailable_saying_what_the_run_was_doing():
    clock = Clock()
    with pytest.raises(OrchestratorUnavailable) as err:
        orchestrator.through_outage(failing([httpx.ConnectError("refused")] * 10_000), "taking a slot of bmc",
                                    outage_s=5, sleep=clock.sleep, clock=clock)
    assert 5 <= clock.t < 8
    assert str(err.value).startswith("taking a slot of bmc: refused")
    assert err.value.transient and err.value.controller_fault and "PREFECT_API_URL" in err.value.hint


def test_a_refusal_is_not_retried_and_a_passed_status_reaches_the_caller():
    clock = Clock()
    with pytest.raises(OrchestratorError) as err:
        orchestrator.through_outage(failing([status(404)]), "x", sleep=clock.sleep, clock=clock)
    assert not isinstance(err.value, OrchestratorUnavailable) and not err.value.transient
    assert clock.t == 0
    with pytest.raises(PrefectHTTPStatusError):
        orchestrator.through_outage(failing([status(423)]), "x", passes=lambda e: True, sleep=clock.sleep, clock=clock)


def test_talking_to_prefect_translates_only_httpx_errors():
    with pytest.raises(OrchestratorUnavailable, match="reading: timed out"), \
            orchestrator.talking_to_prefect("reading"):
        raise httpx.ReadTimeout("timed out")
    with pytest.raises(KeyError), orchestrator.talking_to_prefect("reading"):
        raise KeyError("x")

"""A fake of :class:`flows.runtime.Runtime` for the flows' unit tests: every method of the
protocol is here, and each one a test did not set up fails the test naming itself (a flow
that asks for something the test did not expect is a finding, not a silent "allow").

A test subclasses it and overrides what its flow uses (``lifecycle`` at least)."""

from __future__ import annotations

from typing import Any


class UnexpectedCall(AssertionError):
    pass


class FakeRuntime:
    def _unexpected(self, what: str) -> UnexpectedCall:
        return UnexpectedCall(f"the flow called runtime.{what}, which this test's fake runtime does not set up")

    def lifecycle(self):
        raise self._unexpected("lifecycle()")

    def select(self, **selection: Any) -> list:
        raise self._unexpected(f"select({selection})")

    def due_for_reburnin(self, **selection: Any) -> list:
        raise self._unexpected(f"due_for_reburnin({selection})")

    def fabric_test(self, names: list[str], *, mode: str = "rack") -> tuple[dict, list]:
        raise self._unexpected(f"fabric_test({names}, mode={mode!r})")

    def reconcile(self, targets: list | None = None, **selection: Any) -> list:
        raise self._unexpected(f"reconcile({targets}, {selection})")

    def watch(self, name: str) -> Any:
        raise self._unexpected(f"watch({name!r})")

    def quarantine_gpus(self, name: str, look: Any) -> str:
        raise self._unexpected(f"quarantine_gpus({name!r})")

    def report_fault(self, name: str, look: Any) -> str:
        raise self._unexpected(f"report_fault({name!r})")

    def handoff_requests(self) -> list:
        raise self._unexpected("handoff_requests()")

    def handoff(self, req: Any) -> dict:
        raise self._unexpected(f"handoff({req!r})")

    def guard(self, requests: list) -> list:
        raise self._unexpected(f"guard({requests})")

    def report(self, name: str) -> Any:
        raise self._unexpected(f"report({name!r})")

    def accepts_after_admission(self) -> bool:
        raise self._unexpected("accepts_after_admission()")

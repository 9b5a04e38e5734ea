"""Draining a node: cordon it, then evict its pods through the Eviction API with
PodDisruptionBudgets honoured, all within one deadline.

The deadline bounds the whole drain: the cordon, the listing of the pods and every
eviction try, an API server that does not answer included. Nothing here starts it again,
and what is raised once it has passed (:class:`~bringup.errors.DrainBlocked`, naming the
pods left and the budgets that refused them) is not an error an orchestrator retries: a
retry would wait the whole deadline once more. While pods hold the drain, ``on_wait`` is
told what holds it, each time that changes, so the caller can show it while it waits
(the lifecycle writes it to the node's ``bringup_reason``).

A budget's name is only in the text of the API server's refusal: a 429 whose status cause
(``reason: DisruptionBudget``) reads ``The disruption budget NAME needs ...`` or ``The
disruption budget NAME does not allow ...`` (kubernetes/kubernetes,
pkg/registry/core/pod/storage/eviction.go; a real answer is in
tests/fixtures/kube/eviction-429-pdb.json). A budget lives in its pod's namespace.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from bringup.errors import DrainBlocked, KubeError, KubeNotFoundError, KubeTransientError
from bringup.kube.models import DrainResult, PodRef
from bringup.retry import Backoff, Timeout
from bringup.retry import poll as poll_until

if TYPE_CHECKING:
    from bringup.kube.adapter import KubeAdapter

#: the setting that gives a drain step its deadline (bringup.settings.Settings)
SETTING = "drain_timeout_s"
#: a pod still terminating this long after its eviction is worth saying (30 s is a pod's
#: default grace period); a refused eviction is said at once
NOTICE_S = 30.0
TERMINATING = "evicted, waiting for it to terminate"
_BUDGET = re.compile(r"The disruption budget (\S+) ")


class Blocker(BaseModel):
    """One pod still on the node, and why."""

    model_config = ConfigDict(frozen=True)

    pod: str
    why: str
    #: namespace/name of the PodDisruptionBudget that refused its eviction ("" when none did)
    budget: str = ""
    #: its eviction was refused (a budget, or an API error), rather than it not having ended yet
    refused: bool = False

    def text(self) -> str:
        if self.budget:
            return f"{self.pod} (PodDisruptionBudget {self.budget} refuses its eviction: {self.why})"
        return f"{self.pod} ({self.why})"


class DrainWait(BaseModel):
    """What holds a drain now: the pods left, and the drain's deadline."""

    model_config = ConfigDict(frozen=True)

    node: str
    blockers: list[Blocker]
    timeout_s: float

    @property
    def pods(self) -> list[str]:
        return [b.pod for b in self.blockers]

    @property
    def budgets(self) -> list[str]:
        return sorted({b.budget for b in self.blockers if b.budget})

    def text(self) -> str:
        return (f"drain waits (for at most {self.timeout_s:g} s, {SETTING}) on {len(self.blockers)} pod(s): "
                + "; ".join(b.text() for b in self.blockers))

    def key(self) -> tuple:
        """What changes the story (not a budget's counts, which move while it waits)."""
        return tuple((b.pod, b.budget or b.why) for b in self.blockers)


def refusal(pod: PodRef, message: str) -> tuple[str, str]:
    """(budget, why) of a refused eviction's error message: the budget's namespace/name
    when the API server named one, and the message without the call's own prefix."""
    why = message.removeprefix(f"evict pod {pod}: ")
    m = _BUDGET.search(why)
    return (f"{pod.namespace}/{m.group(1)}" if m else ""), why


def blocked_hint(budgets: list[str], timeout: float) -> str:
    longer = f"or raise {SETTING} in the settings file (now {timeout:g} s), then run again"
    if budgets:
        return (f"the node stays cordoned in draining; ask the owners of PodDisruptionBudget "
                f"{', '.join(budgets)} to let a pod go (or move their workload), {longer}")
    return f"the node stays cordoned in draining; find why the pods named do not end, {longer}"


def drain(kube: KubeAdapter, name: str, timeout: float, *, ignore_daemonsets: bool = True, poll: float = 1.0,
          on_wait: Callable[[DrainWait], None] | None = None) -> DrainResult:
    """Cordon ``name``, then evict every pod through the Eviction API (a budget's 429 is
    tried again with growing pauses), all within ``timeout`` seconds. DaemonSet-owned and
    mirror pods are skipped. Raises DrainBlocked naming the pods left and the budgets."""
    clock, sleep = kube._clock, kube._sleep
    start = clock()
    deadline = start + timeout
    backoff = Backoff(first=poll, factor=2.0, cap=10.0)

    def within(ask: Callable[[], object], what: str) -> object:
        """``ask`` until it answers, an unreachable API server counting against the deadline."""
        try:
            return poll_until(ask, timeout=deadline - clock(), what=what, backoff=backoff, sleep=sleep,
                              clock=clock, on_error=(KubeTransientError,))
        except Timeout as exc:
            raise DrainBlocked(f"drain of node {name}: could not {what} within the drain's {timeout:g} s "
                               f"(last: {exc.last})", pods=[], hint=blocked_hint([], timeout)) from None

    try:
        within(lambda: kube.cordon(name, "draining"), f"cordon node {name}")
    except KubeNotFoundError:
        raise KubeNotFoundError(f"node {name} is not registered; nothing to drain") from None
    skipped, daemon, pending = [], [], {}
    for pod in within(lambda: kube.pods_on(name), f"list the pods on {name}"):
        if pod.mirror:
            skipped.append(str(pod))
        elif pod.owner_kind == "DaemonSet":
            (skipped if ignore_daemonsets else daemon).append(str(pod))
        else:
            pending[str(pod)] = pod
    if daemon:
        raise KubeError(f"node {name} runs DaemonSet-managed pods: {', '.join(daemon)}",
                        hint="drain with ignore_daemonsets=True; DaemonSets recreate their pods anyway")
    evicting: set[str] = set()
    evicted: list[str] = []
    blockers: dict[str, Blocker] = {}
    told: list[tuple] = []

    def evict_pass() -> bool | None:
        """One pass over the pods left: evict those not evicted yet, drop those gone.
        True once none is left."""
        for key, pod in list(pending.items()):
            try:
                if key not in evicting:
                    kube._evict(pod)
                    evicting.add(key)
                    blockers[key] = Blocker(pod=key, why=TERMINATING)
                if kube._gone(pod):
                    evicted.append(key)
                    del pending[key]
            except KubeNotFoundError:
                evicted.append(key)  # already gone
                del pending[key]
            except KubeTransientError as exc:
                # 429 is a PodDisruptionBudget saying "not now"; 5xx may pass too
                budget, why = refusal(pod, exc.args[0])  # the message without the generic retry hint
                blockers[key] = Blocker(pod=key, why=why, budget=budget, refused=True)
        if not pending:
            return True
        tell()
        return None

    def tell() -> None:
        if on_wait is None:
            return
        wait = DrainWait(node=name, blockers=[blockers[k] for k in pending if k in blockers], timeout_s=timeout)
        noteworthy = any(b.refused for b in wait.blockers) or clock() - start >= NOTICE_S
        if wait.blockers and noteworthy and (not told or told[-1] != wait.key()):
            told.append(wait.key())
            on_wait(wait)

    try:
        poll_until(evict_pass, timeout=deadline - clock(), what=f"drain of node {name}", backoff=backoff,
                   sleep=sleep, clock=clock)
    except Timeout:
        left = [blockers.get(k) or Blocker(pod=k, why="not evicted") for k in pending]
        budgets = sorted({b.budget for b in left if b.budget})
        detail = "; ".join(b.text() for b in left)
        kube._note(name, "DrainBlocked", f"drain blocked after {timeout:g}s with {len(left)} pod(s) left: {detail}",
                   warning=True)
        raise DrainBlocked(f"drain of node {name} blocked: {len(left)} pod(s) still on it after the drain's "
                           f"{timeout:g} s: {detail}", pods=sorted(pending), budgets=budgets,
                           hint=blocked_hint(budgets, timeout)) from None
    kube._note(name, "Drained", f"drained by bringup: {len(evicted)} pod(s) evicted, {len(skipped)} "
               "DaemonSet or mirror pod(s) left")
    return DrainResult(node=name, evicted=evicted, skipped=skipped, seconds=round(clock() - start, 1))


__all__ = ["NOTICE_S", "SETTING", "Blocker", "DrainWait", "blocked_hint", "drain", "refusal"]

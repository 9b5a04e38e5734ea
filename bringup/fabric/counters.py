"""IB port counter growth over a fabric test.

Readings are ``{(hca, port): {counter: value}}`` as read from
``/sys/class/infiniband/<hca>/ports/<n>/counters/<name>`` before and after the test.
Growth beyond the limit of ``fabric.yaml`` is a ``flapping_link`` finding naming HCA and
port. A counter that went backwards (reset, or the HCA re-enumerated) or is missing from
either reading is unknown: the growth cannot be known, so it is never a pass.
"""

from __future__ import annotations

from pydantic import BaseModel

from bringup.fabric.models import FabricFinding, Outcome
from bringup.fabric.policy import Limit

Reading = dict[tuple[str, int], dict[str, int]]


class PortGrowth(BaseModel):
    hca: str
    port: int
    counter: str
    before: int | None
    after: int | None
    growth: int | None
    outcome: Outcome


def counter_growth(node: str, before: Reading, after: Reading,
                   limits: dict[str, Limit]) -> tuple[list[PortGrowth], list[FabricFinding]]:
    rows: list[PortGrowth] = []
    findings: list[FabricFinding] = []
    for hca, port in sorted(set(before) | set(after)):
        b, a = before.get((hca, port), {}), after.get((hca, port), {})
        for name, limit in sorted(limits.items()):
            vb, va = b.get(name), a.get(name)
            if vb is None or va is None:
                side = "before" if vb is None else "after"
                rows.append(PortGrowth(hca=hca, port=port, counter=name, before=vb, after=va, growth=None,
                                       outcome="unknown"))
                findings.append(FabricFinding(kind="unknown", nodes=[node], hca=hca, port=port,
                                              message=f"{node} {hca}/{port}: {name} missing {side} the test"))
                continue
            growth = va - vb
            if growth < 0:
                rows.append(PortGrowth(hca=hca, port=port, counter=name, before=vb, after=va, growth=None,
                                       outcome="unknown"))
                findings.append(FabricFinding(kind="unknown", nodes=[node], hca=hca, port=port,
                                              message=f"{node} {hca}/{port}: {name} went backwards ({vb} -> {va}):"
                                              " reset during the test, growth unknown"))
                continue
            ok = limit.holds(growth)
            rows.append(PortGrowth(hca=hca, port=port, counter=name, before=vb, after=va, growth=growth,
                                   outcome="pass" if ok else "fail"))
            if not ok:
                findings.append(FabricFinding(kind="flapping_link", nodes=[node], hca=hca, port=port,
                                              message=f"{node} {hca}/{port}: {name} grew by {growth} during the "
                                              f"test (limit {limit.op} {limit.value})"))
    return rows, findings

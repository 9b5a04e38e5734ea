"""From pair results to who is to blame: a planner that says which tests to run next.

A pair that does not pass (fail or unknown) makes both its nodes suspects. Each suspect is
retested against known-good partners: nodes that passed a test, which clears both nodes
and their path. A suspect that passes with one is good, and any good partner it failed
with shares a bad *link* with it. A suspect that fails with two distinct good partners is
the bad *node*; a first-round partner counts once a pass with another node cleared it (a
pool of three with one slow node blames it: it failed with both others, who pass
together). A suspect that runs out of good partners (``max_partners`` tried, or none free)
without two failures or a pass is *unknown*: not enough evidence is never a pass.
A first-round pair whose two nodes both turn out good failed only together: a bad link
(or, when its own result was unknown, an unknown link).

Partners are taken from the suspect's own rack first (the path under test is then the
rack's leaf, as in the first round), each used once per round so a round's tests can run
at once. The planner is driven by a runner callable (:func:`localise`) or step by step
(:meth:`Localiser.next_tests`, :meth:`Localiser.record`) by a flow or a bench.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bringup.fabric.models import FabricFinding, FabricNode, Outcome, PairResult

Runner = Callable[[list[tuple[str, str]]], list[PairResult]]


def pair_outcome(rails: dict[str, Outcome]) -> Outcome:
    """A pair's outcome from its per-rail ones: any fail fails; a missing or unknown rail
    makes it unknown (a partial result is never a pass)."""
    if not rails:
        return "unknown"
    values = set(rails.values())
    return "fail" if "fail" in values else "unknown" if "unknown" in values else "pass"


def _key(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def _failed_rails(evidence: Iterable[PairResult]) -> list[str]:
    """Rails that failed in every failing test that reported rails, where at least one rail
    of those tests did not fail (otherwise the whole node or link is down: no rail named)."""
    sets, named = [], set()
    for r in evidence:
        if r.outcome == "fail" and r.rails:
            failed = {k for k, v in r.rails.items() if v == "fail"}
            sets.append(failed)
            named |= set(r.rails)
    if not sets:
        return []
    common = set.intersection(*sets)
    return sorted(common) if common and common != named else []


class Localiser:
    def __init__(self, nodes: list[FabricNode], first_round: list[tuple[str, str]], max_partners: int = 3,
                 known_good: set[str] | frozenset[str] = frozenset()):
        self.rack = {n.name: n.rack for n in nodes}
        self.order = sorted(self.rack, key=lambda n: (self.rack[n], n))
        self.first = list(first_round)
        self.max_partners = max(2, max_partners)
        self.results: list[PairResult] = []
        #: known good before any test (the pool's active nodes), then every node that passed one
        self.good: set[str] = set(known_good)
        self.bad: set[str] = set()
        self.unknown: set[str] = set()
        self.suspects: list[str] = []
        self.retests: dict[str, list[PairResult]] = {}
        self.links: dict[frozenset[str], list[PairResult]] = {}
        self._issued_first = False
        self._outstanding: set[frozenset[str]] = set()
        #: retest -> the suspect it was planned for (its partner was known good then)
        self._planned: dict[frozenset[str], str] = {}
        self.rounds = 0

    # --- driving -------------------------------------------------------------------
    def next_tests(self) -> list[tuple[str, str]]:
        """The tests to run now; empty when localisation is over. Every test of a round
        must be :meth:`record`-ed before the next call."""
        if self._outstanding:
            raise RuntimeError("record the previous round's results first")
        if not self._issued_first:
            self._issued_first = True
            batch = list(self.first)
        else:
            batch = self._retest_round()
        self._outstanding = {_key(a, b) for a, b in batch}
        if batch:
            self.rounds += 1
        return batch

    def record(self, results: list[PairResult]) -> None:
        for r in results:
            self._outstanding.discard(_key(r.a, r.b))
            self.results.append(r)
            if r.outcome == "pass":
                # a pass clears both nodes and the path between them
                self.good |= {r.a, r.b}
        for r in results:
            for node in (r.a, r.b):
                if node in self.retests and r not in self.retests[node] and self._is_retest(node, r):
                    self.retests[node].append(r)
        if self._outstanding:
            missing = ", ".join(sorted("-".join(sorted(k)) for k in self._outstanding))
            # a planned test with no result is an unknown result, never a pass
            for key in list(self._outstanding):
                a, b = sorted(key)
                self.record([PairResult(a=a, b=b, outcome="unknown", detail=f"no result came back ({missing})")])
            return
        self._update_suspects()

    def _is_retest(self, node: str, r: PairResult) -> bool:
        return self._planned.get(_key(r.a, r.b)) == node

    # --- the retest rounds -----------------------------------------------------------
    def _update_suspects(self) -> None:
        for r in self.results:
            if r.outcome != "pass":
                for node in (r.a, r.b):
                    if node not in self.good and node not in self.retests:
                        self.retests[node] = []
                        self.suspects.append(node)
        for node in self.suspects:
            if node in self.bad or node in self.unknown:
                continue
            tests = self.retests[node]
            if node in self.good:
                # cleared: a good partner it failed with shares a bad link with it
                for r in tests:
                    ev = self.links.setdefault(_key(r.a, r.b), [])
                    if r.outcome == "fail" and r not in ev:
                        ev.append(r)
                continue
            fails = {r.other(node) for r in self._against_good(node)}
            if len(fails) >= 2:
                self.bad.add(node)
            elif len(tests) >= self.max_partners:
                self.unknown.add(node)

    def _against_good(self, node: str) -> list[PairResult]:
        """The failed tests of ``node`` with partners known good now: its retests, and any
        earlier test (the first round's too) with a partner since cleared by a pass."""
        return [r for r in self.results if r.has(node) and r.outcome == "fail" and r.other(node) in self.good]

    def _open(self) -> list[str]:
        return [s for s in self.suspects if s not in self.good and s not in self.bad and s not in self.unknown]

    def _retest_round(self) -> list[tuple[str, str]]:
        batch: list[tuple[str, str]] = []
        used: set[str] = set()
        good = [n for n in self.order if n in self.good]
        for node in self._open():
            # never a node it already has a result with (in a ring its first-round partner may
            # have been cleared since): a second test with it would tell nothing new
            tried = {r.other(node) for r in self.results if r.has(node)}
            candidates = [g for g in good if g not in tried and g != node]
            if not candidates:
                self.unknown.add(node)
                continue
            free = [g for g in candidates if g not in used]
            if not free:
                continue  # every partner busy this round: next round
            same = [g for g in free if self.rack.get(g) == self.rack.get(node)]
            partner = (same or free)[0]
            used.add(partner)
            batch.append((node, partner))
            self._planned[_key(node, partner)] = node
        if not batch and self._open():
            for node in self._open():
                self.unknown.add(node)
        return batch

    # --- the outcome -------------------------------------------------------------------
    def findings(self) -> list[FabricFinding]:
        out: list[FabricFinding] = []
        for node in sorted(self.bad, key=self.order.index):
            ev = self._against_good(node)
            first = [r for r in self.results if r.has(node) and r not in ev and r.outcome != "pass"]
            rails = _failed_rails(ev)
            partners = ", ".join(r.other(node) for r in ev)
            out.append(FabricFinding(kind="node", nodes=[node], rails=rails, evidence=first + ev,
                                     message=f"{node} fails with known-good partners {partners}"
                                     + (f" on rail {', '.join(rails)}" if rails else "")))
        links = {k: list(v) for k, v in self.links.items() if v}
        first_keys = {_key(a, b) for a, b in self.first}
        for r in self.results:
            key = _key(r.a, r.b)
            if key in first_keys and key not in self._planned and r.outcome != "pass" \
                    and r.a in self.good and r.b in self.good and r not in links.get(key, []):
                links.setdefault(key, []).insert(0, r)
        for key in sorted(links, key=lambda k: sorted(k)):
            ev = links[key]
            a, b = sorted(key, key=self.order.index)
            clear = [r for r in self.results if r.outcome == "pass" and (r.has(a) or r.has(b))]
            if any(r.outcome == "fail" for r in ev):
                rails = _failed_rails(ev)
                out.append(FabricFinding(kind="link", nodes=[a, b], rails=rails, evidence=ev + clear,
                                         message=f"{a} and {b} each pass with others but fail together: bad "
                                         "link or path" + (f" on rail {', '.join(rails)}" if rails else "")))
            else:
                out.append(FabricFinding(kind="unknown", nodes=[a, b], evidence=ev + clear,
                                         message=f"the test between {a} and {b} gave no result; both pass with "
                                         "others, so their path is not judged"))
        tested = {n for r in self.results for n in (r.a, r.b)}
        untested = set(self.rack) - tested if self.done else set()
        for node in sorted(self.unknown | untested, key=self.order.index):
            ev = [r for r in self.results if r.has(node)]
            why = "never tested" if node in untested else \
                f"not enough known-good partners to blame or clear it ({len(self.retests.get(node, []))} retest(s))"
            out.append(FabricFinding(kind="unknown", nodes=[node], evidence=ev, message=f"{node}: {why}"))
        return out

    @property
    def done(self) -> bool:
        return self._issued_first and not self._outstanding and not self._open()

    def verdicts(self) -> dict[str, Outcome]:
        """pass only for a node that passed a test; fail for a blamed node; else unknown."""
        return {n: "fail" if n in self.bad else "pass" if n in self.good else "unknown" for n in self.order}


def localise(nodes: list[FabricNode], first_round: list[tuple[str, str]], runner: Runner,
             max_partners: int = 3, max_rounds: int = 50,
             known_good: set[str] | frozenset[str] = frozenset()) -> Localiser:
    """Run rounds until nothing is left to test; returns the planner (findings, verdicts)."""
    loc = Localiser(nodes, first_round, max_partners=max_partners, known_good=known_good)
    for _ in range(max_rounds):
        batch = loc.next_tests()
        if not batch:
            break
        loc.record(runner(batch))
    return loc

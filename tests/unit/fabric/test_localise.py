"""Localisation: a failed pair's nodes retested against known-good partners."""

from bringup.fabric.localise import Localiser, localise, pair_outcome
from bringup.fabric.models import FabricNode, PairResult
from bringup.fabric.pairing import plan_pairs


def pool(n: int, rack_size: int = 16) -> list[FabricNode]:
    return [FabricNode(name=f"n{i:03d}", rack=f"r{i // rack_size:02d}") for i in range(n)]


def fake_runner(bad_nodes=(), bad_links=(), unknown_pairs=(), rails=None, log=None):
    links = {frozenset(p) for p in bad_links}
    unknown = {frozenset(p) for p in unknown_pairs}

    def run(batch):
        out = []
        for a, b in batch:
            if log is not None:
                log.append((a, b))
            key = frozenset((a, b))
            if key in unknown:
                out.append(PairResult(a=a, b=b, outcome="unknown", detail="timed out"))
            elif a in bad_nodes or b in bad_nodes or key in links:
                r = rails(a, b) if rails else {}
                out.append(PairResult(a=a, b=b, outcome="fail", rails=r))
            else:
                out.append(PairResult(a=a, b=b, outcome="pass"))
        return out
    return run


def run(nodes, **kw):
    log = []
    loc = localise(nodes, plan_pairs(nodes).pairs, fake_runner(log=log, **kw))
    return loc, loc.findings(), log


def test_healthy_pool_blames_no_one_in_one_round():
    loc, findings, log = run(pool(32))
    assert findings == [] and len(log) == 16 and loc.rounds == 1
    assert set(loc.verdicts().values()) == {"pass"}


def test_bad_node_found_with_two_distinct_good_partners():
    nodes = pool(32)
    loc, findings, log = run(nodes, bad_nodes={"n005"})
    assert [(f.kind, f.nodes) for f in findings] == [("node", ["n005"])]
    partners = {r.other("n005") for r in findings[0].evidence if r.outcome == "fail"}
    # its first-round partner n004 (cleared by its own retest) plus one known-good retest partner
    retest_partners = partners - {"n004"}
    assert "n004" in partners and len(retest_partners) == 1
    assert retest_partners <= {n.name for n in nodes} - {"n005", "n004"}
    assert loc.verdicts()["n005"] == "fail" and loc.verdicts()["n004"] == "pass"
    assert len(log) == 16 + 2


def test_bad_link_when_both_nodes_pass_with_others():
    loc, findings, log = run(pool(16), bad_links=[("n002", "n003")])
    assert [(f.kind, f.nodes) for f in findings] == [("link", ["n002", "n003"])]
    ev = findings[0].evidence
    assert ev[0].outcome == "fail" and {r.outcome for r in ev[1:]} == {"pass"}
    assert loc.verdicts()["n002"] == loc.verdicts()["n003"] == "pass"
    assert len(log) == 8 + 2


def test_too_few_good_partners_is_unknown_never_pass():
    # a pool of two, failing together: nobody is known good
    nodes = pool(2)
    loc, findings, _ = run(nodes, bad_nodes={"n000"})
    assert {f.kind for f in findings} == {"unknown"}
    assert sorted(n for f in findings for n in f.nodes) == ["n000", "n001"]
    assert set(loc.verdicts().values()) == {"unknown"}


def test_one_good_partner_only_is_unknown_not_a_verdict():
    # n000-n001 pass; n002 and n003 both bad: each can be retested against n000 and n001,
    # so they are found
    nodes = pool(4)
    loc = localise(nodes, [("n000", "n001"), ("n002", "n003")], fake_runner(bad_nodes={"n002", "n003"}))
    assert sorted((f.kind, tuple(f.nodes)) for f in loc.findings()) == [("node", ("n002",)), ("node", ("n003",))]
    # a pool of three: n002 failed with n001 (first round; n001 passes with n000) and with
    # n000 (retest): two distinct good partners
    loc = localise(nodes[:3], [("n000", "n001"), ("n002", "n001")], fake_runner(bad_nodes={"n002"}))
    assert [(f.kind, f.nodes) for f in loc.findings()] == [("node", ["n002"])]
    assert "n002 fails with known-good partners n001, n000" in loc.findings()[0].message
    # its test with n001 gave no result: one failure with a good partner (n000), and no
    # partner left to try, is not enough to blame it, and never a pass
    loc = localise(nodes[:3], [("n000", "n001"), ("n002", "n001")], fake_runner(unknown_pairs=[("n002", "n001")],
                                                                                  bad_nodes={"n002"}))
    assert loc.verdicts()["n002"] == "unknown"
    assert [(f.kind, f.nodes) for f in loc.findings()] == [("unknown", ["n002"])]


def test_a_pair_with_an_unknown_result_is_never_a_pass():
    _, findings, _ = run(pool(8), unknown_pairs=[("n000", "n001")])
    # both nodes then pass with others: the nodes are cleared, the path is unknown, not passed
    assert [(f.kind, f.nodes) for f in findings] == [("unknown", ["n000", "n001"])]
    assert all(f.kind != "link" for f in findings)


def test_missing_result_counts_as_unknown():
    nodes = pool(4)
    loc = Localiser(nodes, plan_pairs(nodes).pairs)
    batch = loc.next_tests()
    loc.record([PairResult(a=batch[0][0], b=batch[0][1], outcome="pass")])  # the second never came back
    assert any(r.outcome == "unknown" for r in loc.results)
    assert loc.verdicts()["n002"] != "pass"


def test_rail_named_where_per_rail_results_show_it():
    def rails(a, b):
        return {"mlx5_0": "pass", "mlx5_3": "fail" if "n006" in (a, b) else "pass"}
    _, findings, _ = run(pool(16), bad_nodes={"n006"}, rails=rails)
    assert findings[0].kind == "node" and findings[0].rails == ["mlx5_3"] and "mlx5_3" in findings[0].message


def test_pair_outcome_from_rails():
    assert pair_outcome({"a": "pass", "b": "pass"}) == "pass"
    assert pair_outcome({"a": "pass", "b": "unknown"}) == "unknown"
    assert pair_outcome({"a": "fail", "b": "unknown"}) == "fail"
    assert pair_outcome({}) == "unknown"


def test_deterministic():
    a = run(pool(64), bad_nodes={"n010", "n040"}, bad_links=[("n020", "n021")])
    b = run(list(reversed(pool(64))), bad_nodes={"n010", "n040"}, bad_links=[("n020", "n021")])
    assert a[2] == b[2] and a[1] == b[1]


def test_a_lone_candidate_failing_with_two_active_partners_is_blamed_its_first_test_counting():
    """Active nodes are good from the start: the first-round test with one of them is
    already evidence about the candidate, so one retest with a second is enough."""
    nodes = [FabricNode(name=n, rack="r1") for n in ("slow", "g1", "g2")]
    log = []
    loc = localise(nodes, [("slow", "g1")], fake_runner(bad_nodes={"slow"}, log=log), known_good={"g1", "g2"})
    assert log == [("slow", "g1"), ("slow", "g2")] and loc.verdicts()["slow"] == "fail"
    [f] = loc.findings()
    assert f.kind == "node" and f.message == "slow fails with known-good partners g1, g2"
    # without them known good, the same two failures say nothing about who is to blame
    loc = localise(nodes, [("slow", "g1")], fake_runner(bad_nodes={"slow"}))
    assert loc.verdicts()["slow"] != "fail"

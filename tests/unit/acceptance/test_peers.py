"""bringup.acceptance.peers and its wiring into the judge: each figure against the peer median (median
and scaled MAD, k and the direction from thresholds.yaml) and against the node's last
accepted burn-in; too few peers is reported as skipped; a malformed peer document is left
out with a finding. Constructed documents shaped like the agent's output (test_judge)."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
from test_judge import H100, good_doc, with_check

from bringup.acceptance.judge import REMEDIATION, judge
from bringup.acceptance.peers import MAD_SCALE, PeerPolicy, compare
from bringup.acceptance.result import parse_result
from bringup.acceptance.thresholds import SkuThresholds, load_thresholds_file, thresholds_for
from bringup.errors import ConfigError, ParseError
from bringup.netbox.adapter import NodeRecord
from bringup.sku import load_skus

#: a healthy H100 fleet's busbw: tight, a few tenths of a GB/s apart, and well above the SKU's
#: 460 GB/s gate, so that 8 % below it is judged by the peer rule alone
FLEET_BUSBW = (520.3, 519.9, 521.0, 520.1, 520.8, 519.5, 520.4)


@pytest.fixture(scope="module")
def th() -> SkuThresholds:
    return thresholds_for(load_skus()[H100])


def doc(th, driver: str | None = "550.90.07", **metrics) -> dict:
    """A good document with ``check__metric=value`` changes and the driver NVML reports."""
    d = with_check(good_doc(th), "nccl", metrics={"busbw_largest_gbps": 520.3})  # the fleet's figure
    for key, value in metrics.items():
        check, metric = key.split("__")
        d = with_check(d, check, metrics={metric: value})
    for c in d["checks"]:
        if c["name"] == "inventory" and driver is not None:
            c["data"] = {"driver_version": driver, "gpus": [{"index": i, "vbios": "96.00.74.00.01"} for i in range(8)]}
        if c["name"] == "gpu_burn":
            c["metrics"].setdefault("gflops_min", 51234.0)
        if c["name"] == "clocks":
            c["metrics"].setdefault("max_power_w", 612.0)
    return d


def fleet(th, values=FLEET_BUSBW, **more) -> list[tuple[str, dict]]:
    return [(f"peer{i}", doc(th, nccl__busbw_largest_gbps=v, **more)) for i, v in enumerate(values)]


def with_policy(th: SkuThresholds, **changes) -> SkuThresholds:
    """The shipped thresholds with parts of the peers section changed (``busbw_action``...)."""
    p = th.peers.model_copy(deep=True)
    for key, value in changes.items():
        if key == "baseline_action":
            p.baseline.action = value
        elif key.endswith("_action"):
            p.figures[key.removesuffix("_action")].action = value
        else:
            setattr(p, key, value)
    return th.model_copy(update={"peers": p})


def outcomes(v) -> dict[tuple[str, str], str]:
    return {(c.figure, c.against): c.outcome for c in v.peer_checks}


# --- the rule ----------------------------------------------------------------------------------
def test_a_node_8_percent_below_its_peers_fails_where_the_yaml_says_fail(th):
    assert th.peers.figures["busbw"].action == "fail"  # the shipped data
    median = 520.3
    me = parse_result(doc(th, nccl__busbw_largest_gbps=round(median * 0.92, 1)))
    v = judge(me, th, fleet(th))
    assert v.status == "fail"
    [r] = v.reasons
    assert (r.check, r.code) == ("nccl", "busbw_below_peers") and r.remediation == REMEDIATION["busbw_below_peers"]
    assert "8.0% below the median 520.3 of 7 peers" in r.message
    check = next(c for c in v.peer_checks if c.figure == "busbw")
    assert check.outcome == "outlier" and check.reference == median and check.peers == 7


def test_the_same_node_only_warns_where_the_yaml_says_warn(th):
    me = parse_result(doc(th, nccl__busbw_largest_gbps=478.7))
    v = judge(me, with_policy(th, busbw_action="warn"), fleet(th))
    assert v.status == "pass" and v.reasons == []
    assert [(w.check, w.code) for w in v.warnings] == [("nccl", "busbw_below_peers")]


def test_a_node_within_the_fleets_spread_is_ok(th):
    v = judge(parse_result(doc(th, nccl__busbw_largest_gbps=519.0)), th, fleet(th))
    assert v.status == "pass" and v.warnings == []
    assert outcomes(v)[("busbw", "peers")] == "ok"


def test_too_few_peers_is_reported_skipped_never_passed(th):
    me = parse_result(doc(th, nccl__busbw_largest_gbps=300.0 * 1.6))
    v = judge(me, th, fleet(th, values=(476.3, 475.9, 477.0)))
    assert {o for (f, a), o in outcomes(v).items() if a == "peers"} == {"skipped"}
    [note] = v.notes
    assert note.code == "peers_skipped" and "busbw: 3 peers, 5 needed" in note.message
    assert "max_temp: 3 peers, 5 needed" in note.message


def test_no_peers_at_all_is_skipped_too(th):
    v = judge(parse_result(doc(th)), th, [])
    assert "busbw: 0 peers, 5 needed" in v.notes[0].message


def test_peers_not_asked_for_compare_nothing(th):
    """A replay of one document (no fleet): no peer checks, no notes, as before."""
    v = judge(parse_result(doc(th)), th)
    assert v.peer_checks == [] and v.notes == []


def test_a_zero_mad_group_does_not_flag_a_tiny_difference_but_does_flag_a_real_one(th):
    same = (520.0,) * 6
    near = judge(parse_result(doc(th, nccl__busbw_largest_gbps=519.5)), th, fleet(th, values=same))
    assert near.status == "pass" and outcomes(near)[("busbw", "peers")] == "ok"
    assert next(c for c in near.peer_checks if c.figure == "busbw").spread == 0
    far = judge(parse_result(doc(th, nccl__busbw_largest_gbps=478.0)), th, fleet(th, values=same))
    assert far.status == "fail" and far.reasons[0].code == "busbw_below_peers"


def test_beyond_the_relative_floor_but_within_k_mads_is_ok(th):
    """A noisy fleet: 6 % below the median is within 3.5 scaled MADs, so not an outlier."""
    noisy = (400.0, 440.0, 476.0, 500.0, 520.0, 460.0, 490.0)
    v = judge(parse_result(doc(th, nccl__busbw_largest_gbps=447.0)), with_policy(th), fleet(th, values=noisy))
    c = next(c for c in v.peer_checks if c.figure == "busbw")
    assert c.outcome == "ok" and c.spread == pytest.approx(MAD_SCALE * 24.0)


def test_direction_a_hotter_gpu_is_bad_a_faster_or_cooler_one_is_not(th):
    peers = fleet(th)  # max_temp_c 63, busbw ~476
    hot = judge(parse_result(doc(th, clocks__max_temp_c=80)), th, peers)
    assert [w.code for w in hot.warnings] == ["max_temp_above_peers"] and hot.status == "pass"  # temp: warn
    assert "27.0% above the median 63" in hot.warnings[0].message
    cool = judge(parse_result(doc(th, clocks__max_temp_c=45)), th, peers)
    fast = judge(parse_result(doc(th, nccl__busbw_largest_gbps=560.0)), th, peers)
    for v in (cool, fast):
        assert v.status == "pass" and v.warnings == [] and "outlier" not in outcomes(v).values()


def test_slow_gpu_burn_fails_and_power_hungry_node_warns(th):
    peers = fleet(th)
    v = judge(parse_result(doc(th, gpu_burn__gflops_min=45000.0, clocks__max_power_w=700.0)), th, peers)
    assert [r.code for r in v.reasons] == ["gflops_below_peers"]
    assert [w.code for w in v.warnings] == ["max_power_above_peers"]


def test_peers_of_another_driver_are_not_peers(th):
    other = [(n, doc(th, driver="570.86.15", nccl__busbw_largest_gbps=540.0)) for n in "abcdef"]
    v = judge(parse_result(doc(th, nccl__busbw_largest_gbps=476.0)), th, other + fleet(th)[:2])
    busbw = next(c for c in v.peer_checks if c.figure == "busbw")
    assert busbw.outcome == "skipped" and busbw.message.startswith("busbw: 2 peers, 5 needed (driver 550.90.07)")


def test_a_peer_whose_own_check_failed_is_no_reference(th):
    bad = [(f"bad{i}", with_check(doc(th, nccl__busbw_largest_gbps=300.0), "nccl", status="fail"))
           for i in range(5)]
    v = judge(parse_result(doc(th, nccl__busbw_largest_gbps=476.0)), th, bad + fleet(th)[:5])
    busbw = next(c for c in v.peer_checks if c.figure == "busbw")
    assert busbw.peers == 5 and busbw.reference == pytest.approx(520.3)


def test_a_malformed_peer_document_is_left_out_with_a_finding_not_a_crash(th):
    odd = copy.deepcopy(doc(th))
    odd["checks"] = "cut"
    peers = fleet(th) + [("garbage", "{not json"), ("odd", odd), ("cut", ParseError("parts [1] of 2 found")),
                         ("old", {**doc(th), "schema_version": 0}),
                         ("unfinished", {**doc(th), "partial": True, "running": "nccl"})]
    v = judge(parse_result(doc(th, nccl__busbw_largest_gbps=478.7)), th, peers)
    assert v.status == "fail" and v.reasons[0].code == "busbw_below_peers"  # the 7 good peers still count
    unreadable = [w.message for w in v.warnings if w.code == "peer_unreadable"]
    assert [m.split(":")[0] for m in unreadable] == ["peer garbage", "peer odd", "peer cut", "peer old",
                                                     "peer unfinished"]
    assert "not JSON" in unreadable[0] and "parts [1] of 2" in unreadable[2] and "did not finish" in unreadable[4]


# --- the node's own baseline -----------------------------------------------------------------------
BASELINE = {"busbw": 520.0, "gflops": 51234.0, "max_temp": 63.0, "max_power": 612.0}


def test_a_drop_against_the_last_accepted_burn_in_is_an_outlier(th):
    me = parse_result(doc(th, nccl__busbw_largest_gbps=462.0))   # above the 460 gate, 11.2 % below before
    v = judge(me, th, baseline=BASELINE)
    assert v.status == "pass" and [w.code for w in v.warnings] == ["busbw_below_baseline"]  # shipped: warn
    assert "11.2% below this node's last accepted burn-in (520" in v.warnings[0].message
    failing = judge(me, with_policy(th, baseline_action="fail"), baseline=BASELINE)
    assert failing.status == "fail" and failing.reasons[0].code == "busbw_below_baseline"
    assert failing.reasons[0].remediation == REMEDIATION["busbw_below_baseline"]


def test_a_small_drop_or_a_gain_against_the_baseline_is_ok(th):
    for busbw in (500.0, 600.0):   # 3.8 % lower; 15 % higher is a faster node, not a fault
        v = judge(parse_result(doc(th, nccl__busbw_largest_gbps=busbw)), th, baseline=BASELINE)
        assert v.warnings == [] and outcomes(v)[("busbw", "baseline")] == "ok"


def test_no_accepted_burn_in_on_record_is_skipped(th):
    v = judge(parse_result(doc(th)), th, baseline={})
    assert {o for (f, a), o in outcomes(v).items() if a == "baseline"} == {"skipped"}
    assert all("no accepted burn-in" in c.message for c in v.peer_checks)


def test_a_figure_the_node_did_not_report_is_skipped(th):
    d = doc(th)
    for c in d["checks"]:
        if c["name"] == "clocks":
            c["metrics"]["max_power_w"] = None
    report = compare(parse_result(d), th.peers, fleet(th), BASELINE)
    assert {c.against: c.message for c in report.checks if c.figure == "max_power"} == {
        "peers": "max_power: this node did not report max_power_w",
        "baseline": "max_power: this node did not report max_power_w"}


# --- the data ----------------------------------------------------------------------------------------
def test_the_shipped_peers_section_is_the_documented_one(th):
    p = th.peers
    assert (p.min_peers, p.k, p.min_relative, p.group_by, p.baseline.max_change) == (5, 3.5, 0.05, ["driver"], 0.10)
    assert {n: (f.worse, f.action) for n, f in p.figures.items()} == {
        "busbw": ("lower", "fail"), "gflops": ("lower", "fail"), "max_temp": ("higher", "warn"),
        "max_power": ("higher", "warn")}
    # every code the data can produce has its remediation
    for name, f in p.figures.items():
        side = "below" if f.worse == "lower" else "above"
        assert f"{name}_{side}_peers" in REMEDIATION and f"{name}_{side}_baseline" in REMEDIATION


@pytest.mark.parametrize("bad", [{"worse": "sideways"}, {"action": "quarantine"}, {"op": "eval"}])
def test_a_peers_section_outside_the_fixed_vocabulary_is_a_config_error(tmp_path, bad):
    tf = load_thresholds_file()
    raw = json.loads(tf.model_dump_json())
    raw["peers"]["figures"]["busbw"].update(bad)
    path = tmp_path / "thresholds.yaml"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError):
        load_thresholds_file(path)


def test_peer_policy_defaults_stand_alone():
    assert PeerPolicy().figures["busbw"].action == "fail" and PeerPolicy().min_peers == 5


# --- the stage: fetching the peers and carrying the baseline -------------------------------------------
def _rec(name: str, stage: str = "active", sku: str = H100, at: str = "2026-12-01T00:00:00+00:00",
         burnin: bool = True, **fields) -> NodeRecord:
    cf = {"bringup_evidence": {"docs": {"burnin": {"entries": [1], "at": at}}} if burnin else {}, **fields}
    return NodeRecord(id=1, name=name, site="s", rack="r", status="active", stage=stage, sku=load_skus()[sku],
                      pool={}, macs={}, bmc_address="", address="", serial="", url="", tags=[], custom_fields=cf)


class _Ctx:
    def __init__(self, recs: list[NodeRecord], docs: dict[str, object]) -> None:
        self.asked: list[dict] = []
        self.read: list[str] = []

        def nodes(**filters):
            self.asked.append(filters)
            return recs

        def get(node, fields, kind):
            from bringup.errors import NetBoxNotFound
            self.read.append(f"{node}/{kind}")
            found = docs.get(f"{node}/{kind}")
            if isinstance(found, Exception):
                raise found
            if found is None:
                raise NetBoxNotFound("none")
            return found
        self.netbox = SimpleNamespace(nodes=nodes)
        self.evidence = SimpleNamespace(get=get)


def test_peer_documents_are_the_same_sku_burned_in_validating_or_active_newest_first(th):
    from bringup.acceptance.judge_step import peer_documents
    recs = [_rec("me", stage="burned_in"), _rec("a", at="2026-12-03"), _rec("b", stage="burned_in", at="2026-12-05"),
            _rec("c", stage="validating", at="2026-12-04"), _rec("q", stage="quarantined"),
            _rec("p", stage="provisioned"), _rec("h200", sku="hgx-h200-141gb"), _rec("none", burnin=False),
            _rec("cut", at="2026-12-02")]
    docs = {"a/burnin": {"document": doc(th)}, "b/burnin": {"document": {"unparsed": "{cut", "file": "x"}},
            "c/burnin": doc(th), "cut/burnin": ParseError("parts [1] of 2 found")}
    ctx = _Ctx(recs, docs)
    got = peer_documents(ctx, recs[0], limit=3)
    assert ctx.asked == [{"site": "s"}]
    assert [n for n, _ in got] == ["b", "c", "a"]     # newest three; cut (oldest) not read
    assert got[0][1] == "{cut" and got[1][1] == doc(th) and got[2][1] == doc(th)
    got = peer_documents(ctx, recs[0], limit=10)
    assert isinstance(dict(got)["cut"], ParseError)


def test_the_judge_step_compares_with_the_fleet_and_carries_the_baseline(th):
    from bringup.acceptance.judge_step import judge as judge_step
    me = _rec("me", stage="burned_in")
    recs = [me] + [_rec(f"p{i}") for i in range(7)]
    docs = {f"p{i}/burnin": {"document": d} for i, (_, d) in enumerate(fleet(th))}
    docs["me/burnin"] = {"document": doc(th, nccl__busbw_largest_gbps=478.7)}
    docs["me/verdict"] = {"status": "pass", "baseline": {"figures": BASELINE, "at": "2026-11-01"}}
    res = judge_step(_Ctx(recs, docs), me, {})
    v = res.evidence[0].document
    assert v["status"] == "fail" and [r["code"] for r in v["reasons"]] == ["busbw_below_peers"]
    assert [w["code"] for w in v["warnings"]] == []  # 8 % below the baseline: within its 10 %
    assert v["baseline"] == {"figures": BASELINE, "at": "2026-11-01"}  # a failed burn-in is no new baseline
    assert "- peers outlier: busbw 478.7 GB/s is 8.0% below" in res.evidence[0].summary

    docs["me/burnin"] = {"document": doc(th, nccl__busbw_largest_gbps=521.0)}
    res = judge_step(_Ctx(recs, docs), me, {})
    v = res.evidence[0].document
    assert v["status"] == "pass" and v["baseline"]["figures"]["busbw"] == 521.0  # the new accepted baseline


def test_the_lab_fleet_defaults_skip_peers_and_keep_the_low_busbw_node_for_its_gate(th):
    """flow8 and the lab fleet: 3 or 4 burned-in nodes per SKU, identical simulated figures, one node at 300 GB/s. With the
    shipped defaults every peer check is skipped (3 peers, 5 needed): healthy nodes pass and
    the slow node fails for the SKU's busbw gate only."""
    from bringup.acceptance.judge_step import judge as judge_step
    names = ["n01", "n02", "n03", "n04"]
    recs = [_rec(n, stage="burned_in") for n in names]
    docs = {f"{n}/burnin": {"document": doc(th, nccl__busbw_largest_gbps=300.0 if n == "n04" else 476.3)}
            for n in names}
    ctx = _Ctx(recs, docs)
    verdicts = {r.name: judge_step(ctx, r, {}) for r in recs}
    assert {n: r.ok for n, r in verdicts.items()} == {"n01": True, "n02": True, "n03": True, "n04": False}
    assert [r["code"] for r in verdicts["n04"].evidence[0].document["reasons"]] == ["busbw_low"]
    for r in verdicts.values():
        assert "busbw: 3 peers, 5 needed" in r.fields["burnin_summary"]


@pytest.mark.parametrize("previous", [["odd"], {"status": "pass", "baseline": "odd"},
                                      {"status": "pass", "baseline": {"figures": [1, 2]}}])
def test_a_previous_verdict_of_odd_shape_is_no_baseline_and_no_crash(th, previous):
    from bringup.acceptance.judge_step import verdict_of
    me = _rec("me", stage="burned_in")
    v = verdict_of("me", me, {"document": doc(th, nccl__busbw_largest_gbps=478.7)}, previous, peers=[])
    assert v["status"] == "pass"
    assert {c["outcome"] for c in v["peer_checks"] if c["against"] == "baseline"} == {"skipped"}
    failed = verdict_of("me", me, {"document": doc(th, nccl__busbw_largest_gbps=300.0)}, previous, peers=[])
    assert failed["status"] == "fail" and failed["baseline"] is None

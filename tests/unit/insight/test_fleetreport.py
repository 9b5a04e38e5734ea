"""bringup.insight.fleetreport (and its plots and page): the page from fleet frames built through the
real evidence store and judge; faulty nodes marked, tables as in the frames, data files that
read back, an empty fleet, and node names that try to break the HTML or the plots."""

from __future__ import annotations

import base64
import re
from datetime import timedelta
from html.parser import HTMLParser

import pandas as pd
import pytest
from fleet_fixtures import T0, Journal, agent_document, burn_in_and_judge, history
from typer.testing import CliRunner

# imported at collection, before the no-process guard: matplotlib builds its font cache on
# first import and asks fontconfig (a process) for system fonts
import bringup.insight.report_plots  # noqa: F401
from bringup.insight.fleetdata import build
from bringup.insight.fleetreport import select, tables, write
from bringup.settings import Settings
from bringup_cli import app, report_cmd

AT = pd.Timestamp(T0 + timedelta(days=1))
STEPS = ((0, "planned"), (1, "provisioned"), (2, "burned_in"))


def fleet_histories(names=("gpu-00", "gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-05", "gpu-06"),
                    hot="gpu-03", slow="gpu-05"):
    """Healthy nodes serving; ``hot`` failed on temperature and is quarantined; ``slow`` failed
    on busbw (430 GB/s, under the H100 threshold of 460) and still serves (faulty: last verdict)."""
    out = []
    for i, name in enumerate(names):
        j = Journal()
        at = T0 + timedelta(hours=i)
        if name == hot:
            burn_in_and_judge(j, name, at, hot_gpu=2)
            out.append(history(name, j, (*STEPS, (3, "quarantined")), stage="quarantined"))
            continue
        doc = None
        if name == slow:
            doc = agent_document(name, started=at)
            [nccl] = [c for c in doc["checks"] if c["name"] == "nccl"]
            nccl["metrics"]["busbw_largest_gbps"] = 430.0
        burn_in_and_judge(j, name, at, raw=doc)
        out.append(history(name, j, (*STEPS, (4 + i, "active"))))
    return out


@pytest.fixture(scope="module")
def fleet():
    return build(fleet_histories())


class Tables(HTMLParser):
    """Every table of a page: rows of (row class, [cell texts])."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[tuple[str, list[str]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append((dict(attrs).get("class") or "", []))
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1][1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def page_tables(page: str) -> dict[str, list[tuple[str, list[str]]]]:
    """Tables keyed by the heading before them (the busbw band table: ``bands``)."""
    parser = Tables()
    parser.feed(page)
    heads = re.findall(r"<h2>([^<]*)</h2>\n(?:<figure>.*?</figure>\n)?<table>", page)
    assert len(heads) == len(parser.tables)
    return {("bands" if h.startswith("NCCL busbw") else h): t for h, t in zip(heads, parser.tables, strict=True)}


def test_page_lists_every_node_and_marks_the_faulty_ones(fleet, tmp_path):
    page = write(tmp_path, fleet, at=AT, gpu_hour_usd=2.0, filters={"site": "lab"}).read_text()
    t = page_tables(page)
    faulty = {cells[0]: (cls, cells[1]) for cls, cells in t["Faulty and quarantined nodes"][1:]}
    assert faulty == {"gpu-03": ("faulty", "quarantined"), "gpu-05": ("faulty", "failed")}
    nodes = t["Nodes"]
    header = nodes[0][1]
    rows = {cells[0]: dict(zip(header, cells, strict=True)) | {"class": cls} for cls, cells in nodes[1:]}
    assert sorted(rows) == [f"gpu-0{i}" for i in range(7)]
    assert {n for n, r in rows.items() if r["class"] == "faulty"} == {"gpu-03", "gpu-05"}
    assert rows["gpu-05"]["last_verdict"] == "fail" and rows["gpu-05"]["busbw_gbps"] == "430.0"
    assert rows["gpu-00"]["mark"] == "" and rows["gpu-00"]["planned_to_serving_h"] == "4.0"
    assert "GPU 2: 95 C under load" in rows["gpu-03"]["last_reasons"]
    # all four plots drawn, as embedded PNGs; nothing fetched, no script
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 4 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "Findings" in page and "every evidence document was read" in page


def test_tables_match_the_frames(fleet):
    t = tables(fleet, at=AT, gpu_hour_usd=2.0)
    assert list(t.nodes["node"]) == sorted(fleet.nodes["node"])
    assert t.nodes.set_index("node")["faulty"].to_dict() == {f"gpu-0{i}": i in (3, 5) for i in range(7)}
    assert len(t.verdicts) == len(fleet.runs) == 7
    assert t.verdicts.set_index("node")["verdict"].to_dict() == fleet.runs.set_index("node")["verdict"].to_dict()
    assert len(t.gpus) == 7 * 8 and t.gpus.loc[(t.gpus["node"] == "gpu-03") & (t.gpus["gpu"] == 2),
                                                "max_temp_c"].item() == 95
    assert set(t.reasons["code"]) == set(fleet.reasons["code"]) and t.reasons["judged_at"].notna().all()
    # the peer band: 6 peers (5 needed; gpu-05's nccl check failed: no peer), MAD 0, so
    # min_relative (5 %) of the median decides it
    [band] = t.bands.to_dict("records")
    assert band["nodes"] == 7 and band["peers"] == 6 and not t.busbw.set_index("node").loc["gpu-05", "peer"]
    assert band["threshold_gbps"] == 460.0 and band["median_gbps"] == 476.3 and band["k"] == 3.5
    assert band["band_lo_gbps"] == pytest.approx(476.3 * 0.95) and band["scaled_mad_gbps"] == 0
    bw = t.busbw.set_index("node")
    assert bw.loc["gpu-05", "below_threshold"] and bw.loc["gpu-05", "outside_band"]
    assert not bw.drop("gpu-05")[["below_threshold", "outside_band"]].any().any()
    ledger = t.ledger.set_index("node")
    assert pd.isna(ledger.loc["gpu-03", "planned_to_serving_h"]) and ledger.loc["gpu-00", "planned_to_serving_h"] == 4


def test_too_few_peers_draws_no_band():
    fd = build(fleet_histories(names=("a", "b", "c"), hot="b", slow="none"))
    t = tables(fd, at=AT, gpu_hour_usd=2.0)
    [band] = t.bands.to_dict("records")
    assert band["note"] == "3 peers, 5 needed: no band" and pd.isna(band["band_lo_gbps"]) and band["peers"] == 3
    assert band["threshold_gbps"] == 460.0 and not t.busbw["outside_band"].any()


def test_csv_and_parquet_read_back_as_the_tables(fleet, tmp_path):
    write(tmp_path, fleet, at=AT, gpu_hour_usd=2.0)
    t = tables(fleet, at=AT, gpu_hour_usd=2.0)
    for name, df in t.items():
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "data" / f"{name}.parquet"), df, obj=name)
        back = pd.read_csv(tmp_path / "data" / f"{name}.csv")
        assert list(back.columns) == list(df.columns) and len(back) == len(df), name
        for col in df.select_dtypes("number").columns:
            pd.testing.assert_series_equal(back[col], df[col], check_dtype=False, obj=f"{name}.{col}")
    assert "gpu-03" in (tmp_path / "data" / "nodes.csv").read_text()


def test_empty_fleet_says_so(tmp_path):
    page = write(tmp_path, build([]), at=AT, gpu_hour_usd=2.0, filters={"site": "nowhere"}).read_text()
    assert "No nodes in site nowhere: there is nothing to report" in page
    assert "<img" not in page and "every evidence document was read" in page
    assert pd.read_parquet(tmp_path / "data" / "nodes.parquet").empty
    assert (tmp_path / "data" / "verdicts.csv").read_text().startswith("node,run,")


def test_hostile_node_name_is_escaped_and_drawn(tmp_path):
    evil = '<script>alert("x")</script>$\\alpha$ & <b>'
    hs = fleet_histories(names=(evil, "ok-1"), hot=evil, slow="none")
    page = write(tmp_path, build(hs), at=AT, gpu_hour_usd=2.0, filters={"rack": "<r1>"}).read_text()
    assert "<script" not in page and "<b>" not in page and "<r1>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;$\\alpha$ &amp; &lt;b&gt;" in page
    assert "rack &lt;r1&gt;" in page
    # mathtext is off: the $...$ in the name did not stop the plots
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 4
    faulty = page_tables(page)["Faulty and quarantined nodes"]
    assert [cells[0] for _, cells in faulty[1:]] == [evil]


def test_pool_selects_the_nodes_and_their_rows(fleet):
    hs = fleet_histories(names=("a", "b"), hot="b", slow="none")
    hs[0].pool = "inference"
    fd = select(build(hs), "inference")
    assert list(fd.nodes["node"]) == ["a"] and set(fd.runs["node"]) == {"a"} and set(fd.gpus["node"]) == {"a"}
    assert select(fleet, None) is fleet


def test_report_command(monkeypatch, tmp_path):
    seen = {}

    def fleet_of(config, site, rack):
        seen.update(site=site, rack=rack)
        hs = fleet_histories(names=("a", "b"), hot="b", slow="none")
        hs[0].pool = "inference"
        return Settings(netbox_url="http://nb", netbox_token_file="/dev/null", gpu_hour_usd=3.0), build(hs)
    monkeypatch.setattr(report_cmd, "_fleet", fleet_of)
    out = tmp_path / "rep"
    result = CliRunner().invoke(app, ["report", "--site", "lab", "--rack", "r1", "--pool", "training",
                                      "--out", str(out), "--at", AT.isoformat()], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert seen == {"site": "lab", "rack": "r1"}
    assert f"1 nodes; report: {out.resolve() / 'index.html'}" in result.output
    page = (out / "index.html").read_text()
    assert "Fleet report: site lab, rack r1, pool training" in page
    assert list(pd.read_parquet(out / "data" / "nodes.parquet")["node"]) == ["b"]
    bad = CliRunner().invoke(app, ["report", "--out", str(out), "--at", "soonish"])
    assert bad.exit_code == 2 and "ISO 8601" in bad.output


def test_a_healthy_fleet_has_no_faulty_rows(tmp_path):
    hs = fleet_histories(names=("a", "b"), hot="none", slow="none")
    page = write(tmp_path, build(hs), at=AT, gpu_hour_usd=2.0).read_text()
    assert "None: no node is quarantined and no last verdict is a fail." in page
    assert 'class="faulty"' not in page and "Fleet report: whole fleet" in page
    assert len(re.findall(r'src="data:image/png;base64,', page)) == 4

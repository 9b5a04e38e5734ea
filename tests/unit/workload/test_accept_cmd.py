"""``bringup accept --pool P``: the verdict's figures printed, exit 0 only on a pass, bad
input one line with exit 2 (the run itself replaced)."""

from __future__ import annotations

from types import SimpleNamespace

from typer.testing import CliRunner

from bringup.errors import ConfigError
from bringup.workload.policy import Verdict
from bringup_cli import accept_cmd, app


def _invoke(monkeypatch, outcome=None, error=None):
    seen = {}
    monkeypatch.setattr(accept_cmd, "_context", lambda config: ("ctx", "hold"))

    def accept_pool(ctx, pool, run_id, *, hold, progress):
        seen.update(ctx=ctx, pool=pool, run_id=run_id, hold=hold)
        if error:
            raise error
        v = Verdict(pool=pool, outcome=outcome, reasons=["restore took 40.0 s > limit 30 s"] if outcome == "fail" else [],
                    figures={"samples_per_s": 24000.0, "mfu": None})
        return SimpleNamespace(verdict=v, held=["n1"] if outcome != "pass" else [], problems=[])
    monkeypatch.setattr("bringup.workload.pool.accept_pool", accept_pool)
    result = CliRunner().invoke(app, ["accept", "--pool", "train", "--run-id", "r1"], env={"COLUMNS": "200"})
    return result, seen


def test_a_pass_exits_0_with_its_figures(monkeypatch):
    result, seen = _invoke(monkeypatch, "pass")
    assert result.exit_code == 0, result.output
    assert seen == {"ctx": "ctx", "pool": "train", "run_id": "r1", "hold": "hold"}
    assert "PASS" in result.output and "24,000 samples/s" in result.output and "unknown" in result.output


def test_a_fail_exits_1_with_the_reason_and_the_held_nodes(monkeypatch):
    result, _ = _invoke(monkeypatch, "fail")
    assert result.exit_code == 1
    assert "restore took 40.0 s" in result.output and "held out of service: n1" in result.output


def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys):
    import pytest

    from bringup_cli import main
    monkeypatch.setenv("BRINGUP_CONFIG", "/nonexistent/settings.yaml")
    monkeypatch.setattr(accept_cmd, "_context", lambda config: ("ctx", "hold"))

    def accept_pool(*a, **kw):
        raise ConfigError("pool 'train' has no nodes in NetBox", hint="check the pool name")
    monkeypatch.setattr("bringup.workload.pool.accept_pool", accept_pool)
    monkeypatch.setattr("sys.argv", ["bringup", "accept", "--pool", "train"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "pool 'train' has no nodes in NetBox" in err and "Traceback" not in err

"""The agent's process runner: timeouts kill the whole group, missing tools are reported."""


from burnin.proc import run_tool


def test_missing_tool_is_reported_not_raised():
    run = run_tool(["definitely-not-a-tool-xyz", "--help"], timeout_s=5)
    assert run.missing and "not installed" in run.problem()



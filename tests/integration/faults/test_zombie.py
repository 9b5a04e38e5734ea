"""A flow run whose process is SIGKILLed turns Crashed within a bounded time, through the
zombie automation flows.deploy creates (flows/zombies.py) and Prefect's heartbeats; it
does not stay Running forever.

The run is a deployment's (the automation watches those), started the way a process
worker starts one (``python -m prefect.engine`` with the run's id), with the heartbeat the
lab's workers use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SLEEPER = '''
import time
from prefect import flow


@flow(name="zombie-sleeper")
def sleeper():
    time.sleep(3600)
'''


def _state(client, run_id):
    return client.read_flow_run(run_id).state


# more than 120 s on a loaded machine: a heartbeat (30 s) before the kill, then up to the
# automation's window (90 s) plus its evaluation until the server marks the run Crashed
def test_a_killed_flow_run_turns_crashed(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client

    from flows import zombies
    assert zombies.ensure_automation() in ("created", "updated", "unchanged")
    assert zombies.ensure_automation() == "unchanged"          # idempotent
    # the deployed window (3 x Prefect's default heartbeat) is long for a test: this run
    # beats every 30 s, so a 90 s window is safe for it (later registrations restore it)
    window = 3 * zombies.HEARTBEAT_S
    assert zombies.ensure_automation(within_s=window) == "updated"
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    with get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name("zombie-sleeper")
        dep = client.create_deployment(
            flow_id=flow_id, name="zombie-test", entrypoint="sleeper.py:sleeper",
            pull_steps=[{"prefect.deployments.steps.set_working_directory": {"directory": str(tmp_path)}}])
        run = client.create_flow_run_from_deployment(dep)
        env = {**os.environ, "PREFECT_API_URL": prefect_server.api_url, "PREFECT__FLOW_RUN_ID": str(run.id),
               **zombies.heartbeat_env()}
        proc = subprocess.Popen([sys.executable, "-m", "prefect.engine"], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while _state(client, run.id).type.value != "RUNNING":
                assert proc.poll() is None, "the flow run's process ended on its own"
                assert time.monotonic() < deadline, "the flow run never started"
                time.sleep(1)
            time.sleep(zombies.HEARTBEAT_S + 5)   # at least one heartbeat after the start
            os.killpg(proc.pid, signal.SIGKILL)    # the process dies without a word
            proc.wait(timeout=30)
            killed = time.monotonic()
            assert _state(client, run.id).type.value == "RUNNING"   # nobody told the server
            # the automation fires WITHIN_S after the last heartbeat; its evaluation runs
            # every few seconds: a minute of slack
            bound = window + 60
            while (state := _state(client, run.id)).type.value == "RUNNING":
                assert time.monotonic() - killed < bound, f"still Running {bound} s after the kill"
                time.sleep(5)
            assert state.type.value == "CRASHED", state
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)

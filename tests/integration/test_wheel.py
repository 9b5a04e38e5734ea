"""bringup installs as a wheel and works with no checkout around it: the data folders
(netbox/, images/, playbooks/, prefect.yaml) ship inside the package and are found
through bringup.resources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"


def run(*argv, cwd=None, timeout=600) -> str:
    r = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{argv}: rc {r.returncode}\n{(r.stdout + r.stderr)[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    run(UV, "build", "--wheel", "--out-dir", tmp / "dist", "--python", sys.executable, REPO)
    wheel = next((tmp / "dist").glob("bringup-*.whl"))
    # the locked dependencies (from the uv cache), then the wheel itself
    reqs = tmp / "requirements.txt"
    reqs.write_text(run(UV, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project",
                        "--directory", REPO))
    run(UV, "venv", "--python", sys.executable, tmp / "venv")
    py = tmp / "venv" / "bin" / "python"
    run(UV, "pip", "install", "--python", py, "-r", reqs)
    run(UV, "pip", "install", "--python", py, "--no-deps", wheel)
    return tmp


def test_the_wheel_runs_from_a_folder_without_a_checkout(installed):
    bringup = installed / "venv" / "bin" / "bringup"
    out = run(bringup, "--help", cwd=installed)
    for group in ("lab", "netbox", "commission", "discover"):
        assert group in out
    where = run(installed / "venv" / "bin" / "python", "-c",
                "from bringup.resources import data_dir, project_file, agent_dir; "
                "print(data_dir('netbox')); print(data_dir('playbooks')); print(project_file()); print(agent_dir())",
                cwd=installed).split()
    assert all(str(installed / "venv") in w for w in where), where
    assert not any(str(REPO) in w for w in where)


def test_a_schema_dry_run_from_the_wheel(installed, netbox, netbox_url, lab_paths):
    cfg = installed / "settings.yaml"
    cfg.write_text(yaml.safe_dump({"netbox_url": netbox_url,
                                   "netbox_token_file": str(lab_paths.secrets / "netbox-token")}))
    out = run(installed / "venv" / "bin" / "bringup", "netbox", "apply", "--dry-run", "--config", cfg,
              cwd=installed)
    assert "would change" in out and "custom field" in out

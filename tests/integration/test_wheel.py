"""bringup installs as a wheel and works with no checkout around it: the data folders
(netbox/, images/, playbooks/, prefect.yaml) ship inside the package and are found
through bringup.resources. The lab is not in the wheel: its commands say so in one line,
and nothing else needs it (no default settings file of the lab's either)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"


def run(*argv, cwd=None, timeout=600, rc=0, env=None) -> str:
    r = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=env, check=False)
    assert r.returncode == rc, f"{argv}: rc {r.returncode}\n{(r.stdout + r.stderr)[-3000:]}"
    return r.stdout if rc == 0 else r.stdout + r.stderr


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


def test_the_wheel_holds_no_lab_and_its_commands_say_so(installed):
    wheel = next((installed / "dist").glob("bringup-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("lab/")], [n for n in names if n.startswith("lab/")][:5]
    assert any(n.startswith("bringup_cli/") for n in names) and any(n.startswith("flows/") for n in names)
    bringup = installed / "venv" / "bin" / "bringup"
    assert "up" in run(bringup, "lab", "--help", cwd=installed)      # listed, so the operator sees why
    out = run(bringup, "lab", "status", cwd=installed, rc=2)
    assert out.strip() == "error: the lab is not installed: run from a checkout"
    assert "Traceback" not in out


def test_without_config_the_wheel_asks_for_one(installed):
    env = {k: v for k, v in os.environ.items() if k not in ("BRINGUP_CONFIG", "BRINGUP_LAB_HOME")}
    out = run(installed / "venv" / "bin" / "bringup", "netbox", "apply", "--dry-run", cwd=installed, rc=2, env=env)
    assert "no settings file given" in out and "BRINGUP_CONFIG" in out and "Traceback" not in out


def test_a_schema_dry_run_from_the_wheel(installed, netbox, netbox_url, lab_paths):
    cfg = installed / "settings.yaml"
    cfg.write_text(yaml.safe_dump({"netbox_url": netbox_url,
                                   "netbox_token_file": str(lab_paths.secrets / "netbox-token")}))
    out = run(installed / "venv" / "bin" / "bringup", "netbox", "apply", "--dry-run", "--config", cfg,
              cwd=installed)
    assert "would change" in out and "custom field" in out

"""The lab's defaults are the lab's: its home and settings file live in ``lab.paths``,
the library reads only the file it is given or ``$BRINGUP_CONFIG``, and the command line
(in a checkout) is what makes the lab's file the default. Without the lab (a wheel),
``bringup lab ...`` says so in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import bringup_cli
from bringup import settings as settings_mod
from bringup.errors import ConfigError
from bringup_cli import app, common
from lab.paths import LabPaths, lab_home


def test_the_lab_home_is_the_labs(monkeypatch, tmp_path):
    monkeypatch.setenv("BRINGUP_LAB_HOME", str(tmp_path))
    assert lab_home() == tmp_path and LabPaths.default().config == tmp_path / "config.yaml"
    monkeypatch.delenv("BRINGUP_LAB_HOME")
    assert lab_home() in (Path("/var/lib/bringup-lab"), Path.home() / ".local/share/bringup-lab")
    assert not hasattr(settings_mod, "lab_home")


def test_the_library_has_no_default_settings_file(monkeypatch, tmp_path):
    monkeypatch.delenv("BRINGUP_CONFIG", raising=False)
    monkeypatch.setenv("BRINGUP_LAB_HOME", str(tmp_path))
    (tmp_path / "config.yaml").write_text("netbox_url: http://nb.invalid\nnetbox_token_file: /nonexistent\n")
    assert settings_mod.config_path() is None
    with pytest.raises(ConfigError, match="no settings file given") as err:
        settings_mod.load_settings()
    assert "BRINGUP_CONFIG" in str(err.value)
    monkeypatch.setenv("BRINGUP_CONFIG", str(tmp_path / "config.yaml"))
    assert settings_mod.load_settings().netbox_url == "http://nb.invalid"


def test_the_command_line_makes_the_labs_file_the_default(monkeypatch, tmp_path):
    monkeypatch.delenv("BRINGUP_CONFIG", raising=False)
    monkeypatch.setenv("BRINGUP_LAB_HOME", str(tmp_path))
    common.default_to_lab_settings()
    assert os.environ["BRINGUP_CONFIG"] == str(tmp_path / "config.yaml")


def test_an_operators_config_is_left_alone_and_a_wheel_has_no_default(monkeypatch, tmp_path):
    monkeypatch.setenv("BRINGUP_CONFIG", "/etc/site/bringup.yaml")
    common.default_to_lab_settings()
    assert os.environ["BRINGUP_CONFIG"] == "/etc/site/bringup.yaml"
    monkeypatch.delenv("BRINGUP_CONFIG")
    monkeypatch.setattr(common, "lab_installed", lambda: False)
    common.default_to_lab_settings()
    assert "BRINGUP_CONFIG" not in os.environ


def test_the_lab_is_installed_in_a_checkout():
    assert common.lab_installed()


def test_without_the_lab_its_commands_say_so_in_one_line(monkeypatch):
    monkeypatch.setattr(bringup_cli, "lab_installed", lambda: False)
    result = CliRunner().invoke(app, ["lab", "status"])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {bringup_cli.NO_LAB}"
    assert bringup_cli.NO_LAB == "the lab is not installed: run from a checkout"
    assert "up" in CliRunner().invoke(app, ["lab", "--help"]).output  # still listed

"""The install seed: subiquity's schema, what bringup needs of it, the host key in it,
and that its private key never shows in the redacted form. (Reading a seed back is the
lab's simulated installer: tests/unit/lab/test_seed_reader.py.)"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from bringup.provision import hostkeys
from bringup.provision import install_seed as seed
from bringup.provision.image import load_manifest
from bringup.resources import data_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "autoinstall"


@pytest.fixture(scope="module")
def manifest():
    return load_manifest("ubuntu-2404-cuda128")


@pytest.fixture(scope="module")
def key():
    return hostkeys.generate("root@gpu-r01-n01")


@pytest.fixture(scope="module")
def files(manifest, key):
    return seed.render(manifest, hostname="gpu-r01-n01", host_key=key, authorized_keys=["ssh-ed25519 AAAAops ops"])


def test_the_shipped_schema_is_subiquitys():
    shipped = json.loads(data_file("autoinstall-schema.json").read_text())
    assert shipped == json.loads((FIXTURES / "autoinstall-schema.json").read_text())
    assert shipped["required"] == ["version"] and "late-commands" in shipped["properties"]


def test_rendered_seed_passes_the_schema_and_carries_the_image(files, manifest, key):
    doc = yaml.safe_load(files["user-data"])
    assert seed.validate(doc) == []
    ai = doc["autoinstall"]
    prefs = {p["package"]: p["pin"] for p in ai["apt"]["preferences"]}
    assert prefs == {p: f"version {pin.version}" for p, pin in manifest.apt.pins.items()}
    for component in ("driver", "cuda", "nccl", "dcgm"):
        assert manifest.pins_of(component), component
        assert set(manifest.pins_of(component)) <= set(prefs)
    # nccl-tests is built from its tag; perftest and the agent's prerequisites are packages
    assert any("v2.14.1" in c for c in ai["late-commands"] if "clone" in c)
    assert {"perftest", "python3", "python3-pynvml", "stress-ng", "fio"} <= set(ai["packages"])
    cloud = ai["user-data"]
    assert cloud["ssh_keys"]["ed25519_public"] == key.public and cloud["ssh_deletekeys"] is True
    assert cloud["ssh_genkeytypes"] == []
    record = yaml.safe_load(cloud["write_files"][0]["content"])
    assert cloud["write_files"][0]["path"] == seed.IMAGE_RECORD
    assert record["image"] == manifest.name and record["versions"]["driver"] == "570.133.20"
    meta = yaml.safe_load(files["meta-data"])
    assert meta["local-hostname"] == "gpu-r01-n01"
    assert re.fullmatch(r"gpu-r01-n01-[0-9a-f]{12}", meta["instance-id"])  # a folder name for cloud-init


def test_a_new_key_is_a_new_instance(manifest, files):
    other = seed.render(manifest, hostname="gpu-r01-n01", host_key=hostkeys.generate("x"))
    assert yaml.safe_load(other["meta-data"])["instance-id"] != yaml.safe_load(files["meta-data"])["instance-id"]


@pytest.mark.parametrize(("drop", "message"), [
    (("version",), r"autoinstall: 'version' is a required property"),
    (("user-data", "ssh_keys"), r"autoinstall\.user-data\.ssh_keys\.ed25519_private: missing"),
    (("apt", "preferences"), r"autoinstall\.apt\.preferences: missing"),
    (("user-data", "write_files"), r"autoinstall\.user-data\.write_files: missing"),
])
def test_a_seed_missing_a_required_section_is_a_problem_naming_it(files, drop, message):
    doc = yaml.safe_load(files["user-data"])
    part = doc["autoinstall"]
    for k in drop[:-1]:
        part = part[k]
    del part[drop[-1]]
    assert any(re.fullmatch(message + ".*", p) for p in seed.validate(doc)), seed.validate(doc)


def test_schema_types_are_checked_with_their_path(files):
    doc = yaml.safe_load(files["user-data"])
    bad = copy.deepcopy(doc)
    bad["autoinstall"]["version"] = 2
    bad["autoinstall"]["keyboard"] = {"layout": "us", "colour": "red"}
    problems = seed.validate(bad)
    assert "autoinstall.version: 2 is greater than the maximum of 1" in problems
    assert any(p.startswith("autoinstall.keyboard: Additional properties") for p in problems)
    assert seed.validate({"version": 1}) == [
        "autoinstall: missing; the document is not an autoinstall seed (a mapping under 'autoinstall')"]


def test_render_refuses_an_invalid_document(manifest, key, monkeypatch):
    real = seed.autoinstall_user_data

    def without_version(*a, **kw):
        doc = real(*a, **kw)
        del doc["autoinstall"]["version"]
        return doc
    monkeypatch.setattr(seed, "autoinstall_user_data", without_version)
    with pytest.raises(seed.SeedInvalid, match=r"(?s)the seed of n1 is invalid:.*'version' is a required property"):
        seed.render(manifest, hostname="n1", host_key=key)


def test_redacted_seed_holds_no_private_key_and_is_still_yaml(files, key):
    red = seed.redact(files["user-data"])
    body = "".join(key.private.splitlines()[1:-1])
    assert "PRIVATE KEY" not in red and body[:40] not in red.replace("\n", "")
    doc = yaml.safe_load(red)
    assert doc["autoinstall"]["user-data"]["ssh_keys"]["ed25519_private"] == seed.REDACTED
    assert doc["autoinstall"]["user-data"]["ssh_keys"]["ed25519_public"] == key.public

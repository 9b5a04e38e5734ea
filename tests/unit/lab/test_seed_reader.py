"""The lab's simulated installer reads back what bringup renders (the round trip
render -> parse), and refuses a seed subiquity would refuse, naming the path."""

from __future__ import annotations

import pytest
import yaml

from bringup.provision import hostkeys
from bringup.provision import install_seed as seed
from bringup.provision.image import load_manifest
from bringup.provision.install_seed import SeedInvalid
from lab.nodes.seed_reader import parse_seed


@pytest.fixture(scope="module")
def manifest():
    return load_manifest("ubuntu-2404-cuda128")


@pytest.fixture(scope="module")
def key():
    return hostkeys.generate("root@gpu-r01-n01")


@pytest.fixture(scope="module")
def files(manifest, key):
    return seed.render(manifest, hostname="gpu-r01-n01", host_key=key, authorized_keys=["ssh-ed25519 AAAAops ops"])


def test_parse_seed_reads_back_what_was_rendered(files, manifest, key):
    s = parse_seed(files["user-data"])
    assert s.image == manifest.name and s.hostname == "gpu-r01-n01"
    assert s.pins == {p: pin.version for p, pin in manifest.apt.pins.items()}
    assert s.host_public == key.public and s.host_private == key.private
    assert s.authorized_keys == ["ssh-ed25519 AAAAops ops"]
    assert key.private not in repr(s)


@pytest.mark.parametrize(("drop", "message"), [
    (("version",), r"autoinstall: 'version' is a required property"),
    (("user-data", "ssh_keys"), r"autoinstall\.user-data\.ssh_keys\.ed25519_private: missing"),
    (("apt", "preferences"), r"autoinstall\.apt\.preferences: missing"),
    (("user-data", "write_files"), r"autoinstall\.user-data\.write_files: missing"),
])
def test_a_seed_missing_a_required_section_is_refused_naming_it(files, drop, message):
    doc = yaml.safe_load(files["user-data"])
    part = doc["autoinstall"]
    for k in drop[:-1]:
        part = part[k]
    del part[drop[-1]]
    text = "#cloud-config\n" + yaml.safe_dump(doc)
    with pytest.raises(SeedInvalid, match=message):
        parse_seed(text, "seed.iso!user-data")


def test_not_cloud_config_or_not_yaml_is_refused(files):
    with pytest.raises(SeedInvalid, match="does not start with '#cloud-config'"):
        parse_seed(files["user-data"].split("\n", 1)[1])
    with pytest.raises(SeedInvalid, match="line 3 is not YAML"):
        parse_seed("#cloud-config\nautoinstall: [\n")  # the parser notices at the end


def test_a_public_key_that_is_not_the_private_keys_is_refused(files):
    other = hostkeys.generate("other")
    doc = yaml.safe_load(files["user-data"])
    doc["autoinstall"]["user-data"]["ssh_keys"]["ed25519_public"] = other.public
    with pytest.raises(SeedInvalid, match="ssh_keys: the public key is not the private key's"):
        parse_seed("#cloud-config\n" + yaml.safe_dump(doc))

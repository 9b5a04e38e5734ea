"""Image manifests: validation names file:line and field; the autoinstall render holds the pins."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bringup.errors import ConfigError
from bringup.provision.image import IMAGES_DIR, load_manifest, manifest_for_url, pin_vars, render_autoinstall

GOOD = (IMAGES_DIR / "ubuntu-2404-cuda128.yaml").read_text()


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "img.yaml"
    p.write_text(text)
    return p


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


def test_repo_manifest_loads_with_exact_versions():
    m = load_manifest("ubuntu-2404-cuda128")
    assert m.packages.driver == "570.133.20"
    assert m.packages.nccl == "2.26.2-1+cuda12.8"
    assert m.packages.nccl_upstream == "2.26.2"
    assert m.pins_of("nccl") == {"libnccl2": "2.26.2-1+cuda12.8", "libnccl-dev": "2.26.2-1+cuda12.8"}
    assert m.pins_of("dcgm")["datacenter-gpu-manager-4-cuda12"] == "1:4.2.3-1"
    # every SKU names an image that exists
    from bringup.sku import load_skus
    for sku in load_skus().values():
        assert load_manifest(sku.image).name == sku.image


def test_bad_driver_version_names_file_line_and_field(tmp_path):
    text = GOOD.replace("driver: 570.133.20", "driver: 570.133.2x")
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_manifest(p)
    msg = str(exc.value)
    assert f"{p}:{line_of(text, 'driver: 570.133.2x')} packages.driver" in msg
    assert "'570.133.2x' is not a version like 570.133.20" in msg


def test_unquoted_version_read_as_number_is_refused(tmp_path):
    # YAML turns 570.133 into a float; silently keeping it would lose digits (12.10 -> 12.1)
    text = GOOD.replace("driver: 570.133.20", "driver: 570.133")
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_manifest(p)
    assert f"{p}:{line_of(text, 'driver: 570.133')} packages.driver" in str(exc.value)
    assert "read as a number; write versions in quotes" in str(exc.value)


def test_bad_nccl_apt_version(tmp_path):
    text = GOOD.replace("  nccl: 2.26.2-1+cuda12.8", "  nccl: 2.26.2+cuda12.8")
    p = write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"packages\.nccl: .*'2\.26\.2\+cuda12\.8' is not a version"):
        load_manifest(p)


def test_missing_field_points_at_parent_line(tmp_path):
    text = GOOD.replace("  sha256: d6dab0c3a657988501b4bd76f1297c053df710e06e0c3aece60dead24f270b4d\n", "")
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_manifest(p)
    assert f"{p}:{line_of(text, 'iso:')} iso.sha256: Field required" in str(exc.value)


def test_bad_sha256(tmp_path):
    text = GOOD.replace("d6dab0c3a657988501b4bd76f1297c053df710e06e0c3aece60dead24f270b4d", "d6dab0c3")
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_manifest(p)
    assert f"{p}:{line_of(text, 'sha256: d6dab0c3')} iso.sha256" in str(exc.value)
    assert "not a sha256" in str(exc.value)


def test_apt_pin_must_carry_the_component_version(tmp_path):
    text = GOOD.replace("libnccl2: {component: nccl, version: 2.26.2-1+cuda12.8}",
                        "libnccl2: {component: nccl, version: 2.21.5-1+cuda12.8}")
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_manifest(p)
    msg = str(exc.value)
    assert f"{p}:{line_of(text, 'libnccl2: {')} apt.pins.libnccl2.version" in msg
    assert "2.21.5-1+cuda12.8 does not carry nccl 2.26.2-1+cuda12.8" in msg


def test_nccl_built_for_another_cuda(tmp_path):
    text = GOOD.replace('cuda: "12.8"', 'cuda: "12.9"')
    with pytest.raises(ConfigError, match="built for CUDA 12.8 but cuda is 12.9"):
        load_manifest(write(tmp_path, text))


def test_unknown_field_and_unknown_image(tmp_path):
    with pytest.raises(ConfigError, match=r"packages\.cudnn: Extra inputs"):
        load_manifest(write(tmp_path, GOOD.replace("  nccl_tests: 2.14.1", "  nccl_tests: 2.14.1\n  cudnn: 9.1.0")))
    with pytest.raises(ConfigError, match="known images: ubuntu-2404-cuda128"):
        load_manifest("no-such-image")


def test_render_user_data_parses_and_holds_every_pin():
    m = load_manifest("ubuntu-2404-cuda128")
    files = render_autoinstall(m, hostname="gpu-r01-n01", authorized_keys=["ssh-ed25519 AAAAtest ops"])
    text = files["user-data"]
    assert text.startswith("#cloud-config\n")
    doc = yaml.safe_load(text)["autoinstall"]
    assert doc["version"] == 1
    assert doc["ssh"]["authorized-keys"] == ["ssh-ed25519 AAAAtest ops"]
    assert doc["ssh"]["allow-pw"] is False
    assert doc["kernel"]["package"] == "linux-image-6.8.0-60-generic"
    prefs = {p["package"]: p for p in doc["apt"]["preferences"]}
    assert set(prefs) == set(m.apt.pins)
    for pkg, pin in m.apt.pins.items():
        assert prefs[pkg]["pin"] == f"version {pin.version}"
        assert prefs[pkg]["pin-priority"] >= 1000  # >= 1000 keeps (or downgrades to) the version
    assert doc["apt"]["sources"]["cuda.list"]["keyid"] == "EB693B3035CD5710E231E123A4B469963BF863CC"
    late = doc["late-commands"]
    install = next(c for c in late if "install" in c and "apt-get" in c)
    assert "libnccl2=2.26.2-1+cuda12.8" in install
    assert "nvidia-driver-570-server=570.133.20-0ubuntu0.24.04.1" in install
    assert "datacenter-gpu-manager-4-cuda12=1:4.2.3-1" in install
    hold = next(c for c in late if "apt-mark" in c)
    assert hold[hold.index("hold") + 1:] == ["linux-image-6.8.0-60-generic", *sorted(m.apt.pins)]
    clone = next(c for c in late if "clone" in c)
    assert "v2.14.1" in clone
    meta = yaml.safe_load(files["meta-data"])
    assert meta["local-hostname"] == "gpu-r01-n01"


def test_render_changes_with_the_manifest(tmp_path):
    text = (GOOD.replace("2.26.2-1+cuda12.8", "2.27.3-1+cuda12.8"))
    m = load_manifest(write(tmp_path, text))
    doc = yaml.safe_load(render_autoinstall(m)["user-data"])["autoinstall"]
    prefs = {p["package"]: p["pin"] for p in doc["apt"]["preferences"]}
    assert prefs["libnccl2"] == "version 2.27.3-1+cuda12.8"


def test_pin_vars_and_lookup_by_url():
    m = load_manifest("ubuntu-2404-cuda128")
    v = pin_vars(m)
    assert v["expected_driver"] == "570.133.20"
    assert v["expected_packages"]["libnccl2"] == {"component": "nccl", "version": "2.26.2-1+cuda12.8"}
    assert manifest_for_url(m.iso.url).name == m.name
    with pytest.raises(ConfigError, match="no image manifest"):
        manifest_for_url("http://elsewhere.invalid/x.iso")


def test_cli_render_writes_the_seed(tmp_path):
    from bringup_cli import app
    res = CliRunner().invoke(app, ["image", "render", "ubuntu-2404-cuda128", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load((tmp_path / "user-data").read_text())
    assert doc["autoinstall"]["version"] == 1
    assert (tmp_path / "meta-data").exists()


def test_cli_seed_shows_a_validated_seed_without_the_private_key():
    from bringup_cli import app
    res = CliRunner().invoke(app, ["image", "seed", "ubuntu-2404-cuda128", "--node", "gpu-r01-n01"])
    assert res.exit_code == 0, res.output
    assert "PRIVATE KEY" not in res.output and "<redacted" in res.output
    doc = yaml.safe_load(res.output)
    assert doc["autoinstall"]["user-data"]["hostname"] == "gpu-r01-n01"
    assert "# instance-id: gpu-r01-n01-" in res.output

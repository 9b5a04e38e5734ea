"""A pool's sharing mode (bringup.admission.sharing): the MIG catalogue against NVIDIA's
recorded configs and placements, parsing a pool, and the renderers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from bringup.admission import sharing as sh
from bringup.admission.pool import Pool
from bringup.errors import ConfigError, ParseError
from bringup.sku import load_skus

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "sharing"
SKUS = load_skus()
H100, H200 = SKUS["hgx-h100-80gb"], SKUS["hgx-h200-141gb"]
CAT = sh.load_catalogue()


def upstream_geometries(pci_id: str) -> dict[str, dict[str, int]]:
    """mig-parted's default config, the all-GPU geometries that apply to one PCI device id."""
    doc = yaml.safe_load((FIX / "mig-parted-config-default.yaml").read_text())
    assert doc["version"] == "v1"
    out = {}
    for name, entries in doc["mig-configs"].items():
        for entry in entries:
            filt = entry.get("device-filter")
            filt = [filt] if isinstance(filt, str) else filt
            if entry["devices"] == "all" and entry["mig-enabled"] and (filt is None or pci_id in filt):
                out[name] = dict(entry.get("mig-devices") or {})
    return out


# --- the catalogue against NVIDIA's records ------------------------------------------------
@pytest.mark.parametrize("model", sorted(CAT.gpus))
def test_every_upstream_single_profile_geometry_agrees_with_the_catalogue(model):
    gpu = CAT.gpus[model]
    upstream = upstream_geometries(gpu.pci_device_id)
    seen = 0
    for name, devices in upstream.items():
        if len(devices) != 1 or "+" in next(iter(devices)):
            continue
        (profile, count), = devices.items()
        if profile not in gpu.profiles:   # a profile of another GPU (no device filter upstream)
            continue
        seen += 1
        assert gpu.profiles[profile].max == count, name
        assert gpu.geometries[name] == {profile: count}
    assert seen == len(gpu.profiles)   # every profile in the catalogue is confirmed upstream


@pytest.mark.parametrize("model", sorted(CAT.gpus))
def test_balanced_geometry_is_upstreams(model):
    gpu = CAT.gpus[model]
    assert gpu.geometries["all-balanced"] == upstream_geometries(gpu.pci_device_id)["all-balanced"]


def test_placements_are_the_mig_user_guides():
    listed = {}
    for line in (FIX / "mig-user-guide-lgipp.txt").read_text().splitlines():
        m = re.match(r"GPU\s+0 Profile ID\s+(\d+) Placements?\s*: \{([\d,]+)\}:(\d+)", line)
        assert m, line
        listed[int(m[1])] = ([int(s) for s in m[2].split(",")], int(m[3]))
    for model, gpu in CAT.gpus.items():
        for name, p in gpu.profiles.items():
            assert (p.starts, p.size) == listed[p.id], (model, name)


def test_catalogue_rejects_a_geometry_that_does_not_fit(tmp_path):
    doc = yaml.safe_load((Path(sh.__file__).parents[1] / "data" / "mig_profiles.yaml").read_text())
    doc["gpus"]["NVIDIA H100 80GB HBM3"]["geometries"]["too-big"] = {"3g.40gb": 2, "1g.10gb": 1}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="too-big"):
        sh.load_catalogue(tmp_path / "m.yaml")


# --- fitting ---------------------------------------------------------------------------------
GPU_H100 = CAT.gpus["NVIDIA H100 80GB HBM3"]


@pytest.mark.parametrize("geo", [
    {"4g.40gb": 1, "3g.40gb": 1},            # the two halves of the memory slices
    {"2g.20gb": 3, "1g.10gb": 1},
    {"3g.40gb": 1, "2g.20gb": 2},
    {"1g.10gb": 6, "1g.20gb": 1},            # the 1g.20gb takes slices 6-7, out of a 1g.10gb's reach
])
def test_geometries_that_fit(geo):
    assert sh.fit_problem(GPU_H100, geo) is None


@pytest.mark.parametrize("geo, words", [
    ({"3g.40gb": 3}, "at most 2 x 3g.40gb fit one GPU"),
    ({"3g.40gb": 2, "1g.10gb": 1}, "need 7 compute and 9 memory slices (one GPU has 7 and 8): more than one GPU has"),
    ({"4g.40gb": 1, "2g.20gb": 2}, "need 8 compute"),
    ({"1g.10gb": 7, "1g.20gb": 1}, "need 8 compute"),
])
def test_geometries_that_do_not_fit_say_why(geo, words):
    assert words in sh.fit_problem(GPU_H100, geo)


# --- parsing a pool --------------------------------------------------------------------------
def test_todays_pools_parse_unchanged_as_exclusive():
    pool = Pool(**{"workload": "training", "sharing": "exclusive", "fabric": "ib-ndr400"})
    assert (pool.mig, pool.time_slicing) == (None, None)
    assert sh.sharing_mode(pool, H100) == sh.Exclusive()
    assert sh.sharing_mode(Pool(), H100) == sh.Exclusive()


def test_named_geometry_per_sku():
    pool = Pool(sharing="mig", mig={"geometry": "all-balanced", "strategy": "mixed"})
    assert sh.sharing_mode(pool, H100).profiles == (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1))
    assert sh.sharing_mode(pool, H200).profiles == (("1g.18gb", 2), ("2g.35gb", 1), ("3g.71gb", 1))


def test_explicit_profiles_and_single_strategy():
    mode = sh.sharing_mode(Pool(sharing="mig", mig={"profiles": {"3g.71gb": 2}, "strategy": "single"}), H200)
    assert mode == sh.Mig(geometry="custom", profiles=(("3g.71gb", 2),), strategy="single")


def test_time_slicing_defaults():
    mode = sh.sharing_mode(Pool(sharing="time-slicing", time_slicing={"replicas": 4}), H100)
    assert mode == sh.TimeSlicing(replicas=4, rename_by_default=False, fail_requests_greater_than_one=True)


@pytest.mark.parametrize("pool, path, words", [
    ({"sharing": "mig", "mig": {"profiles": {"3g.40gb": 3}, "strategy": "mixed"}}, "bringup_pool.mig.profiles",
     "3 x 3g.40gb need 9 compute and 12 memory slices (one GPU has 7 and 8), but at most 2 x 3g.40gb fit"),
    ({"sharing": "mig", "mig": {"geometry": "all-1g.18gb", "strategy": "mixed"}}, "bringup_pool.mig.geometry",
     "'all-1g.18gb' is not a geometry of the NVIDIA H100 80GB HBM3"),
    ({"sharing": "mig", "mig": {"profiles": {"1g.5gb": 7}, "strategy": "mixed"}}, "bringup_pool.mig.profiles.1g.5gb",
     "not a MIG profile"),
    ({"sharing": "mig", "mig": {"profiles": {"1g.10gb": 0}, "strategy": "mixed"}}, "bringup_pool.mig.profiles.1g.10gb",
     "not a count"),
    ({"sharing": "mig", "mig": {"geometry": "all-balanced", "strategy": "single"}}, "bringup_pool.mig.strategy",
     "single needs one profile"),
    ({"sharing": "mig", "mig": {"geometry": "all-balanced"}}, "bringup_pool.mig.strategy", "not a MIG strategy"),
    ({"sharing": "mig", "mig": {"geometry": "all-balanced", "profiles": {"1g.10gb": 1}, "strategy": "mixed"}},
     "bringup_pool.mig", "not both"),
    ({"sharing": "mig", "mig": {"geometry": "all-balanced", "strategy": "mixed", "extra": 1}}, "bringup_pool.mig.extra",
     "unknown key"),
    ({"sharing": "mig"}, "bringup_pool.mig", "missing"),
    ({"sharing": "time-slicing", "time_slicing": {"replicas": 1}}, "bringup_pool.time_slicing.replicas", ">= 2"),
    ({"sharing": "time-slicing", "time_slicing": {"replicas": True}}, "bringup_pool.time_slicing.replicas", ">= 2"),
    ({"sharing": "time-slicing", "time_slicing": {"replicas": 2, "rename_by_default": "yes"}},
     "bringup_pool.time_slicing.rename_by_default", "not true or false"),
    ({"sharing": "exclusive", "time_slicing": {"replicas": 2}}, "bringup_pool.time_slicing", "sharing is 'exclusive'"),
    ({"sharing": "mps"}, "bringup_pool.sharing", "not a sharing mode"),
])
def test_bad_pools_name_the_field(pool, path, words):
    with pytest.raises(ParseError) as exc:
        sh.sharing_mode(Pool(**pool), H100, source="pool infer-h100")
    assert exc.value.path == path
    assert words in str(exc.value)
    assert str(exc.value).startswith("pool infer-h100 " + path)


def test_a_gpu_without_mig_profiles_is_named():
    sku = H100.model_copy(update={"gpu": H100.gpu.model_copy(update={"model": "NVIDIA L40S"})})
    with pytest.raises(ParseError, match="'NVIDIA L40S' has no MIG profiles"):
        sh.sharing_mode(Pool(sharing="mig", mig={"geometry": "all-balanced", "strategy": "mixed"}), sku)


# --- renderers -------------------------------------------------------------------------------
def test_mig_parted_config_is_upstreams_for_a_named_geometry():
    for sku in (H100, H200):
        gpu = CAT.gpus[sku.gpu.model]
        upstream = upstream_geometries(gpu.pci_device_id)
        for name in gpu.geometries:
            mode = sh.sharing_mode(Pool(sharing="mig", mig={"geometry": name, "strategy": "mixed"}), sku)
            doc = sh.render_mig_parted(mode)
            assert doc["version"] == "v1"
            (entry,) = doc["mig-configs"][name]
            assert entry == {"devices": "all", "mig-enabled": True, "mig-devices": upstream[name]}
            assert yaml.safe_load(yaml.safe_dump(doc)) == doc


def test_device_plugin_config_matches_the_readme_examples():
    cases = yaml.safe_load((FIX / "device-plugin-time-slicing.yaml").read_text())
    for case in cases:
        ts = case["config"]["sharing"]["timeSlicing"]
        mode = sh.TimeSlicing(replicas=ts["resources"][0]["replicas"],
                              rename_by_default=ts.get("renameByDefault", False))
        doc = sh.render_device_plugin_sharing(mode)
        assert doc["version"] == case["config"]["version"]
        got = doc["sharing"]["timeSlicing"]
        assert got["resources"] == ts["resources"]
        assert got["renameByDefault"] == ts.get("renameByDefault", False)
        assert got["failRequestsGreaterThanOne"] is True

"""Where the install seed goes among a BMC's virtual media (DMTF mockup documents)."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.redfish.manager import pick_seed_medium
from bringup.redfish.models import VirtualMediaDoc, parse

DIR = Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "dmtf-virtualmedia"


def media(*names):
    out = []
    for n in names:
        doc = json.loads((DIR / f"{n}.json").read_text())
        out.append((doc["@odata.id"], parse(VirtualMediaDoc, doc, doc["@odata.id"])))
    return out


def test_a_removable_medium_beside_the_cd_takes_the_seed():
    uri, _ = pick_seed_medium(media("tower-CD1", "tower-Floppy1"))
    assert uri.endswith("/VirtualMedia/Floppy1")


def test_two_cd_drives_the_second_takes_the_seed():
    uri, _ = pick_seed_medium(media("rackmount1-CD1", "rackmount1-CD2"))
    assert uri.endswith("/VirtualMedia/CD2")


def test_one_cd_only_has_no_place_for_a_seed():
    assert pick_seed_medium(media("rackmount1-CD1")) is None

"""The agent's ``sharing`` command, its pure parts: the geometry argument and the
placement of a geometry's instances on NVML's possible placements (the MIG user guide's
``nvidia-smi mig -lgipp`` for an H100, tests/fixtures/sharing/mig-user-guide-lgipp.txt).
NVML itself is exercised through the real pynvml in tests/integration/burnin/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from burnin.__main__ import main
from burnin.sharing import parse_geometry, plan_placements

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "sharing" / "mig-user-guide-lgipp.txt"
#: the H100's profile ids, as the same listing names them
IDS = {"1g.10gb": 19, "1g.20gb": 15, "2g.20gb": 14, "3g.40gb": 9, "4g.40gb": 5, "7g.80gb": 0}


def placements() -> dict[int, list[tuple[int, int]]]:
    out = {}
    for line in FIX.read_text().splitlines():
        m = re.match(r"GPU\s+0 Profile ID\s+(\d+) Placements?\s*: \{([\d,]+)\}:(\d+)", line)
        if m:
            out[int(m.group(1))] = [(int(s), int(m.group(3))) for s in m.group(2).split(",")]
    return out


def plan(geometry: dict[str, int]):
    lgipp = placements()
    return plan_placements([(n, lgipp[IDS[n]]) for n in geometry for _ in range(geometry[n])])


def test_the_balanced_geometry_fits_only_with_its_3g_at_the_top():
    got = plan({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})
    assert got is not None
    assert ("3g.40gb", 4, 4) in got                 # at 0 it would leave no room for the 1g pair
    used = sorted(s for _, start, size in got for s in range(start, start + size))
    assert used == sorted(set(used))                # nothing overlaps


def test_what_fits_and_what_does_not():
    assert plan({"1g.10gb": 7}) is not None
    assert plan({"4g.40gb": 1, "3g.40gb": 1}) == [("4g.40gb", 0, 4), ("3g.40gb", 4, 4)]
    assert plan({"7g.80gb": 1}) == [("7g.80gb", 0, 8)]
    assert plan({"1g.10gb": 8}) is None             # seven starts for a 1g
    assert plan({"4g.40gb": 2}) is None             # a 4g starts only at 0
    assert plan({"7g.80gb": 1, "1g.10gb": 1}) is None


@pytest.mark.parametrize("text", ['{"1g.10gb": 0}', '{"1g.10gb": true}', "[]", "{}", '{"1g.10gb": "2"}'])
def test_a_bad_geometry_is_refused_with_what_to_write(text):
    with pytest.raises(ValueError, match="profile: count >= 1"):
        parse_geometry(text)


def test_the_command_refuses_a_bad_geometry_before_touching_nvml(capsys):
    assert main(["sharing", "--mig", "not json"]) == 2
    assert "burnin sharing:" in capsys.readouterr().err
    assert parse_geometry('{"3g.40gb": 2}') == {"3g.40gb": 2}

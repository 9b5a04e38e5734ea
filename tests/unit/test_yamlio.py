"""bringup's one YAML reader (bringup.yamlio): data with the line of every path, parsed
once by libyaml; a key given twice, bad syntax or two documents are a ConfigError naming
the file and line."""

from __future__ import annotations

import pytest
import yaml

from bringup.errors import ConfigError
from bringup.yamlio import _UniqueKeyLoader, load_file, load_text

DOC = """\
site: lab
pools:
  train:
    sharing: exclusive
nodes:
  - name: n01
    sku: hgx-h100-80gb
  - name: n02
    faults: [{kind: xid, value: 79}]
"""


def test_the_data_and_the_line_of_every_path():
    doc = load_text(DOC, "fleet.yaml")
    assert doc.data == {"site": "lab", "pools": {"train": {"sharing": "exclusive"}},
                        "nodes": [{"name": "n01", "sku": "hgx-h100-80gb"},
                                  {"name": "n02", "faults": [{"kind": "xid", "value": 79}]}]}
    assert doc.lines[("site",)] == 1
    assert doc.lines[("pools", "train", "sharing")] == 4
    assert doc.lines[("nodes", 1, "faults", 0, "value")] == 9
    assert doc.where(("nodes", 0, "missing")) == "fleet.yaml:6"     # its parent's line


def test_parsed_by_libyaml_where_pyyaml_has_it():
    # the pure-Python parser costs a flow step 15 times the CPU for the same data
    assert yaml.__with_libyaml__, "PyYAML without libyaml: install its wheel"
    assert issubclass(_UniqueKeyLoader, yaml.CSafeLoader)


def test_a_key_given_twice_names_both_lines():
    with pytest.raises(ConfigError, match=r"x\.yaml: line 3: key 'a' appears twice \(first on line 1\)"):
        load_text("a: 1\nb: 2\na: 3\n", "x.yaml")


def test_bad_syntax_names_its_line():
    with pytest.raises(ConfigError, match=r"x\.yaml:2: not valid YAML: mapping values are not allowed"):
        load_text("a: 1\n  b: 2\n", "x.yaml")


def test_two_documents_in_one_file_are_refused():
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_text("a: 1\n---\nb: 2\n", "x.yaml")


def test_an_empty_file_is_none_and_python_tags_are_not_loaded(tmp_path):
    p = tmp_path / "empty.yaml"
    p.write_text("# nothing here\n")
    assert load_file(p).data is None
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_text("a: !!python/object/apply:os.system ['true']\n", "x.yaml")


def test_an_unreadable_file_says_which(tmp_path):
    with pytest.raises(ConfigError, match="cannot read .*nope.yaml"):
        load_file(tmp_path / "nope.yaml")

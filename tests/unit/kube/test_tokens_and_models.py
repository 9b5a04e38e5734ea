"""Bootstrap token helpers, the CA pin, and parsing of Node/Pod JSON."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from bringup.errors import ConfigError, ParseError
from bringup.kube import JoinCommand, ca_cert_hash, generate_token, split_token, token_secret
from bringup.kube.models import parse_node, parse_pod
from lab.kubeapi.pki import ensure_pki

REPO = Path(__file__).resolve().parents[3]


def test_generated_tokens_have_the_bootstrap_format_and_differ():
    tokens = {generate_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", t) for t in tokens)


def test_token_secret_manifest():
    now = dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.UTC)
    s = token_secret("abcdef.0123456789abcdef", dt.timedelta(minutes=90), now=now)
    assert s["metadata"] == {"name": "bootstrap-token-abcdef", "namespace": "kube-system"}
    assert s["type"] == "bootstrap.kubernetes.io/token"
    assert s["stringData"]["expiration"] == "2026-12-01T04:30:00Z"
    assert s["stringData"]["token-secret"] == "0123456789abcdef"
    assert s["stringData"]["usage-bootstrap-authentication"] == "true"
    assert s["stringData"]["usage-bootstrap-signing"] == "true"


@pytest.mark.parametrize("bad", ["abcdef0123456789abcdef", "ABCDEF.0123456789abcdef", "abcde.0123456789abcdefg"])
def test_malformed_tokens_are_refused_without_echo(bad):
    with pytest.raises(ConfigError) as err:
        split_token(bad)
    assert bad not in str(err.value)


def test_zero_ttl_refused():
    with pytest.raises(ConfigError):
        token_secret(generate_token(), dt.timedelta(0))




@pytest.fixture(scope="module")
def ca_pem(tmp_path_factory) -> bytes:
    return ensure_pki(tmp_path_factory.mktemp("pki"), ["127.0.0.1"]).ca_cert.read_bytes()


def test_ca_hash_matches_the_kubeadm_stand_in(ca_pem):
    # two independent implementations: cryptography's SPKI vs the stand-in's DER walk
    ns: dict = {"__name__": "kubeadm_standin", "__file__": str(REPO / "lab/kubeapi/bin/kubeadm")}
    exec(compile((REPO / "lab/kubeapi/bin/kubeadm").read_text(), "kubeadm", "exec"), ns)  # noqa: S102
    assert ca_cert_hash(ca_pem) == "sha256:" + ns["spki_sha256"](ns["pem_to_der"](ca_pem.decode()))




def test_ca_hash_of_garbage_is_a_config_error():
    with pytest.raises(ConfigError):
        ca_cert_hash(b"not a certificate")


def test_join_command_hides_the_token():
    j = JoinCommand(endpoint="10.0.0.1:6443", token="abcdef.0123456789abcdef", ca_cert_hash="sha256:" + "0" * 64)
    assert "0123456789abcdef" not in repr(j) and "0123456789abcdef" not in str(j)
    assert j.argv("n1") == ["kubeadm", "join", "10.0.0.1:6443", "--token", "abcdef.0123456789abcdef",
                            "--discovery-token-ca-cert-hash", "sha256:" + "0" * 64, "--node-name", "n1"]


def test_parse_node():
    st = parse_node({"metadata": {"name": "n1", "resourceVersion": "7", "labels": {"a": "b"}},
                     "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
                     "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}],
                                "addresses": [{"type": "InternalIP", "address": "10.1.1.1"}]}})
    assert st.exists and not st.ready and st.ready_reason == "KubeletNotReady"
    assert st.unschedulable and st.has_taint("k") and st.addresses == {"InternalIP": "10.1.1.1"}


def test_parse_node_names_the_bad_path():
    with pytest.raises(ParseError) as err:
        parse_node({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k"}]}})
    assert "$.spec.taints[0].effect" in str(err.value)
    with pytest.raises(ParseError, match=r"\$\.metadata"):
        parse_node({"spec": {}})


def test_parse_pod_owner_and_mirror():
    p = parse_pod({"metadata": {"name": "p", "namespace": "ns", "uid": "u",
                                "annotations": {"kubernetes.io/config.mirror": "x"},
                                "ownerReferences": [{"kind": "Node", "controller": True}]},
                   "status": {"phase": "Running"}})
    assert (str(p), p.owner_kind, p.mirror, p.phase) == ("ns/p", "Node", True, "Running")


"""The ``discover`` step raises what stopped the read as it is: its class decides.

Before, discovery carried the error as a string and the step raised a retryable
``RedfishTimeoutError`` for anything from the BMC, so a TLS error of ours (a wrong CA
bundle) was retried as a timeout on every round. The real adapter runs here down to the
DMTF library's HTTP call, which is made to fail: no socket.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import requests
from redfish.rest.v1 import RestClientBase, RetriesExhaustedError

from bringup import errors
from bringup.discovery.crawl import discover_one
from bringup.discovery.discover_step import discover
from bringup.discovery.verify import ExpectedNode
from bringup.netbox.adapter import NodeRecord
from bringup.redfish import Credentials
from bringup.sku import load_skus

SKU = load_skus()["hgx-h100-80gb"]


def record() -> NodeRecord:
    return NodeRecord(id=1, name="n1", site="t", rack="r1", status="planned", stage="planned", sku=SKU,
                      pool={"name": "p"}, macs={}, bmc_address="10.0.0.5", address="10.0.1.5", serial="",
                      custom_fields={}, url="", tags=[])


def context() -> SimpleNamespace:
    settings = SimpleNamespace(bmc_port=443, bmc_ca_bundle=None, bmc_insecure=False)
    return SimpleNamespace(settings=settings, credentials=lambda address: Credentials("admin", "pw"))


@pytest.fixture
def http_fails(monkeypatch):
    """Every request of the DMTF client ends in ``cause`` (as its retries would end)."""
    def fail_with(cause: Exception) -> None:
        def get(self, path, **kw):
            err = RetriesExhaustedError()
            err.__cause__ = cause
            raise err
        monkeypatch.setattr(RestClientBase, "get", get)
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    return fail_with


def test_a_tls_error_is_ours_and_never_retried_as_a_timeout(http_fails):
    http_fails(requests.exceptions.SSLError("certificate verify failed: unable to get local issuer certificate"))
    with pytest.raises(errors.RedfishTLSError) as err:
        discover(context(), record(), {})
    assert not err.value.transient and err.value.controller_fault
    assert not isinstance(err.value, errors.RedfishTimeoutError)
    assert "bmc_ca_bundle" in str(err.value)


def test_discovery_keeps_the_exception_itself_out_of_the_document(http_fails):
    http_fails(requests.exceptions.SSLError("certificate verify failed"))
    d = discover_one(ExpectedNode(name="n1", sku=SKU, bmc_address="10.0.0.5"),
                     lambda address: Credentials("admin", "pw"), retries=2)
    assert isinstance(d.failure, errors.RedfishTLSError) and d.error_kind == "tls" and not d.ok
    assert "failure" not in d.to_dict() and d.to_dict()["error_kind"] == "tls"
    assert [f.code for f in d.findings] == ["bmc_tls"]


def test_a_bmc_that_does_not_answer_is_still_retried(http_fails):
    http_fails(requests.exceptions.ConnectTimeout("timed out"))
    with pytest.raises(errors.RedfishTimeoutError) as err:
        discover(context(), record(), {})
    assert err.value.transient and "10.0.0.5" in str(err.value)


def test_a_refused_login_names_our_credentials_file(monkeypatch):
    def post(self, path, **kw):
        return SimpleNamespace(status=401, read=b"", getheaders=list)
    monkeypatch.setattr(RestClientBase, "get", lambda self, path, **kw: SimpleNamespace(
        status=200, read=b'{"Systems": {"@odata.id": "/redfish/v1/Systems"}}', getheaders=list))
    monkeypatch.setattr(RestClientBase, "post", post)
    with pytest.raises(errors.RedfishAuthError, match="bmc_credentials_file") as err:
        discover(context(), record(), {})
    assert isinstance(err.value.__cause__, errors.RedfishAuthError) and "HTTP 401" in str(err.value)

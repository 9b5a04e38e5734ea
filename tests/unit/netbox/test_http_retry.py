"""What an HTTP adapter sends again (bringup.netbox.http_retry): a refused connection and a
502/503/504 for any method; a connection that broke after the request left only for
idempotent methods, since a POST on it may have been carried out."""

from __future__ import annotations

from http.client import RemoteDisconnected

import pytest
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError, ReadTimeoutError

from bringup.netbox.http_retry import retry_policy

URL = "/api/dcim/devices/?name=n1"


def dropped():
    # what urllib3 raises when gunicorn closed the keep-alive connection under the request
    return ProtocolError("Connection aborted.", RemoteDisconnected("Remote end closed connection without response"))


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "get"])
def test_an_idempotent_request_on_a_dropped_connection_is_sent_again(method):
    again = retry_policy(3).increment(method, URL, error=dropped())
    assert again.read == 2 and again.total == 2


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_write_that_may_have_been_done_is_not_sent_again(method):
    with pytest.raises(ProtocolError, match="Connection aborted"):
        retry_policy(3).increment(method, URL, error=dropped())
    with pytest.raises(ReadTimeoutError):
        retry_policy(3).increment(method, URL, error=ReadTimeoutError(None, URL, "read timed out"))


def test_a_refused_connection_is_sent_again_whatever_the_method():
    again = retry_policy(3).increment("POST", URL, error=NewConnectionError(None, "Connection refused"))
    assert again.connect == 2


def test_the_retries_run_out():
    r = retry_policy(2)
    r = r.increment("GET", URL, error=dropped())
    r = r.increment("GET", URL, error=dropped())
    with pytest.raises(MaxRetryError):
        r.increment("GET", URL, error=dropped())


def test_a_503_is_retried_for_a_post_and_a_500_is_not():
    r = retry_policy(3)
    assert r.is_retry("POST", 503) and r.is_retry("GET", 502)
    assert not r.is_retry("POST", 500) and not r.is_retry("GET", 404)


@pytest.mark.parametrize("url", ["/graphql/", "/graphql/?x=1"])
def test_a_graphql_query_on_a_dropped_connection_is_sent_again(url):
    """bringup's GraphQL POSTs only read: a keep-alive connection gunicorn closed under one
    (its keep-alive is 2 s, a poll's pause) is sent again like a GET, not a lost read."""
    again = retry_policy(3).increment("POST", url, error=dropped())
    assert again.read == 2 and again.total == 2


def test_a_post_elsewhere_is_still_not_sent_again():
    with pytest.raises(ProtocolError):
        retry_policy(3).increment("POST", "/api/extras/journal-entries/", error=dropped())

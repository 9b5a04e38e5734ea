"""NetBox's answers as bringup's errors: the adapter's one HTTP status -> exception map
(:func:`raise_for_status`, as sushy's ``raise_for_response``) and :func:`guard`, which puts
what pynetbox and requests raise through it. Transient (:class:`~bringup.errors.NetBoxUnavailable`:
NetBox away, overloaded or slow) and permanent (a refused token, a rejected field) are the
error's class; callers retry on the class, never on a message."""

from __future__ import annotations

import pynetbox
import requests

from bringup.errors import (
    NetBoxAuthError,
    NetBoxError,
    NetBoxNotFound,
    NetBoxPreconditionFailed,
    NetBoxRequestError,
    NetBoxUnavailable,
)
from bringup.netbox.http_retry import Busy


def raise_for_status(status: int, detail: str) -> None:
    """The one HTTP status -> exception map of the NetBox adapter."""
    if status in (401, 403):
        raise NetBoxAuthError(f"NetBox refused the API token ({status})",
                              hint="check netbox_token_file in the settings and the token's permissions")
    if status == 404:
        raise NetBoxNotFound(f"NetBox has no such object (404): {detail[:300]}")
    if status == 412:
        raise NetBoxPreconditionFailed(f"NetBox refused a conditional write: the object changed since it was read "
                                       f"(412): {detail[:300]}", hint="read it again and decide again")
    if status == 409:
        raise NetBoxError(f"NetBox reports a conflict (409): {detail[:300]}", hint="retry; someone else wrote it")
    if status == 429 or status >= 500:
        raise NetBoxUnavailable(f"NetBox answered {status}: {detail[:300]}", hint="retry later")
    raise NetBoxRequestError(f"NetBox rejected the request ({status}): {detail[:500]}",
                             hint="the message names the field NetBox did not accept")


def guard(fn):
    """Translate pynetbox/requests failures into our error tree."""
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except pynetbox.RequestError as exc:
            raise_for_status(getattr(exc.req, "status_code", 0) or 0, str(exc.error))
        except requests.ConnectionError as exc:
            raise NetBoxUnavailable(f"cannot reach NetBox: {exc.__class__.__name__}",
                                    hint="is it running? `bringup lab status` shows the lab's") from None
        except Busy as exc:
            raise NetBoxUnavailable(str(exc), hint="NetBox is overloaded: give it more workers, or lower "
                                    "netbox_max_inflight on the controllers that share it") from None
        except requests.Timeout:
            raise NetBoxUnavailable("NetBox did not answer in time") from None
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper

"""The one exception tree of bringup.

Every error the library raises on purpose derives from :class:`BringupError`, and its
message says what went wrong *and what to do next*. Adapters translate the exceptions
of the libraries they wrap into these, so callers never catch ``requests`` or
``pynetbox`` errors directly. Messages never carry secrets.
"""

from __future__ import annotations


class BringupError(Exception):
    """Base of every error bringup raises on purpose."""

    #: short hint printed after the message by the CLI
    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint

    def __str__(self) -> str:  # message, then what to do next
        base = super().__str__()
        return f"{base} ({self.hint})" if self.hint else base


# --- bad input -------------------------------------------------------------------------
class ConfigError(BringupError):
    """A file or parameter given by the operator is wrong; the message names it."""


class ParseError(BringupError):
    """External data (JSON, YAML, tool output) is missing a field or malformed.

    ``path`` is where in the document the problem is: a JSON path such as
    ``$.Members[3].MACAddress``, or ``file.yaml:12 nodes[2].sku``.
    """

    def __init__(self, message: str, *, path: str = "", source: str = "", hint: str = "") -> None:
        where = " ".join(p for p in (source, path) if p)
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.path = path
        self.source = source


# --- talking to external systems ------------------------------------------------------
class AdapterError(BringupError):
    """An external system failed or refused; ``system`` names which one."""

    system: str = "external system"
    #: True when retrying the same call later may succeed (timeouts, 5xx, dropped links)
    transient: bool = False


class TransientError(AdapterError):
    """A failure that a retry with backoff may cure."""

    transient = True


class AuthError(AdapterError):
    """Credentials were refused (401/403); never retried."""


class NotFoundError(AdapterError):
    """An object the caller expected does not exist."""


class ConflictError(AdapterError):
    """An existing object differs from what we would create; never overwritten silently."""


class NetBoxError(AdapterError):
    system = "NetBox"


class RedfishError(AdapterError):
    system = "Redfish"


class SSHError(AdapterError):
    system = "SSH"


class AnsibleError(AdapterError):
    system = "Ansible"


class KubeError(AdapterError):
    system = "Kubernetes"


class KubeTransientError(KubeError, TransientError):
    """The API server was unreachable or answered 5xx/429; retry later."""


class KubeAuthError(KubeError, AuthError):
    """The kubeconfig's credentials were refused (401) or lack a permission (403)."""


class KubeNotFoundError(KubeError, NotFoundError):
    """The Kubernetes object (usually a Node) does not exist."""


class KubeConflictError(KubeError, ConflictError):
    """An update lost a race (409) more times than we retry."""


class DrainTimeoutError(KubeError):
    """Pods were still on the node when the drain timed out; ``pods`` names them."""

    transient = True

    def __init__(self, message: str, *, pods: list[str], hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.pods = pods


# --- the lab ---------------------------------------------------------------------------
class LabError(BringupError):
    """A lab service could not be installed, started or reached."""


class RedfishAuthError(RedfishError, AuthError):
    """A BMC refused our credentials (401/403)."""


class RedfishTimeoutError(RedfishError, TransientError):
    """A BMC accepted the connection but did not answer in time, or could not be reached."""


class RedfishNotFoundError(RedfishError, NotFoundError):
    """A Redfish resource (often one the BMC itself linked to) answered 404."""

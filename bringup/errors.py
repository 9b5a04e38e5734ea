"""The one exception tree of bringup.

Every error the library raises on purpose derives from :class:`BringupError`, and its
message says what went wrong *and what to do next*. Adapters translate the exceptions
of the libraries they wrap into these, so callers never catch ``requests`` or
``pynetbox`` errors directly. Messages never carry secrets.

What an error *means* for the node is its class, never a flag set on an instance:

- :class:`TransientError`: a retry with backoff may cure it (timeouts, 5xx, dropped
  connections to a service). Orchestrators retry these and nothing else.
- :class:`ControllerFault`: the mistake is on our side (our settings, our credentials,
  our key files, our own services). The node is not to blame: it stays where it is and
  is never quarantined for it; the run stops loudly with the reason.
- everything else is permanent and about the node or the request.

``transient`` and ``controller_fault`` are read-only properties derived from the class.
A policy result (a BIOS attribute that did not take, a finding) is a returned value,
never one of these.
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

    @property
    def transient(self) -> bool:
        """True when retrying the same call later may succeed (the class decides)."""
        return isinstance(self, TransientError)

    @property
    def controller_fault(self) -> bool:
        """True when the cause is on the controller's side, not the node's."""
        return isinstance(self, ControllerFault)


class ControllerFault(BringupError):
    """Marker base: the controller's own settings, credentials or services are at fault."""


class TransientError(BringupError):
    """Marker base: a failure that a retry with backoff may cure."""


# --- bad input -------------------------------------------------------------------------
class ConfigError(ControllerFault):
    """A file or parameter given by the operator is wrong; the message names it."""


class SecretFileError(ConfigError):
    """A secret file is missing, unreadable, or readable by others (mode wider than 0600)."""


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


class AuthError(AdapterError, ControllerFault):
    """Our credentials were refused (401/403): the controller's settings are wrong. Never retried."""


class NotFoundError(AdapterError):
    """An object the caller expected does not exist."""


class ConflictError(AdapterError):
    """An existing object differs from what we would create; never overwritten silently."""


class UnavailableError(AdapterError, TransientError):
    """The system could not be reached or answered 5xx/429: retry later."""


class RequestError(AdapterError):
    """The system refused this request (4xx other than auth/404/409): retrying will not help."""


class PreconditionFailed(AdapterError):
    """A conditional write (If-Match) found the object changed since it was read (412).
    Not transient: the writer reads again and decides again (a lost race is a value to
    handle, not a call to repeat as it was)."""


# NetBox: our source of truth. Any NetBox trouble is on the controller's side: a node is
# never blamed because NetBox is down or refused a write.
class NetBoxError(AdapterError, ControllerFault):
    system = "NetBox"


class NetBoxAuthError(NetBoxError, AuthError):
    pass


class NetBoxUnavailable(NetBoxError, UnavailableError):
    pass


class NetBoxNotFound(NetBoxError, NotFoundError):
    pass


class NetBoxRequestError(NetBoxError, RequestError):
    pass


class NetBoxPreconditionFailed(NetBoxError, PreconditionFailed):
    pass


# Redfish: the node's BMC.
class RedfishError(AdapterError):
    system = "Redfish"


class RedfishAuthError(RedfishError, AuthError):
    """A BMC refused our credentials (401/403).

    Always the controller's side, even when one BMC refuses what the others accept: the
    credentials the BMC wants are an entry of *our* credentials file (per address, or
    ``default``), and a password changed on one BMC is fixed there or by resetting the
    BMC account, never by quarantining a server whose hardware nobody has looked at.
    The node is held with the reason; the run fails naming the BMC."""


class RedfishTimeoutError(RedfishError, UnavailableError):
    """A BMC accepted the connection but did not answer in time, or could not be reached."""


class RedfishServerError(RedfishError, UnavailableError):
    """A BMC answered 5xx (or 503 while busy): it may answer later."""


class RedfishNotFoundError(RedfishError, NotFoundError):
    """A Redfish resource (often one the BMC itself linked to) answered 404."""


class RedfishRequestError(RedfishError, RequestError):
    """A BMC refused the request (400, 405, 412...): see its @Message.ExtendedInfo."""


class RedfishTLSError(RedfishError, ControllerFault):
    """TLS verification of a BMC failed: our CA bundle or settings do not match the BMC."""


class RedfishTaskError(RedfishError):
    """A BMC accepted an action but its Task or Job ended in failure (Exception, Killed,
    Failed...): the BMC or the node could not do it; retrying the same way will not help."""


# SSH and Ansible: the node's OS.
class SSHError(AdapterError):
    system = "SSH"


class SSHUnreachable(SSHError, UnavailableError):
    """No SSH answer (yet): the node may still be booting."""


class HostKeyMismatch(SSHError):
    """The node answered with a host key other than the pinned one: never connect."""


class SSHDropped(SSHError):
    """The node dropped off SSH in the middle of a step: its result is unknown."""


class AnsibleError(AdapterError):
    system = "Ansible"


class AnsibleTimeout(AnsibleError, UnavailableError):
    """A playbook did not finish within its time limit."""


class AnsibleSetupError(AnsibleError, ControllerFault):
    """Ansible could not run at all here (not installed, bad playbook or extra vars)."""


# Kubernetes
class KubeError(AdapterError):
    system = "Kubernetes"


class KubeTransientError(KubeError, UnavailableError, ControllerFault):
    """The API server was unreachable or answered 5xx/429; retry later. The cluster is
    our own service: once the retries are spent the node is held, never blamed."""


class KubeTLSError(KubeError, ControllerFault):
    """TLS with the API server failed: the kubeconfig's CA does not match the cluster."""


class KubeAuthError(KubeError, AuthError):
    """The kubeconfig's credentials were refused (401) or lack a permission (403)."""


class KubeNotFoundError(KubeError, NotFoundError):
    """The Kubernetes object (usually a Node) does not exist."""


class KubeConflictError(KubeError, ConflictError):
    """An update lost a race (409) more times than we retry."""


class DrainBlocked(KubeError, ControllerFault):
    """Pods were still on the node when the drain's deadline passed (a PodDisruptionBudget
    refused their eviction, or they did not end); ``pods`` and ``budgets`` name them. The
    node is not to blame, so it is never quarantined for it; and the deadline was the whole
    step's, so it is never retried (a retry would wait the deadline again): the node stays
    cordoned in draining, held with the reason, and the run fails naming what blocks it."""

    def __init__(self, message: str, *, pods: list[str], budgets: tuple[str, ...] | list[str] = (),
                 hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.pods = list(pods)
        self.budgets = list(budgets)


# The orchestrator (Prefect server): bringup/ never imports Prefect; flows/ translates.
class OrchestratorError(AdapterError, ControllerFault):
    """The Prefect server refused a request of the run (a 4xx): our deployment or settings
    are wrong; retrying the same request will not help."""

    system = "Prefect server"


class OrchestratorUnavailable(OrchestratorError, UnavailableError):
    """The Prefect server could not be reached, or answered 5xx, for longer than the run
    waits out an outage. Our own service: the node is held with the reason, never blamed."""


def held_reason(exc: BaseException) -> str:
    """Why a node is held once the orchestrator's retries of a transient error ran out:
    which system stayed unreachable, and the last error (never an empty reason)."""
    what = ("BMC unreachable" if isinstance(exc, RedfishError) else
            "node unreachable over SSH" if isinstance(exc, SSHError) else
            "Prefect server unreachable" if isinstance(exc, OrchestratorUnavailable) else "still failing")
    return f"{what} after retries: {str(exc) or type(exc).__name__}"

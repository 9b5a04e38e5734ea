"""Kubernetes: the adapter (:class:`KubeAdapter`), its result models and the pure
bootstrap-token helpers. Label policy lives in :mod:`bringup.admission.labels`."""

from bringup.kube.adapter import KubeAdapter
from bringup.kube.models import DrainResult, JoinCommand, NodeState, PodRef, QuarantineResult
from bringup.kube.tokens import ca_cert_hash, generate_token, split_token, token_secret

__all__ = ["DrainResult", "JoinCommand", "KubeAdapter", "NodeState", "PodRef", "QuarantineResult",
           "ca_cert_hash", "generate_token", "split_token", "token_secret"]

"""Admission to Kubernetes: node labels (:mod:`.labels`) from the pool (:mod:`.pool`), Kueue
manifests (:mod:`.kueue`), the readiness gate's checks (:mod:`.readiness`, :mod:`.smoke`) and
the lifecycle's ``join``, ``gate`` and ``drain`` steps (:mod:`.kube_steps`, :mod:`.gate_step`)."""

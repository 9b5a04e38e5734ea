"""Nodes in service: the health watch's rules (:mod:`.health`, pure) and its step
(:mod:`.watch_step`), the blast-radius guard (:mod:`.blastradius` policy, :mod:`.guard` its
NetBox side) and the reconcile of NetBox with Kubernetes (:mod:`.reconcile`)."""

"""The pool acceptance run (issue #28): the pool's production image trains, checkpoints and
restores through its Kueue queue before anyone pays for the pool.

- :mod:`.phases`: the phase lines the acceptance job prints, parsed (pure);
- :mod:`.policy`: the verdict policy (reference and limits) from YAML, and the verdict (pure);
- :mod:`.manifests`: the Job and Kueue LocalQueue rendered from the pool's NetBox data (pure);
- :mod:`.run`: the run itself (submit, queue wait, phases, a worker deleted, restore) behind
  small I/O seams (:class:`.run.Cluster`, :class:`.run.Clock`).
"""

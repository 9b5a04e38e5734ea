"""Node acceptance: the burn-in plan the on-node agent runs (:mod:`.plan`), the agent's
result document (:mod:`.result`), per-SKU thresholds (:mod:`.thresholds`), the verdict
(:mod:`.judge`, pure), peers and baselines (:mod:`.peers`), replaying recorded outputs
(:mod:`.replay`), and the lifecycle's ``burn_in`` and ``judge`` steps."""

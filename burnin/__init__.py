"""The on-node burn-in agent.

Copied to a node and run there as ``python3 -m burnin run --plan PLAN.json``. It needs only
the standard library and pynvml (nvidia-ml-py), runs on Python 3.10+, imports nothing else
of ours, and prints one versioned JSON result document. The controller writes the plan
(``bringup.acceptance.plan``) and judges the result (``bringup.acceptance.judge``).
"""

AGENT_VERSION = "0.1.0"
SCHEMA_VERSION = 1

"""The fault tests run over the flow tests' lab (the fixtures of tests/integration/flows)."""

from tests.integration.flows.conftest import flow_env, flow_fleet, flow_lab, seeded  # noqa: F401

from tests.integration.flows.conftest import flow_fleet, flow_lab, flow_env, seeded  # noqa: F401

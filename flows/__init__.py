"""Prefect flows: orchestration only (fan-out, child runs, concurrency limits, retries,
schedules, artifacts). Every flow is built from :mod:`bringup.lifecycle.engine` through
:mod:`flows.walk`; none walks the stages on its own."""

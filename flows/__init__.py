"""Prefect flows: orchestration only (fan-out, concurrency limits, retries, schedules,
artifacts). Every task calls exactly one function of :mod:`bringup.stages`."""

# The two Quick start commands: `make demo` (the main job on the lab) and `make test`.
.PHONY: deps demo lab-up lab-down test test-unit lint bench

deps:
	./scripts/bootstrap

# The main job on the embedded lab: bring the lab up, write the fleet to NetBox, and
# commission it through the Prefect deployment (see README).
demo: deps
	.venv/bin/bringup lab up
	.venv/bin/bringup lab seed
	BRINGUP_CONFIG="$${BRINGUP_CONFIG:-$$(.venv/bin/python -m lab.paths config)}" .venv/bin/python -m flows.demo

lab-up: deps
	.venv/bin/bringup lab up

lab-down:
	.venv/bin/bringup lab down

# The whole suite in one pytest run, on TEST_WORKERS pytest-xdist workers: unit tests fill
# the CPU while integration scenarios wait on simulated hardware; the tests of one fleet
# lab run on one worker (--dist loadgroup and their xdist_group; see tests/conftest.py).
# Three on 2 cores: on two workers the CPU was busy 70% of the run (process accounting:
# 3,657 CPU-s in 2,608 s), the rest spent waiting on simulated hardware and timeouts.
TEST_WORKERS ?= 3
# `lab prepare` installs NetBox and builds its pristine database once (restored from
# lab/netbox-db/ in seconds; see docs/netbox-dump.md) before any test's time limit
# starts; it prints each step with its time and `lab prepared in N s`, and pytest the 30
# slowest tests (pyproject's --durations), the total, and each worker's schedule (its fleet
# groups and when it went idle: tests/timeline.py), so all show in CI's log
test: deps
	.venv/bin/bringup lab prepare
	.venv/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup

test-unit: deps
	.venv/bin/pytest -q tests/unit

lint:
	.venv/bin/ruff check bringup bringup_cli lab flows burnin tests bench

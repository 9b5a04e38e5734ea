# The two Quick start commands: `make demo` (the main job on the lab) and `make test`.
.PHONY: deps demo lab-up lab-down test test-unit lint bench

deps:
	./scripts/bootstrap

# The main job on the embedded lab: bring the lab up, write the fleet to NetBox, and
# commission it through the Prefect deployment (see README).
demo: deps
	.venv/bin/bringup lab up
	.venv/bin/bringup lab seed
	.venv/bin/python -m flows.demo

lab-up: deps
	.venv/bin/bringup lab up

lab-down:
	.venv/bin/bringup lab down

# `lab prepare` installs and migrates NetBox once (minutes on a fresh machine) before
# any test's time limit starts
test: deps
	.venv/bin/bringup lab prepare
	.venv/bin/pytest -q

test-unit: deps
	.venv/bin/pytest -q tests/unit

lint:
	.venv/bin/ruff check bringup bringup_cli lab flows burnin tests bench

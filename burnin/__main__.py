"""``python3 -m burnin run --plan PLAN.json [--out RESULT.json]``.

Prints the JSON result document on stdout (progress goes to stderr) and writes it to
``--out``. Exit status: 0 every check passed, 1 something failed or errored, 2 the plan is
unusable, 3 nothing failed but some checks were skipped or unsupported.
"""

import argparse
import json
import os
import sys

from . import AGENT_VERSION
from .runner import PlanError, exit_code, run_plan, write_atomic


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="burnin", description="GPU node burn-in agent")
    ap.add_argument("--version", action="version", version=AGENT_VERSION)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a burn-in plan")
    run.add_argument("--plan", required=True, help="plan JSON written by the controller")
    run.add_argument("--out", help="also write the result document here")
    args = ap.parse_args(argv)
    try:
        with open(args.plan) as fh:
            plan = json.load(fh)
        doc = run_plan(plan)
    except (OSError, ValueError, PlanError) as exc:
        print(json.dumps({"schema_version": 1, "agent_version": AGENT_VERSION, "error": f"bad plan: {exc}"}))
        print(f"burnin: bad plan {args.plan}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=1, sort_keys=False, default=str)
    if args.out:
        write_atomic(args.out, text + "\n")
    sys.stdout.write(text + "\n")
    return exit_code(doc)


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # a check thread may still be stuck in a driver call; do not wait for it
    os._exit(rc)

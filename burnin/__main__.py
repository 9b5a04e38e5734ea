"""``python3 -m burnin run --plan PLAN.json [--out RESULT.json]``; and
``python3 -m burnin sharing (--mig GEOMETRY | --mig-off) [--out RESULT.json]``, the
node's MIG geometry set and read back (:mod:`burnin.sharing`).

Prints the JSON result document on stdout (progress goes to stderr) and writes it to
``--out``. ``--out`` is rewritten as the run goes (before each check starts, after it ends),
so a run killed from outside leaves a partial document naming the check it was in; on
SIGTERM (what ``timeout`` sends first) the document also says it was stopped. Exit status:
0 every check passed, 1 something failed or errored, 2 the plan is unusable, 3 nothing
failed but some checks were skipped or unsupported, 124 stopped by SIGTERM.
"""

import argparse
import json
import os
import signal
import sys
from typing import Any

from . import AGENT_VERSION
from .proc import kill_running
from .runner import PlanError, exit_code, run_plan, write_atomic

STOPPED_RC = 124


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=False, default=str) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="burnin", description="GPU node burn-in agent")
    ap.add_argument("--version", action="version", version=AGENT_VERSION)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a burn-in plan")
    run.add_argument("--plan", required=True, help="plan JSON written by the controller")
    run.add_argument("--out", help="also write the result document here (kept current during the run)")
    share = sub.add_parser("sharing", help="set the GPUs' MIG geometry (or MIG off) and read it back")
    which = share.add_mutually_exclusive_group(required=True)
    which.add_argument("--mig", help='MIG devices per GPU, JSON: {"1g.18gb": 7}')
    which.add_argument("--mig-off", action="store_true", help="no MIG: instances destroyed, MIG mode disabled")
    share.add_argument("--out", help="also write the document here")
    args = ap.parse_args(argv)
    if args.cmd == "sharing":
        return _sharing(args)
    latest: dict[str, Any] = {}

    def on_update(doc: dict[str, Any]) -> None:
        latest["doc"] = doc
        if args.out:
            write_atomic(args.out, _dump(doc))

    def on_term(signum: int, _frame: Any) -> None:
        # runs in the main thread, possibly in the middle of on_update: no lock (it would
        # deadlock); write_atomic uses a name of its own and we exit before the main thread
        # could replace the file again. Check threads may be stuck in a driver call: go.
        kill_running()  # no hung tool left behind on the node
        doc = dict(latest.get("doc") or {})
        if doc and args.out:
            doc["stopped"] = f"signal {signal.Signals(signum).name} during {doc.get('running') or 'setup'}"
            write_atomic(args.out, _dump(doc))
        print(f"burnin: stopped by {signal.Signals(signum).name}", file=sys.stderr, flush=True)
        os._exit(STOPPED_RC)

    signal.signal(signal.SIGTERM, on_term)
    try:
        with open(args.plan) as fh:
            plan = json.load(fh)
        doc = run_plan(plan, on_update=on_update)
    except (OSError, ValueError, PlanError) as exc:
        print(json.dumps({"schema_version": 1, "agent_version": AGENT_VERSION, "error": f"bad plan: {exc}"}))
        print(f"burnin: bad plan {args.plan}: {exc}", file=sys.stderr)
        return 2
    on_update(doc)
    sys.stdout.write(_dump(doc))
    return exit_code(doc)


def _sharing(args: argparse.Namespace) -> int:
    from .sharing import apply, parse_geometry
    try:
        geometry = None if args.mig_off else parse_geometry(args.mig)
    except ValueError as exc:
        print(f"burnin sharing: {exc}", file=sys.stderr)
        return 2
    rc, doc = apply(geometry)
    if args.out:
        write_atomic(args.out, _dump(doc))
    sys.stdout.write(_dump(doc))
    return rc


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # a check thread may still be stuck in a driver call; do not wait for it
    os._exit(rc)

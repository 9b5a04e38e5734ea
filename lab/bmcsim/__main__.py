"""``python -m lab.bmcsim serve --fleet FILE --home LAB_HOME``: run every BMC of a fleet."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from bringup.errors import BringupError
from bringup.sku import load_skus, nic_counts
from lab.fleet import load_fleet
from lab.paths import lab_home

from .seedserver import SeedServer, seed_folder
from .server import FleetSimulator


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.bmcsim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve every BMC of the fleet profile")
    serve.add_argument("--fleet", required=True, type=Path)
    serve.add_argument("--home", type=Path, default=None, help="lab home (default: $BRINGUP_LAB_HOME)")
    serve.add_argument("--power-delay", type=float, default=1.0, help="seconds a power transition takes")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds added to every response")
    serve.add_argument("--seed-listen", default="", help="HOST:PORT to serve <home>/seeds (the install seeds) on")
    serve.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        skus = load_skus()
        fleet = load_fleet(args.fleet, nic_counts(skus))
        home = args.home or lab_home()
        sim = FleetSimulator(fleet, skus, home, power_delay=args.power_delay, latency=args.latency)
        seeds = None
        if args.seed_listen:
            host, port = args.seed_listen.rsplit(":", 1)
            try:
                seeds = SeedServer((host, int(port)), seed_folder(home))
            except OSError as exc:
                raise OSError(exc.errno, f"seed server on {args.seed_listen}: {exc.strerror}") from exc
    except BringupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot listen: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    sim.start()
    if seeds is not None:
        seeds.start()
    print(f"bmcsim: serving {len(sim.servers)} BMCs; CA {sim.ca_bundle}"
          + (f"; seeds at {seeds.url}" if seeds else ""), flush=True)
    done.wait()
    if seeds is not None:
        seeds.stop()
    sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

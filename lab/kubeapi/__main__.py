"""``python -m lab.kubeapi serve --home LAB_HOME [--listen HOST:PORT]``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .server import make_server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.kubeapi", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="serve the Kubernetes API stand-in")
    s.add_argument("--home", required=True, type=Path, help="lab home (state under <home>/kube)")
    s.add_argument("--listen", default="127.0.0.1:26443", help="HOST:PORT, loopback only")
    s.add_argument("--fleet", default=None, type=Path,
                   help="fleet profile: where the stand-in kubelet reaches each node over SSH")
    s.add_argument("--no-persist", action="store_true", help="keep state in memory only")
    args = p.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    if not host.startswith("127.") and host != "localhost":
        p.error("the lab API listens on loopback only (127.x.y.z)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    endpoints = None
    if args.fleet:
        from bringup.sku import load_skus, nic_counts
        from lab.fleet import load_fleet
        fleet = load_fleet(args.fleet, nic_counts(load_skus()))
        endpoints = {n.name: (n.address, n.ssh_port) for n in fleet.nodes}
    httpd = make_server(args.home, host, int(port), persist=not args.no_persist, endpoints=endpoints)
    logging.getLogger("lab.kubeapi").info("serving on https://%s:%s, kubeconfig %s", host,
                                          httpd.server_address[1], httpd.api.paths.kubeconfig)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

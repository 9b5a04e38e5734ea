"""``python -m lab.nodes serve --fleet FILE --home LAB_HOME``: run the node supervisor."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from lab.paths import lab_home

from .serve import serve


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.nodes")
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="start and supervise the sshd of every installed node")
    s.add_argument("--fleet", type=Path, required=True)
    s.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    serve(args.fleet, args.home or lab_home())


if __name__ == "__main__":
    main()

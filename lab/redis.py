"""The lab's Redis (Debian's redis-server) on a private loopback port."""

from __future__ import annotations

import shutil

from lab.errors import LabError

from . import procs
from .paths import HOST, REDIS_PORT, LabPaths


class Redis:
    def __init__(self, paths: LabPaths) -> None:
        self.paths = paths
        self.dir = paths.home / "redis"

    def start(self) -> None:
        if procs.port_open(HOST, REDIS_PORT):
            return
        exe = shutil.which("redis-server")
        if not exe:
            raise LabError("redis-server not found", hint="apt-get install redis-server (`make deps` does it)")
        self.dir.mkdir(parents=True, exist_ok=True)
        # no persistence: the lab's Redis only holds NetBox's cache and job queue
        procs.start("redis", [exe, "--bind", HOST, "--port", str(REDIS_PORT), "--dir", str(self.dir),
                              "--save", "", "--appendonly", "no", "--daemonize", "no"],
                    run_dir=self.paths.run, log_dir=self.paths.logs)
        procs.wait_until(lambda: procs.port_open(HOST, REDIS_PORT), timeout=20, what="Redis",
                         log=self.paths.logs / "redis.log")

    def stop(self) -> bool:
        return procs.stop("redis", self.paths.run)

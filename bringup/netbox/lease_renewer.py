"""The thread that keeps a node's lease while a walk works on it (:class:`Renewer`): the
lease's compare-and-swap writes are :mod:`bringup.netbox.lease`'s, handed in as ``renew``
and ``release``; here is only when they run and what happens when one fails."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Self

from bringup.errors import BringupError
from bringup.netbox.lease import RENEW_EVERY_S

log = logging.getLogger("bringup.netbox.lease")


class Renewer:
    """Renews a lease on a daemon thread every ``every`` seconds while the ``with`` block
    runs, then gives it back. ``renew()`` returns why the lease was lost (or None);
    after a loss it stops renewing. Any error of a renewal (NetBox away, or a bug) is
    logged with the node and tried again at the next tick: the thread never dies silently.
    However it stops before the block ends (a lost lease, or the thread itself failing),
    ``on_stop(why)`` is told at once, so the walk is stopped at its next fence instead of
    finding out when the lease has run out."""

    def __init__(self, renew: Callable[[], str | None], release: Callable[[], None], *,
                 every: float = RENEW_EVERY_S, logger: Any = None, node: str = "a node",
                 on_stop: Callable[[str], None] | None = None) -> None:
        self._renew, self._release, self.every, self.node = renew, release, every, node
        self.log = logger or log
        self.on_stop = on_stop
        self.lost: str | None = None
        #: why the renewer stopped before it was told to ("" while it runs or after a normal end)
        self.stopped = ""
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lease-renewer {node}", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _tick(self) -> bool:
        """One renewal; False when the lease is lost (nothing more to renew)."""
        try:
            self.lost = self._renew()
        except Exception as exc:  # noqa: BLE001  (any error: logged with the node, tried again)
            self.errors += 1
            self.log.warning("%s: could not renew its lease (failure %d in a row; trying again in %.0f s): %s: %s",
                             self.node, self.errors, self.every, type(exc).__name__, exc)
            return True
        self.errors = 0
        if self.lost:
            self.log.error("%s: %s: this run records nothing more for it", self.node, self.lost)
            return False
        return True

    def _loop(self) -> None:
        why = ""
        try:
            while not self._stop.wait(self.every):
                if not self._tick():
                    why = self.lost or ""
                    return
        except BaseException as exc:
            why = f"the lease renewer of {self.node} failed: {type(exc).__name__}: {exc}"
            raise
        finally:
            if not self._stop.is_set():
                self.stopped = why or f"the lease renewer of {self.node} stopped"
                self._told(self.stopped)

    def _told(self, why: str) -> None:
        if self.on_stop is None:
            return
        try:
            self.on_stop(why)
        except Exception:  # the log still says it; the lease runs out by time
            self.log.exception("%s: could not pass on that its lease renewer stopped", self.node)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        try:
            self._release()
        except BringupError as exc:  # it runs out by itself after its TTL
            self.log.warning("%s: could not give its lease back (it expires by itself): %s", self.node, exc)

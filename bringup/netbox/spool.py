"""Results NetBox could not take, kept on the controller's disk until a run can record them.

A step's result (its evidence documents and the fields it sets) exists only in the
worker's memory until the lifecycle records it in NetBox. When NetBox stays unreachable
past the records layer's retries, losing that result would mean doing the work again (a
burn-in is hours of GPU time) and overwriting what the first run saw. So the lifecycle
spools it here and holds the node; the next run of that step for that node replays the
spooled result into NetBox instead of running the step again.

A result is the result of one NetBox device: the file names the device
(:func:`bringup.lifecycle.engine.device_of`: its URL, the server and the device's id, and when
NetBox created it), and only a run recording to that device replays it. The
spool is the controller's, not a site's: one controller may serve two NetBoxes (a staging and
a production site, a lab beside them) whose nodes share names, and a device deleted and
created again is another machine's record. A result spooled for ``fs-r1-n01`` of one NetBox
was once replayed into the ``fs-r1-n01`` of another: an install recorded that never ran
there, the node's SSH refused at the next step (CI at 43fedd4). A file that names no device
(written before this check) is never replayed: it is left, with a warning, for a person.

One file per result, named ``<node>--<state>--<step>--<sha>.json`` (``sha``: the first
16 hex digits of the content's SHA-256, so two different results never share a name),
written atomically (a temporary file renamed into place) and mode 0600 in a 0700 folder:
evidence is the node's record and stays ours. A file that cannot be read back is renamed
``*.bad`` (kept for a person to look at) and the step runs again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from bringup.errors import ControllerFault
from bringup.lifecycle.results import StepResult

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class ResultSpooled(ControllerFault):
    """NetBox stayed unreachable: the step's result is kept in the spool for the next run
    (never retried by the orchestrator: retrying would redo the step's work)."""


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part)


@dataclass(frozen=True)
class Spooled:
    """One spooled result and where it lies."""

    path: Path
    node: str
    state: str
    step: str
    result: StepResult
    error: str = ""
    at: str = ""
    #: the NetBox device the result belongs to (``device_of``: URL and creation time); "" in a
    #: file written before it was kept
    device: str = ""


class Spool:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _prefix(self, node: str, state: str, step: str) -> str:
        return f"{_safe(node)}--{_safe(state)}--{_safe(step)}--"

    def put(self, node: str, state: str, step: str, result: StepResult, *, device: str, error: str = "") -> Path:
        """Keep ``result`` of ``step`` (in ``state``) of ``node``, the NetBox device at URL
        ``device`` (``device_of``); returns the file."""
        if not device:
            raise ValueError(f"{node}: a spooled result must name its NetBox device")
        doc = {"node": node, "state": state, "step": step, "device": device, "error": error,
               "at": datetime.now(UTC).isoformat(timespec="seconds"), "result": result.model_dump(mode="json")}
        text = json.dumps(doc, sort_keys=True, indent=1, default=str)
        sha = hashlib.sha256(text.encode()).hexdigest()[:16]
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        path = self.root / f"{self._prefix(node, state, step)}{sha}.json"
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # the rename is the commit point: a result is whole or absent
        log.warning("%s: %s result spooled to %s (%s)", node, step, path, error)
        return path

    def _read(self, path: Path) -> Spooled | None:
        try:
            doc = json.loads(path.read_text())
            return Spooled(path, doc["node"], doc["state"], doc["step"], StepResult.model_validate(doc["result"]),
                           str(doc.get("error") or ""), str(doc.get("at") or ""), str(doc.get("device") or ""))
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
            log.error("spooled result %s cannot be read (%s); kept as %s.bad", path, exc, path.name)
            path.replace(path.with_name(path.name + ".bad"))
            return None

    def _entries(self, node: str, state: str, step: str) -> list[Spooled]:
        """This node name's spooled results of the step, newest first, whichever device."""
        if not self.root.is_dir():
            return []
        paths = sorted(self.root.glob(f"{self._prefix(node, state, step)}*.json"), key=lambda p: p.stat().st_mtime)
        found = [self._read(p) for p in reversed(paths)]
        return [e for e in found if e is not None and (e.node, e.state, e.step) == (node, state, step)]

    def find(self, node: str, state: str, step: str, *, device: str) -> Spooled | None:
        """The newest spooled result of this node's step on the NetBox device ``device``, if any.
        One of another device (another NetBox's node of that name) is not this node's."""
        mine = None
        for entry in self._entries(node, state, step):
            if entry.device == device and device:
                mine = mine or entry
            else:
                log.warning("%s: spooled %s result %s is %s, not of %s: not replayed (delete it once no "
                            "run needs it)", node, step, entry.path,
                            f"of {entry.device}" if entry.device else "of no named NetBox device", device)
        return mine

    def done(self, entry: Spooled) -> None:
        """The result is recorded in NetBox: forget it (and any older copy of the same step of
        the same device)."""
        for other in self._entries(entry.node, entry.state, entry.step):
            if other.device == entry.device:
                other.path.unlink(missing_ok=True)

    def pending(self) -> list[Spooled]:
        """Every result still waiting for NetBox."""
        if not self.root.is_dir():
            return []
        return [s for p in sorted(self.root.glob("*--*--*--*.json")) if (s := self._read(p)) is not None]

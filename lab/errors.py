"""The lab's own error: a lab service (PostgreSQL, NetBox, Prefect, a simulator, a node
stand-in) could not be installed, started or reached.

It derives from :class:`bringup.errors.BringupError` so the command line shows it as a
message with what to do next, never a traceback; the library itself never raises it.
"""

from __future__ import annotations

from bringup.errors import BringupError


class LabError(BringupError):
    """A lab service could not be installed, started or reached."""

"""The node lifecycle: states, transitions and each state's handler in one table
(:mod:`.table`), the engine that is the one writer of a node's stage (:mod:`.engine`), the
ports it is handed (:mod:`.ports`), the values steps return (:mod:`.results`) and which
nodes a run takes (:mod:`.select`). The steps themselves live with their concern
(discovery, provision, acceptance, fabric, admission, service); :mod:`bringup.pipeline`
wires them to the engine."""

from bringup.lifecycle.engine import *  # noqa: F403  (the engine's public names, __all__)
from bringup.lifecycle.engine import __all__  # noqa: F401

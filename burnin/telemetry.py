"""Background observers that run while the stress tools load the GPUs.

:class:`Sampler` polls temperature, power, clock event reasons and PCIe link state, so the
PCIe and clock checks judge the GPUs *under load* (links train down and clocks throttle
under load, not at idle). :class:`XidWatcher` listens on an NVML event set for XID critical
errors for the whole run.
"""

import threading
import time
from typing import Any

from .nvml import Nvml, NvmlFailure, Unsupported

XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError


class Sampler:
    """Samples every GPU each ``interval_s``; each sample carries ``load``, the stress check
    running when it was taken (None between checks and after them), because a GPU lowers
    its PCIe link at idle and only samples under load say what the link can do."""

    def __init__(self, nvml: Nvml, handles: list[Any], interval_s: float) -> None:
        self.load: str | None = None
        self.nvml = nvml
        self.handles = handles
        self.interval_s = max(0.05, interval_s)
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample_once(self) -> None:
        n = self.nvml
        for i, h in enumerate(self.handles):
            s: dict[str, Any] = {"gpu": i, "t": time.time(), "load": self.load}
            for key, fn, args in (
                ("temp_c", "nvmlDeviceGetTemperature", (h, 0)),
                ("power_mw", "nvmlDeviceGetPowerUsage", (h,)),
                ("reasons", "nvmlDeviceGetCurrentClocksEventReasons", (h,)),
                ("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", (h,)),
                ("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", (h,)),
            ):
                try:
                    s[key] = n.call(fn, *args)
                except Unsupported:
                    s[key] = None
                    if key == "reasons":
                        # drivers before the "event reasons" rename only have the old name
                        s[key] = n.opt("nvmlDeviceGetCurrentClocksThrottleReasons", h)
                except NvmlFailure as exc:
                    s[key] = None
                    s.setdefault("errors", []).append(str(exc))
            self.samples.append(s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        self.sample_once()  # always at least one sample taken at the end of the load


class XidWatcher:
    def __init__(self, nvml: Nvml, handles: list[Any], wait_ms: int = 200) -> None:
        self.nvml = nvml
        self.handles = handles
        self.wait_ms = wait_ms
        self.events: list[dict[str, Any]] = []
        self.error: str | None = None
        self.unsupported_gpus: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._set = None

    def start(self) -> None:
        p = self.nvml.pynvml
        try:
            self._set = self.nvml.call("nvmlEventSetCreate")
        except (Unsupported, NvmlFailure) as exc:
            self.error = str(exc)
            return
        registered = 0
        for i, h in enumerate(self.handles):
            try:
                supported = self.nvml.call("nvmlDeviceGetSupportedEventTypes", h)
                if not supported & XID_EVENT:
                    self.unsupported_gpus.append(i)
                    continue
                self.nvml.call("nvmlDeviceRegisterEvents", h, XID_EVENT, self._set)
                registered += 1
            except Unsupported:
                self.unsupported_gpus.append(i)
            except NvmlFailure as exc:
                self.error = str(exc)
        if registered == 0:
            self.error = self.error or "no GPU supports XID events"
            return
        self._index = {self._key(h): i for i, h in enumerate(self.handles)}
        self._p = p
        self._thread = threading.Thread(target=self._loop, name="xid-watcher", daemon=True)
        self._thread.start()

    @staticmethod
    def _key(handle: Any) -> Any:
        import ctypes
        try:
            return ctypes.cast(handle, ctypes.c_void_p).value
        except (TypeError, ctypes.ArgumentError):
            return id(handle)

    def _loop(self) -> None:
        p = self._p
        while not self._stop.is_set():
            try:
                data = p.nvmlEventSetWait(self._set, self.wait_ms)
            except p.NVMLError as exc:
                if getattr(exc, "value", None) == p.NVML_ERROR_TIMEOUT:
                    continue
                self.error = f"nvmlEventSetWait: {exc}"
                return
            if data.eventType & XID_EVENT:
                gpu = self._index.get(self._key(data.device))
                self.events.append({"gpu": gpu, "xid": int(data.eventData), "source": "nvml", "t": time.time()})

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=max(2.0, self.wait_ms / 1000 * 3))
        if self._set is not None and (self._thread is None or not self._thread.is_alive()):
            try:
                self.nvml.call("nvmlEventSetFree", self._set)
            except (Unsupported, NvmlFailure):
                pass

"""A thin, fail-soft face over pynvml for the checks.

``NOT_SUPPORTED`` and missing symbols become :class:`Unsupported` (the check says
"unsupported", never "pass"); any other NVML error becomes :class:`NvmlFailure` carrying
NVML's own error string, which the check reports as evidence.
"""

import threading
from typing import Any


class Unsupported(Exception):
    """The GPU or driver does not support this query."""


class NvmlFailure(Exception):
    """NVML answered with an error other than 'not supported'."""


class Nvml:
    def __init__(self) -> None:
        self.error: str | None = None
        self.pynvml: Any = None
        self._lock = threading.Lock()
        try:
            import pynvml  # nvidia-ml-py; the only third-party import of the agent
        except ImportError:
            self.error = "pynvml (nvidia-ml-py) is not installed"
            return
        self.pynvml = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            self.error = f"nvmlInit failed: {exc}"

    @property
    def ok(self) -> bool:
        return self.error is None

    def call(self, name: str, *args: Any) -> Any:
        p = self.pynvml
        fn = getattr(p, name, None)
        if fn is None:
            raise Unsupported(f"{name} is not in this pynvml")
        try:
            value = fn(*args)
        except p.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in (p.NVML_ERROR_NOT_SUPPORTED, p.NVML_ERROR_FUNCTION_NOT_FOUND):
                raise Unsupported(f"{name}: {exc}") from None
            raise NvmlFailure(f"{name}: {exc}") from None
        return value.decode() if isinstance(value, bytes) else value

    def opt(self, name: str, *args: Any) -> Any:
        """Like :meth:`call` but None when unsupported."""
        try:
            return self.call(name, *args)
        except Unsupported:
            return None

    def is_code(self, exc: Exception, const: str) -> bool:
        return const in str(exc) if exc else False

    def handles(self) -> list[Any]:
        n = self.call("nvmlDeviceGetCount")
        return [self.call("nvmlDeviceGetHandleByIndex", i) for i in range(n)]

    def memory_total(self, handle: Any) -> int:
        p = self.pynvml
        try:
            return int(self.call("nvmlDeviceGetMemoryInfo", handle, p.nvmlMemory_v2).total)
        except (Unsupported, NvmlFailure, AttributeError):
            # drivers older than the _v2 symbol: the v1 struct
            return int(self.call("nvmlDeviceGetMemoryInfo", handle).total)

    def shutdown(self) -> None:
        if self.ok:
            try:
                self.pynvml.nvmlShutdown()
            except Exception:  # noqa: BLE001,S110 - shutting down, nothing to report
                pass

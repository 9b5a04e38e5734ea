"""The lab's acceptance training job: what a production image does, at the scale of a CPU.

Run by the lab kubelet as the container of each worker pod (``python trainer.py``). Reads
the dataset sample and the base weights from the site's storage (a shared folder), runs a
tiny all-reduce with the other workers through that folder (the comm benchmark), trains a
linear model on a known function with minibatch SGD (so the loss must go down), writes a
checkpoint every second of training, resumes from it when its pod is recreated, and prints
each phase in bringup's line format (``docs/pool-acceptance.md``). numpy and the standard
library only: it imports nothing of bringup, as an image would not.

Environment (set by the Job bringup renders): ``BRINGUP_ACCEPT_RUN``, ``_WORKERS``,
``_DATA``, ``_WEIGHTS``, ``_CHECKPOINTS``, ``_TRAIN_SECONDS``; ``JOB_COMPLETION_INDEX``
(Kubernetes sets it in an Indexed Job). Each step sleeps ``LAB_ACCEPT_STEP_S`` (default 5 ms)
for the GPU kernels the CPU does not have, and keeps the lab's two cores free.

Faults (environment, from the pool's ``acceptance.env``): ``LAB_ACCEPT_SLOW_DATA_S`` (the
data fetch takes that much longer), ``LAB_ACCEPT_CORRUPT_CHECKPOINT=1`` (checkpoints are
written unreadable), ``LAB_ACCEPT_STEP_DELAY_S`` (every step that much slower: throughput
below the reference).
"""

from __future__ import annotations

import os
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

BATCH = 64
LR = 0.05
CKPT_EVERY_S = 1.0
LOG_EVERY_S = 0.5


def say(phase: str, **kv: object) -> None:
    words = []
    for k, v in kv.items():
        text = (f"{v:.6g}" if isinstance(v, float) else str(v)).replace('"', "'")
        words.append(f'{k}="{text}"' if " " in text else f"{k}={text}")
    print(" ".join(["bringup-accept", f"phase={phase}", *words]), flush=True)


def env(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        print(f"trainer: {name} is not set", file=sys.stderr, flush=True)
        sys.exit(2)
    return value


def fetch(path: Path, phase: str, extra_s: float) -> dict[str, np.ndarray]:
    t = time.monotonic()
    raw = path.read_bytes()  # the fetch: every byte read from the site's storage
    time.sleep(extra_s)
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    say(phase, seconds=time.monotonic() - t, bytes=len(raw))
    return arrays


def allreduce(folder: Path, rank: int, workers: int, timeout_s: float = 60.0) -> None:
    """Each worker's 1 MiB vector summed through the shared folder; busbw as nccl-tests
    defines it for all-reduce (algbw x 2(n-1)/n)."""
    folder.mkdir(parents=True, exist_ok=True)
    vec = np.full(262144, rank + 1, dtype=np.float32)
    t = time.monotonic()
    tmp = folder / f".rank-{rank}.npy"
    np.save(tmp, vec)
    tmp.rename(folder / f"rank-{rank}.npy")
    deadline = t + timeout_s
    while not all((folder / f"rank-{r}.npy").exists() for r in range(workers)):
        if time.monotonic() > deadline:
            say("comm", status="failed", reason=f"peers missing after {timeout_s:g} s")
            sys.exit(4)
        time.sleep(0.02)
    total = sum(np.load(folder / f"rank-{r}.npy") for r in range(workers))
    seconds = max(time.monotonic() - t, 1e-6)
    expect = workers * (workers + 1) / 2
    if not np.allclose(total, expect):
        say("comm", status="failed", reason="all-reduce sum is wrong")
        sys.exit(4)
    algbw = vec.nbytes / seconds / 1e9
    say("comm", busbw_gbps=algbw * 2 * (workers - 1) / workers if workers > 1 else algbw, seconds=seconds)


def loss_of(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((x @ w - y) ** 2))


def save(path: Path, corrupt: bool, **state: np.ndarray | float) -> None:
    t = time.monotonic()
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **state)
    if corrupt:  # the fault: what lands on storage cannot be read back
        tmp.write_bytes(b"\0" * tmp.stat().st_size)
    tmp.rename(path)
    say("checkpoint", step=int(state["step"]), seconds=time.monotonic() - t, bytes=path.stat().st_size, path=path)


def main() -> int:
    run, workers = env("BRINGUP_ACCEPT_RUN"), int(env("BRINGUP_ACCEPT_WORKERS", "1"))
    rank = int(env("JOB_COMPLETION_INDEX", "0"))
    train_s = float(env("BRINGUP_ACCEPT_TRAIN_SECONDS", "5"))
    step_s = float(env("LAB_ACCEPT_STEP_S", "0.005")) + float(env("LAB_ACCEPT_STEP_DELAY_S", "0"))
    ckpt_dir = Path(env("BRINGUP_ACCEPT_CHECKPOINTS")) / run
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt = ckpt_dir / f"rank-{rank}.npz"
    data = fetch(Path(env("BRINGUP_ACCEPT_DATA")), "data", float(env("LAB_ACCEPT_SLOW_DATA_S", "0")))
    base = fetch(Path(env("BRINGUP_ACCEPT_WEIGHTS")), "weights", 0.0)
    x, y = data["x"], data["y"]
    allreduce(ckpt_dir / "comm", rank, workers)
    w, step, trained, loss_first = base["w"].astype(float), 0, 0.0, None
    if ckpt.exists():
        t = time.monotonic()
        try:
            with np.load(ckpt) as f:
                w, step, trained, loss_first = f["w"], int(f["step"]), float(f["trained"]), float(f["loss_first"])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            say("restore", status="failed", reason=f"checkpoint {ckpt.name} unreadable: {type(exc).__name__}: {exc}")
            return 3
        say("restore", step=step, seconds=time.monotonic() - t)
    if loss_first is None:
        loss_first = loss_of(w, x, y)
    rng = np.random.default_rng(1000 * rank + step)
    corrupt = env("LAB_ACCEPT_CORRUPT_CHECKPOINT", "0") == "1"
    start = time.monotonic()
    last_log = last_ckpt = start
    window_steps, window_t = 0, start
    while trained + (time.monotonic() - start) < train_s:
        idx = rng.integers(0, len(x), BATCH)
        xb, yb = x[idx], y[idx]
        w = w - LR * (2.0 / BATCH) * xb.T @ (xb @ w - yb)
        step += 1
        window_steps += 1
        time.sleep(step_s)
        now = time.monotonic()
        if now - last_log >= LOG_EVERY_S:
            say("train", step=step, samples_per_s=window_steps * BATCH / (now - window_t), loss=loss_of(w, x, y))
            window_steps, window_t, last_log = 0, now, now
        if now - last_ckpt >= CKPT_EVERY_S:
            save(ckpt, corrupt, w=w, step=step, trained=trained + now - start, loss_first=loss_first)
            last_ckpt = now
    say("done", steps=step, loss_first=loss_first, loss_last=loss_of(w, x, y))
    return 0


if __name__ == "__main__":
    sys.exit(main())

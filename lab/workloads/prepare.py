"""The site storage the lab's acceptance job reads: a small dataset sample of a known
function (y = X @ w_true + noise) and the base weights, written into a shared folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

FEATURES = 16


def prepare_storage(root: Path, samples: int = 4096, seed: int = 28) -> dict[str, Path]:
    """Write ``data.npz`` and ``weights.npz`` under ``root`` (and make ``checkpoints/``);
    returns their paths, the settings' ``acceptance_*`` values."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=FEATURES)
    x = rng.normal(size=(samples, FEATURES))
    y = x @ w_true + 0.01 * rng.normal(size=samples)
    data, weights, ckpt = root / "data.npz", root / "weights.npz", root / "checkpoints"
    np.savez(data, x=x, y=y)
    # the "base weights": a start far from the function, so the loss must come down
    np.savez(weights, w=np.zeros(FEATURES))
    ckpt.mkdir(exist_ok=True)
    return {"data": data, "weights": weights, "checkpoints": ckpt}

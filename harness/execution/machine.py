"""What this machine runs a verdict on: the versions of torch and triton (and the CUDA torch was built with)
that a run's environment stamp and every cell's key name."""

from __future__ import annotations


def versions() -> dict[str, str | None]:
    """torch, triton, and the CUDA torch was built with (None without)."""
    import torch
    import triton

    return {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda}

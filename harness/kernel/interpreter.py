"""Triton's CPU interpreter (``TRITON_INTERPRET=1``, which ``python -m harness run --interpret`` sets for the run):
kernels then run on CPU tensors, so the CUDA paths run on CPU (harness/cell/runner.py) and the library ops register no
CPU kernel of their own (harness/kernel/wrappers.py), so that CPU tensors reach the Triton kernel."""

from __future__ import annotations

import os

INTERPRET_ENV = "TRITON_INTERPRET"


def triton_interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter here (read when a kernel is decorated: set it first)."""
    return os.environ.get(INTERPRET_ENV) == "1"

"""What the Liger-Kernel cases (``cases/liger_*.py``, ``matrix-liger.toml``) share: seeded inputs and the sizes.
Liger ships each op as a ``torch.autograd.Function`` launching its own Triton kernels; the cases give it as shipped
(``Case.shipped``, with the library's own argument choices in ``shipped_args``) beside the PyTorch reference it
replaces (the Hugging Face module's math). Needs the optional extra ``liger`` (``pip install -e .[liger]``)."""

import torch

HIDDEN = 256  # the normalized and activated width


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)

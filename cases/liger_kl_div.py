"""Liger's KL divergence: ``LigerKLDivLossFunction.apply(log_probs, target, "batchmean", False, 1e-10)``
(``LigerKLDIVLoss``), against ``torch.nn.functional.kl_div(..., reduction="batchmean")``, in float32. Liger's backward
gives no gradient of the target: it is declared ``no_grad``."""

import torch
from liger_kernel.ops import LigerKLDivLossFunction

from harness.case import Case

VOCAB = 1000


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def kl_div(log_probs, target):
    return torch.nn.functional.kl_div(log_probs, target, reduction="batchmean")


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    log_probs = randn(rows, VOCAB, generator=gen, device=device).log_softmax(-1)
    target = randn(rows, VOCAB, generator=gen, device=device).softmax(-1)
    return log_probs, target


CASE = Case(
    id="liger_kl_div",
    shipped=LigerKLDivLossFunction.apply,
    shipped_args=("batchmean", False, 1e-10),
    reference=kl_div,
    make_inputs=make_inputs,
    arg_names=("log_probs", "target"),
    no_grad=("target",),
    sizes=(37, 5, 64),
)

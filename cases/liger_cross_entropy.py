"""Liger's cross-entropy, which writes the logits' gradient into them during the forward and launches a second kernel
(``element_mul``) in its backward: ``LigerCrossEntropyFunction.apply(logits, target, weight=None, ignore_index=-100,
lse_square_scale=1e-4, label_smoothing=0.0, reduction="mean", softcap=None, return_z_loss=True,
return_token_accuracy=True, return_predicted_tokens=True)``: four outputs, the last int64 argmax indices (compared
exactly, never differentiated), int64 targets with ignored positions; against the same loss in PyTorch ops
(cross-entropy plus the z-loss ``lse_square_scale * logsumexp**2``, averaged over the positions not ignored), in
float32. The z-loss, accuracy and indices are for logging: Liger's backward, like the reference, takes the gradient of
the loss alone."""

import torch
from liger_kernel.ops import LigerCrossEntropyFunction

from harness.case import Case

VOCAB, IGNORE_INDEX, LSE_SQUARE_SCALE = 1000, -100, 1e-4
SHIPPED_ARGS = (None, IGNORE_INDEX, LSE_SQUARE_SCALE, 0.0, "mean", None, True, True, True)


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def cross_entropy(logits, target):
    keep = target != IGNORE_INDEX
    kept = keep.sum()
    lse = logits.float().logsumexp(-1)
    loss = torch.nn.functional.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX, reduction="sum")
    z_loss = (LSE_SQUARE_SCALE * lse.square() * keep).sum() / kept
    predicted = logits.argmax(-1)
    accuracy = ((predicted == target) & keep).sum() / kept
    return (
        (loss / kept + z_loss).to(logits.dtype),
        z_loss.detach().to(logits.dtype),
        accuracy.float(),
        torch.where(keep, predicted, -1),
    )


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = randn(rows, VOCAB, generator=gen, device=device, scale=2.0)
    target = torch.randint(0, VOCAB, (rows,), generator=gen)
    target[torch.rand(rows, generator=gen) < 0.2] = IGNORE_INDEX
    target[0] = 0  # one position kept at least
    return logits, target.to(device)


CASE = Case(
    id="liger_cross_entropy",
    shipped=LigerCrossEntropyFunction.apply,
    shipped_args=SHIPPED_ARGS,
    reference=cross_entropy,
    make_inputs=make_inputs,
    arg_names=("logits", "target"),
    outputs=4,
    sizes=(37, 5, 64),
)

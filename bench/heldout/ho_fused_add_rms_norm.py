"""Liger's fused residual add + RMSNorm: returns (normed, residual sum), bf16."""
import torch
from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

from harness.case import Case

HIDDEN = 512
EPS = 1e-6


def add_rms_norm(x, residual, weight):
    s = x + residual
    h = s.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)
    return weight * h.to(s.dtype), s


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, 11, HIDDEN, generator=gen).to(device=device, dtype=torch.bfloat16)
    r = torch.randn(batch, 11, HIDDEN, generator=gen).to(device=device, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(HIDDEN, generator=gen)).to(device=device, dtype=torch.bfloat16)
    return x, r, w


CASE = Case(
    id="ho_fused_add_rms_norm",
    shipped=LigerFusedAddRMSNormFunction.apply,
    shipped_args=(EPS, 0.0, "llama", False),
    reference=add_rms_norm,
    make_inputs=make_inputs,
    arg_names=("x", "residual", "weight"),
    sizes=(3, 1, 5),
    dtype=torch.bfloat16,
    outputs=2,
)

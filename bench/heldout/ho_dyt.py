"""Liger's DyT (dynamic tanh) as its nn.Module ships it: gamma * tanh(alpha * x) + beta."""
import torch
from liger_kernel.transformers.dyt import LigerDyT

from harness.case import Case

HIDDEN = 384


def dyt_module():
    return LigerDyT(HIDDEN, beta=True, init_alpha=0.5)


def dyt(x, alpha, gamma, beta):
    return gamma * torch.tanh(alpha * x) + beta


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, 13, HIDDEN, generator=gen).to(device),)


CASE = Case(
    id="ho_dyt",
    shipped_module=dyt_module,
    reference=dyt,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(3, 1, 6),
)

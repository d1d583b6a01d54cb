"""Liger's softmax over the last dim, an autograd.Function with Triton forward and backward."""
import torch
from liger_kernel.ops.softmax import LigerSoftmaxFunction

from harness.case import Case


def softmax(x):
    return torch.softmax(x, dim=-1)


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, 1000, generator=gen).to(device),)


CASE = Case(
    id="ho_softmax",
    shipped=LigerSoftmaxFunction.apply,
    reference=softmax,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(37, 5, 64),
)

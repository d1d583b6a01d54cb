"""Liger's sparsemax over the last dim (shipped with a dim argument)."""
import torch
from liger_kernel.ops.sparsemax import LigerSparsemaxFunction

from harness.case import Case


def sparsemax(x, dim=-1):
    z, _ = torch.sort(x, dim=dim, descending=True)
    k = torch.arange(1, x.shape[dim] + 1, device=x.device, dtype=x.dtype)
    cs = z.cumsum(dim)
    support = (1 + k * z) > cs
    kz = support.sum(dim=dim, keepdim=True)
    tau = (cs.gather(dim, kz - 1) - 1) / kz.to(x.dtype)
    return torch.clamp(x - tau, min=0)


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, 300, generator=gen).to(device),)


CASE = Case(
    id="ho_sparsemax",
    shipped=LigerSparsemaxFunction.apply,
    shipped_args=(-1,),
    reference=sparsemax,
    make_inputs=make_inputs,
    arg_names=("x",),
    sizes=(9, 1, 20),
)

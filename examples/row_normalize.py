"""Two kernels per op, and an op writing into its input with a backward kernel:

- ``row_normalize``: each row divided by its sum, as two kernels (a row-sum kernel, then a scale kernel that
  ``Case.kernels`` names): the launch gets ``kernels={"scale": ...}``, each wrapped as the style wraps its kernel
  (``wrap_triton`` inside ``triton_op``, so that ``torch.compile`` captures both); the decorator stacks apply to
  ``kernel`` only.
- ``scale_inplace``: ``x *= 2`` in place (``mutates``), with a Triton backward kernel: the launcher trains through
  its ``autograd.Function``; ``torch.library`` ops cannot register autograd for an op that writes into its
  inputs, so their training cells are errors saying so (inference is unaffected).
"""

import torch
import triton
import triton.language as tl

from harness.case import Case

COLUMNS = 300


@triton.jit
def row_sum_kernel(x_ptr, sums_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(sums_ptr + row, tl.sum(x, axis=0))


@triton.jit
def scale_rows_kernel(x_ptr, sums_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x / tl.load(sums_ptr + row), mask=mask)


def launch(kernel, x, kernels, **meta):
    rows, cols = x.shape
    sums, out = torch.empty(rows, dtype=x.dtype, device=x.device), torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    kernel[(rows,)](x, sums, cols, BLOCK_SIZE=block, **meta)
    kernels["scale"][(rows,)](x, sums, out, cols, BLOCK_SIZE=block)
    return out


def row_normalize(x):
    return x / x.sum(dim=-1, keepdim=True)


def positive_rows(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(rows, COLUMNS, generator=gen).add(0.5).to(device),)


@triton.jit
def scale_kernel(x_ptr, factor, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def launch_scale(kernel, x, **meta):
    kernel[(triton.cdiv(x.numel(), 256),)](x, 2.0, x.numel(), BLOCK_SIZE=256)


def launch_scale_backward(kernel, inputs, output, grad):
    grad_x = grad.clone()  # the backward kernel scales a copy of the grad in place
    kernel[(triton.cdiv(grad_x.numel(), 256),)](grad_x, 2.0, grad_x.numel(), BLOCK_SIZE=256)
    return (grad_x,)


def scale_inplace(x):
    x.mul_(2.0)


CASES = [
    Case(
        id="row_normalize",
        kernel=row_sum_kernel,
        kernels={"scale": scale_rows_kernel},
        launch=launch,
        reference=row_normalize,
        make_inputs=positive_rows,
        arg_names=("x",),
        sizes=(37, 5, 70),
        configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)],
        key=["n_cols"],
    ),
    Case(
        id="scale_inplace",
        kernel=scale_kernel,
        launch=launch_scale,
        reference=scale_inplace,
        backward=lambda inputs, output, grad: (2.0 * grad,),
        backward_kernel=scale_kernel,
        launch_backward=launch_scale_backward,
        mutates=("x",),
        make_inputs=positive_rows,
        arg_names=("x",),
        sizes=(37, 5, 70),
        configs=[triton.Config({}, num_warps=4)],
        key=["n_elements"],
        autotune_options={"restore_value": ["x_ptr"]},
    ),
]

"""softmax-triton_op_heuristics_autotune-opcheck: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: opcheck(op, ...): test_schema failed with wrap_triton only works on functions annotated with triton.jit or triton.autotune (scroll up for stack trace)
The same failure in 8 more cell(s) of this style and path: add-triton_op_heuristics_autotune-opcheck, sin-triton_op_heuristics_autotune-opcheck, silu-triton_op_heuristics_autotune-opcheck, matmul-triton_op_heuristics_autotune-opcheck, add_inplace-triton_op_heuristics_autotune-opcheck, rmsnorm-triton_op_heuristics_autotune-opcheck, layernorm-triton_op_heuristics_autotune-opcheck, sin_triton_backward-triton_op_heuristics_autotune-opcheck.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.softmax) ----

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * stride + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    if EVEN:
        tl.store(out_ptr + row * stride + cols, out)
    else:
        tl.store(out_ptr + row * stride + cols, out, mask=cols < n_cols)


def launch(kernel, x, **meta):
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_SIZE=triton.next_power_of_2(n_cols), **meta)
    return out


def backward(inputs, out, grad):
    return (out * (grad - (grad * out).sum(dim=-1, keepdim=True)),)


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, 781, generator=gen).to(device),)


reference = lambda x: torch.softmax(x, dim=-1)
CONFIGS = [triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)]
KEY = ["n_cols"]
HEURISTICS = {"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]}


# ---- the style: triton_op_heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY)(softmax_kernel))


@torch.library.triton_op("mylib::softmax", mutates_args=())
def softmax(x: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(kernel), x)


def setup_context(ctx, inputs, output):
    x, = inputs
    ctx.save_for_backward(x, output)


def softmax_gradients(ctx, grad):
    x, out = ctx.saved_tensors
    inputs, output = (x,), out
    return tuple(backward(inputs, output, grad))


softmax.register_autograd(softmax_gradients, setup_context=setup_context)


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.ops.mylib.softmax(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return reference(x)


# ---- the path: opcheck ----
DEVICE, SIZE, SEED = 'cuda', 67, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    inputs = tuple(v.detach().requires_grad_(v.is_floating_point() and i not in ()) if isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs))
    torch.library.opcheck(softmax, inputs)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: softmax-triton_op_heuristics_autotune-opcheck passes here")

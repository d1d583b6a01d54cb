"""add-triton_op_autotune_heuristics-opcheck: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: opcheck(op, ...): test_aot_dispatch_dynamic failed with BooleanAtom not allowed
in this context. (scroll up for stack trace)
The same failure in 7 more cell(s) of this style and path: sin-triton_op_autotune_heuristics-opcheck, silu-triton_op_autotune_heuristics-opcheck, softmax-triton_op_autotune_heuristics-opcheck, matmul-triton_op_autotune_heuristics-opcheck, rmsnorm-triton_op_autotune_heuristics-opcheck, layernorm-triton_op_autotune_heuristics-opcheck, sin_triton_backward-triton_op_autotune_heuristics-opcheck.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.add) ----

import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024  # every block size below divides it, so n % MAX_BLOCK == 0 means no tail


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)


def launch(kernel, x, y, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, out, n_elements, **meta)
    return out


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
KEY = ["n_elements"]
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}
backward = lambda inputs, out, grad: (grad, grad)


# ---- the style: triton_op_autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(add_kernel))


@torch.library.triton_op("mylib::add", mutates_args=())
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(kernel), x, y)


def setup_context(ctx, inputs, output):
    x, y = inputs
    ctx.save_for_backward(x, y, output)


def add_gradients(ctx, grad):
    x, y, out = ctx.saved_tensors
    inputs, output = (x, y,), out
    return tuple(backward(inputs, output, grad))


add.register_autograd(add_gradients, setup_context=setup_context)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.ops.mylib.add(x, y)


class Reference(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)


# ---- the path: opcheck ----
DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


def copied(inputs):  # fresh copies of the tensors for every call, their strides kept
    return tuple((v.detach().clone() if v.is_contiguous() or 0 in v.stride() else torch.empty_strided(
        v.shape, v.stride(), dtype=v.dtype, device=v.device).copy_(v)) if isinstance(v, torch.Tensor) else v
        for v in inputs)


def check(what, out, expected):  # every output against the reference's, on the CPU
    cpu = lambda v: tuple(map(cpu, v)) if isinstance(v, tuple | list) else v.detach().cpu() if torch.is_tensor(v) else v
    try:
        torch.testing.assert_close(cpu(out), cpu(expected), atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {' '.join(str(error).split())}") from None


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    inputs = make_inputs(SIZE, DEVICE, SEED)
    with torch.no_grad():
        expected = reference_model(*copied(inputs))
    with torch.no_grad():
        out = model(*copied(inputs))
    check("output", out, expected)
    inputs = tuple(v.detach().requires_grad_(v.is_floating_point()) if isinstance(v, torch.Tensor) else v for i, v in enumerate(inputs))
    torch.library.opcheck(add, inputs)  # the op against itself


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: add-triton_op_autotune_heuristics-opcheck passes here")

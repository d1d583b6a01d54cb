"""softmax-autotune-export_dynamic_nonstrict: a reproducer written by triton-torch-matrix.
The harness recorded: error at trace: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If
you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a custom kernel. To fix
this, …
The same failure in 2 more cell(s) of this style and path: rmsnorm-autotune-export_dynamic_nonstrict, layernorm-autotune-export_dynamic_nonstrict.
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


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, 781, generator=gen).to(device),)


reference = lambda x: torch.softmax(x, dim=-1)
CONFIGS = [triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)]
KEY = ["n_cols"]


# ---- the style: autotune ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(softmax_kernel)


def softmax(x):
    return launch(kernel, x, EVEN=False)


class Model(torch.nn.Module):
    def forward(self, x):
        return softmax(x)


class Reference(torch.nn.Module):
    def forward(self, x):
        return reference(x)


# ---- the path: export_dynamic_nonstrict ----
DEVICE, SIZE, SEED = 'cuda', 67, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


export = torch.export.export


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
    model.eval()
    size = torch.export.Dim("size", min=1, max=258)
    program = export(model, copied(inputs), dynamic_shapes={"x": {0: size}}, strict=False)
    runner = program.module()
    for size in [67, 13, 129]:
        at = inputs if size == SIZE else make_inputs(size, DEVICE, SEED)
        with torch.no_grad():
            expected = reference_model(*copied(at))
        for call in range(1, 3):
            with torch.no_grad():
                out = runner(*copied(at))
            check(f"output at size {size}" if call == 1 else f"output at size {size}, call {call}", out, expected)
    return runner


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: softmax-autotune-export_dynamic_nonstrict passes here")

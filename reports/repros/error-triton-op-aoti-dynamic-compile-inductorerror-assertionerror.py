"""add_inplace-triton_op-aoti_dynamic: a reproducer written by triton-torch-matrix.
The harness recorded: error at compile: AssertionError:
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor import aoti_compile_and_package, aoti_load_package
import os
import tempfile


# ---- the case's own code (cases.add_inplace) ----

import torch
import triton
import triton.language as tl


@triton.jit
def add_inplace_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(x_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def launch(kernel, x, y, **meta):
    n_elements = x.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, n_elements, **meta)


def reference(x, y):
    x.add_(y)


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(2))


# ---- the style: triton_op ----
@torch.library.triton_op("mylib::add_inplace", mutates_args=('x',))
def add_inplace(x: torch.Tensor, y: torch.Tensor) -> None:
    launch(torch.library.wrap_triton(add_inplace_kernel), x, y, BLOCK_SIZE=256, EVEN=False)


class Model(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        torch.ops.mylib.add_inplace(x, y)
        return x


class Reference(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        reference(x, y)
        return x


# ---- the path: aoti_dynamic ----
DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the inputs the cell ran
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
    size = torch.export.Dim("size", min=1, max=10006)
    program = export(model, copied(inputs), dynamic_shapes={"x": {0: size}, "y": {0: size}}, strict=True)
    package = aoti_compile_and_package(program, package_path=os.path.join(tempfile.mkdtemp(), "model.pt2"))
    runner = aoti_load_package(package)
    for size in [3001, 1000, 5003]:
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
    print("no failure: add_inplace-triton_op-aoti_dynamic passes here")

"""An op as a library ships it (``Case.shipped``): a small "library" ships ``x * y + z`` as one Triton kernel, four
ways, and each way is a case whose op runs unchanged as the ``as_shipped`` style (the records say how it is wrapped,
``wrapped_as``, which Triton kernels it launched, ``kernels_launched``, and on graph paths which the graph captured,
``kernels_captured``):

- ``MulAddFunction.apply``: a ``torch.autograd.Function`` launching the kernel (Liger-Kernel's way). That case also
  gives the kernel and its launch, so the re-wrapped styles (``raw_jit``, ``triton_op``, ...) run beside it;
- ``mul_add``: a plain function calling it;
- ``torch.ops.examples.mul_add``: a ``torch.library.triton_op`` with a CPU kernel and autograd (the ``opcheck`` path
  checks it);
- ``MulAdd``: an ``nn.Module`` (``Case.shipped_module``, a factory called with no arguments).

No ``backward`` and no ``flops`` are given: the re-wrapped styles train through autograd of the reference.
"""

import torch
import triton
import triton.language as tl

from harness.case import Case


@triton.jit
def mul_add_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x, y = tl.load(x_ptr + offsets, mask=mask), tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * y + tl.load(z_ptr + offsets, mask=mask), mask=mask)


def launch(kernel, x, y, z, **meta):
    out = torch.empty_like(x)
    n_elements = out.numel()
    kernel[lambda m: (triton.cdiv(n_elements, m["BLOCK_SIZE"]),)](x, y, z, out, n_elements, **meta)
    return out


# The library: what it ships.


class MulAddFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y)
        return launch(mul_add_kernel, x, y, z, BLOCK_SIZE=256)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, grad * x, grad


def mul_add(x, y, z):
    return MulAddFunction.apply(x, y, z)


@torch.library.triton_op("examples::mul_add", mutates_args=())
def mul_add_op(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    return launch(torch.library.wrap_triton(mul_add_kernel), x, y, z, BLOCK_SIZE=256)


@mul_add_op.register_kernel("cpu")
def _(x, y, z):
    return x * y + z


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:2])


def _backward(ctx, grad):
    x, y = ctx.saved_tensors
    return grad * y, grad * x, grad


mul_add_op.register_autograd(_backward, setup_context=_setup)


class MulAdd(torch.nn.Module):
    def forward(self, x, y, z):
        return MulAddFunction.apply(x, y, z)


# The cases.


def reference(x, y, z):
    return x * y + z


def make_inputs(size, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(size, generator=gen).to(device) for _ in range(3))


def shipped_case(name, **how):
    return Case(id=name, reference=reference, make_inputs=make_inputs, arg_names=("x", "y", "z"), sizes=(301, 7), **how)


CASES = [
    shipped_case(
        "mul_add_autograd",
        shipped=MulAddFunction.apply,
        kernel=mul_add_kernel,
        launch=launch,
        meta={"BLOCK_SIZE": 256},
        configs=[triton.Config({"BLOCK_SIZE": 256}), triton.Config({"BLOCK_SIZE": 1024})],
        key=["n_elements"],
    ),
    shipped_case("mul_add_function", shipped=mul_add),
    shipped_case("mul_add_library_op", shipped=torch.ops.examples.mul_add),
    shipped_case("mul_add_module", shipped_module=MulAdd),
]

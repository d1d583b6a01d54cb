"""add_inplace-triton_op_heuristics_autotune-train_eager: a reproducer written by triton-torch-matrix.
The harness recorded: error at build: Cannot register autograd formula for non-functional operator
<CustomOpDef(mylib::add_inplace)> with schema mylib::add_inplace(Tensor(a0!) x, Tensor y) -> (). Please create a
functional operator and …
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.add_inplace) ----

import torch
import triton
import triton.language as tl

MAX_BLOCK = 1024


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


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
KEY = ["n_elements"]
AUTOTUNE_OPTIONS = {"restore_value": ["x_ptr"]}
HEURISTICS = {"EVEN": lambda args: args["n_elements"] % MAX_BLOCK == 0}
backward = lambda inputs, out, grad: (grad, grad)


# ---- the style: triton_op_heuristics_autotune ----
kernel = triton.heuristics(HEURISTICS)(triton.autotune(configs=CONFIGS, key=KEY, **AUTOTUNE_OPTIONS)(add_inplace_kernel))


@torch.library.triton_op("mylib::add_inplace", mutates_args=('x',))
def add_inplace(x: torch.Tensor, y: torch.Tensor) -> None:
    launch(torch.library.wrap_triton(kernel), x, y)


def setup_context(ctx, inputs, output):
    x, y = inputs
    ctx.save_for_backward(None, y, x)


def add_inplace_gradients(ctx, grad):
    x, y, out = ctx.saved_tensors
    inputs, output = (x, y,), out
    return tuple(backward(inputs, output, grad))


add_inplace.register_autograd(add_inplace_gradients, setup_context=setup_context)


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


# ---- the path: train_eager ----
DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


def check(what, out, expected):  # every output against the reference's, on the CPU
    cpu = lambda v: tuple(map(cpu, v)) if isinstance(v, tuple | list) else v.detach().cpu() if torch.is_tensor(v) else v
    try:
        torch.testing.assert_close(cpu(out), cpu(expected), atol=ATOL, rtol=RTOL)
    except AssertionError as error:
        raise AssertionError(f"wrong numbers: {what}: {' '.join(str(error).split())}") from None


def noncontiguous(grad):  # the grad's values in a non-contiguous view (one element: as it is)
    if grad.numel() <= 1:
        return grad
    wide = grad.new_zeros(*grad.shape[:-1], 2 * grad.shape[-1])
    wide[..., ::2] = grad
    return wide[..., ::2]


def forward_backward(model, strided):  # the same seeded output grads for the op and the reference
    inputs = tuple(v.detach().requires_grad_(v.is_floating_point() and i not in ()) if torch.is_tensor(v) else v
                   for i, v in enumerate(make_inputs(SIZE, DEVICE, SEED)))
    raw = model(*inputs)
    outs = raw if isinstance(raw, tuple | list) else (raw,)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(o.shape, generator=gen).to(device=o.device, dtype=o.dtype) for o in outs]
    grads = [noncontiguous(g) for g in grads] if strided else grads
    wanted = [i for i, o in enumerate(outs) if o.requires_grad] or range(len(outs))
    torch.autograd.backward([outs[i] for i in wanted], [grads[i] for i in wanted])
    named = [(f"input {i}", v) for i, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.requires_grad]
    named += [(n.removeprefix("_orig_mod."), p) for n, p in model.named_parameters()]
    return (tuple(o.detach() for o in outs) if isinstance(raw, tuple | list) else raw.detach()), named


def main():
    torch.manual_seed(0)
    model = Model().to(DEVICE)
    reference_model = Reference().to(DEVICE)
    for layout, strided in (("", False), (" (non-contiguous output grad)", True)):
        out, grads = forward_backward(model, strided)
        expected, expected_grads = forward_backward(reference_model, strided)
        check("output", out, expected)
        for (name, value), (_, reference_value) in zip(grads, expected_grads):  # a missing one: None mismatch
            check(f"gradient of {name}{layout}", value.grad, reference_value.grad)
    return model


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: add_inplace-triton_op_heuristics_autotune-train_eager passes here")

"""liger_geglu-as_shipped-train_compile: a reproducer written by triton-torch-matrix.
The harness recorded: error at compile: backend='inductor' raised:
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


# ---- the case's own code (cases.liger_geglu) ----

import torch

from liger_kernel.ops import LigerGELUMulFunction

HIDDEN = 256  # the normalized and activated width


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gelu_mul(gate, up):
    return torch.nn.functional.gelu(gate, approximate="tanh") * up


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    return tuple(randn(batch, 17, 4 * HIDDEN, generator=gen, device=device, dtype=torch.bfloat16) for _ in range(2))


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, gate, up):
        return LigerGELUMulFunction.apply(gate, up)


class Reference(torch.nn.Module):
    def forward(self, gate, up):
        return gelu_mul(gate, up)


# ---- the path: train_compile ----
DEVICE, SIZE, SEED = 'cuda', 3, 0  # the inputs the cell ran
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16


graphs, backward_graphs = [], []


def inductor(**patches):  # torch.compile's Inductor, keeping the graphs it compiles to look for the op in
    def backend(gm, example_inputs):
        graphs.append(gm)
        with torch._functorch.config.patch(enable_autograd_cache=False):  # each graph compiled, none from a cache
            return compile_fx(gm, example_inputs, config_patches=patches or None)
    return backend


def held(graphs):  # whether a compiled graph calls a Triton kernel, and no graph break left one outside
    nodes = [n for gm in graphs for m in gm.modules() if isinstance(m, torch.fx.GraphModule) for n in m.graph.nodes]
    words = ("triton_kernel_wrapper", "auto_functionalized")
    return not sum(torch._dynamo.utils.counters["graph_break"].values()) and any(
        n.op == "call_function" and any(w in getattr(n.target, "__name__", "") for w in words) for n in nodes)


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
    model = torch.compile(model, backend=inductor())
    for layout, strided in (("", False), (" (non-contiguous output grad)", True)):
        out, grads = forward_backward(model, strided)
        expected, expected_grads = forward_backward(reference_model, strided)
        check("output", out, expected)
        for (name, value), (_, reference_value) in zip(grads, expected_grads):  # a missing one: None mismatch
            check(f"gradient of {name}{layout}", value.grad, reference_value.grad)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if not held(graphs):
        raise AssertionError(f"graph break: the kernel ran outside the compiled graph ({breaks} graph break(s))")
    return model


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_geglu-as_shipped-train_compile passes here")

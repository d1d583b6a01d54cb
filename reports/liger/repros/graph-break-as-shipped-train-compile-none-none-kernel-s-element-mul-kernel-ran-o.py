"""liger_cross_entropy-as_shipped-train_compile: a reproducer written by triton-torch-matrix.
The harness recorded: graph_break: kernel(s) element_mul_kernel ran outside the compiled graph (6 graph break(s):
Unsupported Tensor.item() call with capture_scalar_outputs=False Explanation: Dynamo does not support tracing …
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


# ---- the case's own code (cases.liger_cross_entropy) ----

import torch

from liger_kernel.ops import LigerCrossEntropyFunction

VOCAB, IGNORE_INDEX, LSE_SQUARE_SCALE = 1000, -100, 1e-4
SHIPPED_ARGS = (None, IGNORE_INDEX, LSE_SQUARE_SCALE, 0.0, "mean", None, True, True, True)


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def cross_entropy(logits, target):
    keep = target != IGNORE_INDEX
    kept = keep.sum()
    lse = logits.float().logsumexp(-1)
    loss = torch.nn.functional.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX, reduction="sum")
    z_loss = (LSE_SQUARE_SCALE * lse.square() * keep).sum() / kept
    predicted = logits.argmax(-1)
    accuracy = ((predicted == target) & keep).sum() / kept
    return (
        (loss / kept + z_loss).to(logits.dtype),
        z_loss.detach().to(logits.dtype),
        accuracy.float(),
        torch.where(keep, predicted, -1),
    )


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = randn(rows, VOCAB, generator=gen, device=device, scale=2.0)
    target = torch.randint(0, VOCAB, (rows,), generator=gen)
    target[torch.rand(rows, generator=gen) < 0.2] = IGNORE_INDEX
    target[0] = 0  # one position kept at least
    return logits, target.to(device)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, logits, target):
        return LigerCrossEntropyFunction.apply(logits, target, *SHIPPED_ARGS)


class Reference(torch.nn.Module):
    def forward(self, logits, target):
        return cross_entropy(logits, target)


# ---- the path: train_compile ----
DEVICE, SIZE, SEED = 'cuda', 1, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


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
    print("no failure: liger_cross_entropy-as_shipped-train_compile passes here")

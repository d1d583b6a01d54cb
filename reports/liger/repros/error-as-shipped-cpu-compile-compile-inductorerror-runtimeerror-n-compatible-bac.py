"""liger_rms_norm_gemma-as_shipped-cpu_compile: a reproducer written by triton-torch-matrix.
The harness recorded: error at compile: RuntimeError: 0 compatible backends for target (cpu) ([]). There should only
be one.
The same failure in 7 more cell(s) of this style and path: liger_rms_norm-as_shipped-cpu_compile, liger_swiglu-as_shipped-cpu_compile, liger_geglu-as_shipped-cpu_compile, liger_layer_norm-as_shipped-cpu_compile, liger_rope-as_shipped-cpu_compile, liger_cross_entropy-as_shipped-cpu_compile, liger_kl_div-as_shipped-cpu_compile.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


# ---- the case's own code (cases.liger_rms_norm_gemma) ----

import torch

from liger_kernel.ops import LigerRMSNormFunction

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def gemma_rms_norm(x, weight):
    """transformers' GemmaRMSNorm.forward."""
    hidden = x.float()
    output = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return (output * (1.0 + weight.float())).type_as(x)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


SHIPPED_ARGS = (EPS, 1.0, "gemma", False)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, x, weight):
        return LigerRMSNormFunction.apply(x, weight, *SHIPPED_ARGS)


class Reference(torch.nn.Module):
    def forward(self, x, weight):
        return gemma_rms_norm(x, weight)


# ---- the path: cpu_compile ----
DEVICE, SIZE, SEED = 'cpu', 3, 0  # the inputs the cell ran
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
    compiled = torch.compile(model, backend=inductor())
    for call in range(1, 3):
        with torch.no_grad():
            out = compiled(*copied(inputs))
        check("output" if call == 1 else f"output, call {call}", out, expected)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if not held(graphs):
        raise AssertionError(f"graph break: the kernel ran outside the compiled graph ({breaks} graph break(s))")
    return compiled


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_rms_norm_gemma-as_shipped-cpu_compile passes here")

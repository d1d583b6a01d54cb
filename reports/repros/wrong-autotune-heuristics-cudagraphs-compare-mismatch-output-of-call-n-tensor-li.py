"""add_inplace-autotune_heuristics-cudagraphs: a reproducer written by triton-torch-matrix.
The harness recorded: wrong at compare: output of call 1: Tensor-likes are not close!; Mismatched elements: 3001 /
3001 (100.0%); Greatest absolute difference: 749.345458984375 at index (10,) (up to 1e-05 allowed); Greatest
relative …
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


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
CONFIG_HEURISTICS = {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY, **AUTOTUNE_OPTIONS)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(add_inplace_kernel))


def add_inplace(x, y):
    return launch(kernel, x, y)


class Model(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        add_inplace(x, y)
        return x


class Reference(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        reference(x, y)
        return x


# ---- the path: cudagraphs ----
DEVICE, SIZE, SEED = 'cuda', 3001, 0  # the inputs the cell ran
ATOL, RTOL = 1e-05, 1e-05  # the tolerance for float32


graphs, backward_graphs = [], []


def inductor(**patches):  # torch.compile's Inductor, keeping the graphs it compiles to look for the op in
    def backend(gm, example_inputs):
        graphs.append(gm)
        with torch._functorch.config.patch(enable_autograd_cache=False):  # each graph compiled, none from a cache
            return compile_fx(gm, example_inputs, config_patches=patches or None)
    return backend


def held(graphs):  # whether a compiled graph calls the op, or a Triton kernel
    nodes = [n for gm in graphs for m in gm.modules() if isinstance(m, torch.fx.GraphModule) for n in m.graph.nodes]
    words = ("triton_kernel_wrapper", "auto_functionalized")
    return any(n.op == "call_function" and (any(w in getattr(n.target, "__name__", "") for w in words)
               or f"{n.target}.".startswith(())) for n in nodes)


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
    compiled = torch.compile(model, backend=inductor(**torch._inductor.list_mode_options("reduce-overhead")))
    for seed in range(3):  # fresh inputs each call; the next replay overwrites the output
        inputs = make_inputs(SIZE, DEVICE, seed)
        with torch.no_grad():
            out = compiled(*copied(inputs))
            out = tuple(o.clone() for o in out) if isinstance(out, tuple | list) else out.clone()
            expected = reference_model(*copied(inputs))
        check(f"output of call {seed + 1}", out, expected)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if not held(graphs):
        raise AssertionError(f"graph break: the kernel ran outside the compiled graph ({breaks} graph break(s))")
    return compiled


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: add_inplace-autotune_heuristics-cudagraphs passes here")

"""rmsnorm-autotune_heuristics-dynamic: a reproducer written by triton-torch-matrix.
The harness recorded: graph_break: the kernel ran outside the compiled graph (24 graph break(s): Attempted to call
function marked as skipped Explanation: Dynamo does not know how to trace the builtin …
The same failure in 1 more cell(s) of this style and path: layernorm-autotune_heuristics-dynamic.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


# ---- the case's own code (cases.rmsnorm) ----

import torch
import triton
import triton.language as tl

N_COLS = 1000


@triton.jit
def rmsnorm_kernel(
    x_ptr, x_row_stride, w_ptr, y_ptr, y_row_stride, rstd_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr
):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + row * x_row_stride + cols).to(tl.float32)
        w = tl.load(w_ptr + cols).to(tl.float32)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    y = (x * rstd * w).to(y_ptr.dtype.element_ty)
    if EVEN:
        tl.store(y_ptr + row * y_row_stride + cols, y)
    else:
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=cols < n_cols)


def launch(kernel, x, weight, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(n_cols)
    kernel[(n_rows,)](x, x.stride(0), weight, y, y.stride(0), rstd, n_cols, eps, BLOCK_SIZE=block, **meta)
    return y, rstd


def reference(x, weight, eps):
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1) + eps)
    return x * rstd[:, None] * weight, rstd


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, N_COLS, generator=gen)
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x.to(device), weight.to(device), 1e-6


CONFIGS = [triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)]
KEY = ["n_cols"]
HEURISTICS = {"EVEN": lambda args: args["n_cols"] == args["BLOCK_SIZE"]}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics(HEURISTICS)(rmsnorm_kernel))


def rmsnorm(x, weight, eps):
    return launch(kernel, x, weight, eps)


class Model(torch.nn.Module):
    def forward(self, x, weight, eps):
        return rmsnorm(x, weight, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, eps):
        return reference(x, weight, eps)


# ---- the path: dynamic ----
DEVICE, SIZE, SEED = 'cuda', 67, 0  # the inputs the cell ran
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
    compiled = torch.compile(model, backend=inductor(), dynamic=True)
    for size in [67, 13, 129]:
        inputs = make_inputs(size, DEVICE, SEED)
        with torch.no_grad():
            expected = reference_model(*copied(inputs))
        for call in range(1, 3):
            with torch.no_grad():
                out = compiled(*copied(inputs))
            check(f"output at size {size}" if call == 1 else f"output at size {size}, call {call}", out, expected)
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    if not held(graphs):
        raise AssertionError(f"graph break: the kernel ran outside the compiled graph ({breaks} graph break(s))")
    return compiled


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: rmsnorm-autotune_heuristics-dynamic passes here")

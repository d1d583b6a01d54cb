"""layernorm-autotune_heuristics-dynamic: a reproducer written by triton-torch-matrix.
The harness recorded: graph_break: the kernel ran outside the compiled graph (26 graph break(s): Attempted to call
function marked as skipped Explanation: Dynamo does not know how to trace the builtin …
The same failure in 1 more cell(s) of this style and path: rmsnorm-autotune_heuristics-dynamic.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


# ---- the case's own code (cases.layernorm) ----

import torch
import triton
import triton.language as tl

N_COLS, ROW_STRIDE = 768, 1024
MAX_BLOCK = 1024  # every block size below divides it


@triton.jit
def layernorm_kernel(
    x_ptr,
    y_ptr,
    w_ptr,
    b_ptr,
    mean_ptr,
    rstd_ptr,
    x_row_stride,
    y_row_stride,
    N,
    eps,
    HAS_BIAS: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_ptr += row * x_row_stride
    y_ptr += row * y_row_stride
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            total += tl.load(x_ptr + cols).to(tl.float32)
        else:
            total += tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        if EVEN:
            centered = tl.load(x_ptr + cols).to(tl.float32) - mean
        else:
            x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
            centered = tl.where(cols < N, x - mean, 0.0)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for offset in range(0, N, BLOCK_SIZE):
        cols = offset + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w
        if HAS_BIAS:
            y += tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(kernel, x, weight, bias, eps, **meta):
    n_rows, n_cols = x.shape
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    has_bias = bias is not None
    kernel[(n_rows,)](
        x,
        y,
        weight,
        bias if has_bias else weight,  # never read without a bias: HAS_BIAS is false
        mean,
        rstd,
        x.stride(0),
        y.stride(0),
        n_cols,
        eps,
        HAS_BIAS=has_bias,
        **meta,
    )
    return y, mean, rstd


def reference(x, weight, bias, eps):
    mean = x.mean(dim=-1)
    centered = x - mean[:, None]
    rstd = torch.rsqrt(centered.pow(2).mean(dim=-1) + eps)
    y = centered * rstd[:, None] * weight
    return (y if bias is None else y + bias), mean, rstd


def make_inputs(rows, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, ROW_STRIDE, generator=gen).to(device)[:, :N_COLS]  # a view: rows ROW_STRIDE apart
    weight = 1 + 0.1 * torch.randn(N_COLS, generator=gen)
    return x, weight.to(device), None, 1e-5


CONFIGS = [triton.Config({"BLOCK_SIZE": 256}, num_warps=4), triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
KEY = ["N"]
HEURISTICS = {"EVEN": lambda args: args["N"] % MAX_BLOCK == 0}
CONFIG_HEURISTICS = {"EVEN": lambda args: args["N"] % args["BLOCK_SIZE"] == 0}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(layernorm_kernel))


def layernorm(x, weight, bias, eps):
    return launch(kernel, x, weight, bias, eps)


class Model(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return layernorm(x, weight, bias, eps)


class Reference(torch.nn.Module):
    def forward(self, x, weight, bias, eps):
        return reference(x, weight, bias, eps)


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
    print("no failure: layernorm-autotune_heuristics-dynamic passes here")

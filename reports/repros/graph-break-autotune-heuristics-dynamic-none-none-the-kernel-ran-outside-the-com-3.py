"""matmul-autotune_heuristics-dynamic: a reproducer written by triton-torch-matrix.
The harness recorded: graph_break: the kernel ran outside the compiled graph (38 graph break(s): Attempted to call
function marked as skipped Explanation: Dynamo does not know how to trace the builtin …
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


from torch._inductor.compile_fx import compile_fx


# ---- the case's own code (cases.matmul) ----

import torch
import triton
import triton.language as tl

MAX_BLOCK_K = 64  # every BLOCK_K below divides it


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        ks = k * BLOCK_K + rk
        a_ptrs = a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak
        b_ptrs = b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn
        if EVEN_K:
            a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        else:
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptrs, mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(kernel, a, b, **meta):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda m: (triton.cdiv(M, m["BLOCK_M"]), triton.cdiv(N, m["BLOCK_N"]))  # noqa: E731
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **meta)
    return c


def make_inputs(m, device, seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, 203, generator=gen).to(device=device, dtype=torch.float16)
    b = torch.randn(203, 131, generator=gen).to(device=device, dtype=torch.float16)
    return a, b


CONFIGS = ([
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4, num_stages=3),
    ])
KEY = ["M", "N", "K"]
HEURISTICS = {"EVEN_K": lambda args: args["K"] % MAX_BLOCK_K == 0}
CONFIG_HEURISTICS = {"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0}


# ---- the style: autotune_heuristics ----
kernel = triton.autotune(configs=CONFIGS, key=KEY)(triton.heuristics({**HEURISTICS, **CONFIG_HEURISTICS})(matmul_kernel))


def matmul(a, b):
    return launch(kernel, a, b)


class Model(torch.nn.Module):
    def forward(self, a, b):
        return matmul(a, b)


class Reference(torch.nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


# ---- the path: dynamic ----
DEVICE, SIZE, SEED = 'cuda', 157, 0  # the inputs the cell ran
ATOL, RTOL = 0.001, 0.004  # the tolerance for float16


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
    for size in [157, 64, 300]:
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
    print("no failure: matmul-autotune_heuristics-dynamic passes here")

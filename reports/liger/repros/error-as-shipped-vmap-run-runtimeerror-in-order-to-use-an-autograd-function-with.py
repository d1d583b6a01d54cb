"""liger_rms_norm-as_shipped-vmap: a reproducer written by triton-torch-matrix.
The harness recorded: error at run: In order to use an autograd.Function with functorch transforms (vmap, grad, jvp,
jacrev, ...), it must override the setup_context staticmethod. For more details, please see …
The same failure in 7 more cell(s) of this style and path: liger_rms_norm_gemma-as_shipped-vmap, liger_swiglu-as_shipped-vmap, liger_geglu-as_shipped-vmap, liger_layer_norm-as_shipped-vmap, liger_rope-as_shipped-vmap, liger_cross_entropy-as_shipped-vmap, liger_kl_div-as_shipped-vmap.
Measured on NVIDIA H200, torch 2.11.0+cu130, triton 3.6.0; needs no harness.
Run it: it raises the failure while it is there (exit 1), and prints "no failure" once it is fixed (exit 0)."""


# ---- the case's own code (cases.liger_rms_norm) ----

import torch

from liger_kernel.ops import LigerRMSNormFunction

HIDDEN = 256  # the normalized and activated width
EPS = 1e-6


def randn(*shape, generator, device, dtype=torch.float32, scale=1.0):
    """Seeded normal values, drawn in float32 on CPU, then moved (the same numbers on every device)."""
    return (scale * torch.randn(*shape, generator=generator)).to(device=device, dtype=dtype)


def llama_rms_norm(x, weight):
    """transformers' LlamaRMSNorm.forward."""
    dtype = x.dtype
    hidden = x.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    return weight * hidden.to(dtype)


def make_inputs(batch, device, seed):
    gen = torch.Generator().manual_seed(seed)
    x = randn(batch, 17, HIDDEN, generator=gen, device=device, dtype=torch.bfloat16)
    weight = 1 + randn(HIDDEN, generator=gen, device=device, dtype=torch.bfloat16, scale=0.1)
    return x, weight


SHIPPED_ARGS = (EPS, 0.0, "llama", True)


# ---- the style: as_shipped ----


class Model(torch.nn.Module):
    def forward(self, x, weight):
        return LigerRMSNormFunction.apply(x, weight, *SHIPPED_ARGS)


class Reference(torch.nn.Module):
    def forward(self, x, weight):
        return llama_rms_norm(x, weight)


# ---- the path: vmap ----
DEVICE, SIZE, SEED = 'cuda', 3, 0  # the inputs the cell ran
ATOL, RTOL = 0.01, 0.016  # the tolerance for bfloat16


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
    items = [inputs] + [tuple(b if isinstance(b, torch.Tensor) else a for a, b in zip(inputs, make_inputs(SIZE, DEVICE, SEED + k))) for k in range(1, 3)]
    def stacked(v):  # along a new dim 0, each item keeping its dim order in memory (a transposed one stays so)
        order = sorted(range(v[0].dim()), key=lambda d: -v[0].stride(d))
        batch = torch.stack([t.permute(order) for t in v])
        return batch.permute(0, *(order.index(d) + 1 for d in range(v[0].dim())))
    batched = tuple(stacked(v) if isinstance(v[0], torch.Tensor) else v[0] for v in zip(*items))
    in_dims = tuple(0 if isinstance(v, torch.Tensor) else None for v in batched)
    with torch.no_grad():
        out = torch.vmap(model, in_dims=in_dims)(*batched)
    torch.cuda.synchronize() if DEVICE == "cuda" else None  # a fault of the kernel surfaces here
    for one in out if isinstance(out, tuple | list) else (out,):
        if not isinstance(one, torch.Tensor) or one.shape[:1] != (3,):
            got = f"shape {tuple(one.shape)}" if isinstance(one, torch.Tensor) else type(one).__name__
            raise AssertionError(f"wrong numbers: output: expected 3 items along dim 0, got {got}")
    for k, item in enumerate(items):
        with torch.no_grad():
            expected = reference_model(*copied(item))
        check(f"output of item {k}", tuple(o[k] for o in out) if isinstance(out, tuple | list) else out[k], expected)


if __name__ == "__main__":
    main()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None  # a GPU fault left behind surfaces
    print("no failure: liger_rms_norm-as_shipped-vmap passes here")
